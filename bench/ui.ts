/**
 * `npm run bench:ui`: the IDE's figures in Chromium against a real Whetstone started as `npm start`
 * starts it (the embedded PostgreSQL, the local worker, the production build), one JSON object per
 * figure and nothing else on stdout (the server's output goes to stderr only if it fails).
 * `BENCH_ONLY=live` measures the live figures alone (the last three below).
 *
 * - `editor_ready_ms`: a navigation to the bandit environment's editor until Monaco has the focus
 *   and shows the file (it accepts input), warm cache: median of the runs after a first visit.
 * - `diagnostic_ms`: a keystroke that makes a type error (`1` → `1n` where a number is declared)
 *   until the editor draws its red squiggle: from the key's `keydown` in the page to the frame that
 *   shows it; median.
 * - `save_to_dry_run_ms`: Ctrl-S on a changed bandit environment until the new version's dry-run
 *   statistics show; median.
 * - `playground_first_token_ms`: on a fresh sampler checkpoint (a one-step gomoku run trained
 *   first), the click on "Open in playground" until the first token of a completion is drawn,
 *   Generate pressed the frame it is enabled (the session placed on the idle local worker and loaded).
 * - `playground_tokens_per_s`: tokens drawn a second in the page, against the worker's own decode
 *   rate for the same requests (`worker_tokens_per_s`, from each sample's timing) and their ratio.
 * - `replay_step_ms`: on the longest of a few random-against-random gomoku games (played through
 *   the play console's autoplay, kept as matches), → from the start until the frame whose board
 *   shows the next move; median over the moves (the issue asks for an 81-move game: a full board).
 * - `series_1m_first_render_ms`: a run of 1,000,000 `reward/mean` points (written straight into
 *   the server's embedded database, its rollups rebuilt as ingest would have kept them): from the
 *   navigation to its page until the reward chart has drawn its line; median of 3 navigations.
 * - `zoom_rerender_ms`: on that page, a zoom to 500 steps (the zoom fields, the keyboard's brush)
 *   from the click until the chart shows the range re-queried at full fidelity; median of 5 ranges.
 * - `live_point_to_pixel_p95_ms`: a running run fed 50 `reward/mean` points a second (the bench is
 *   its worker, over the worker HTTP API): from each point's send until the frame in which the
 *   page's reward chart shows its step; p95. `fanout_p95_ms` beside it: from the send until a
 *   socket.io client subscribed to the run (the owner's session) receives it.
 * - `long_tasks_during_live_s`: main-thread tasks over 50 ms per second on that page while 1,000
 *   points a second stream in (50-point batches every 50 ms), for 5 seconds.
 * - `first_load_js_kb`: the JavaScript of the first page a signed-in user sees (the team's page),
 *   cold cache, gzip-compressed as it goes over the wire; Monaco is in none of it (it loads only
 *   on editor pages, which the figure's `monaco_chunks` checks).
 *
 * Every figure carries the machine's 1-minute load when it was taken: these 2-core machines are
 * shared, and the figures move with the load.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium, type Page } from '@playwright/test';
import { io as connect } from 'socket.io-client';
import { createDb, type Db } from '../server/db/client';
import { activeAttempt, postBatch } from '../server/test-support/test-attempts';
import { rebuildRollups } from '../server/streams/rollup';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.env.BENCH_RUNS ?? 5);

function emit(name: string, value: number, unit: string, details: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ name, value: Number(value.toPrecision(4)), unit, load1: Number(os.loadavg()[0].toFixed(2)), ...details })}\n`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** `server/main.ts` as `npm start` runs it, on a free port, in a home of its own. */
async function startServer() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-bench-ui-'));
  fs.chmodSync(home, 0o755); // as root, the embedded PostgreSQL runs as "postgres", which must enter it
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: repoRoot,
    env: { ...process.env, PORT: '0', WHETSTONE_HOME: home, DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const ready = await new Promise<{ url: string; signInLink: string }>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
      const signInLink = /(http:\/\/\S+\/api\/auth\/local-sign-in\?token=\S+)/.exec(output)?.[1];
      if (url && signInLink && /web app ready/.test(output)) resolve({ url, signInLink });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`Whetstone exited (${code}):\n${output}`)));
  });
  return {
    ...ready,
    home,
    output: () => output,
    stop: async () => {
      const exited = new Promise((r) => child.on('exit', r));
      child.kill('SIGINT');
      await exited;
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}

const MILLION = 1_000_000;

/**
 * A finished TRAIN run of the team with `MILLION` points of `reward/mean`, written straight into
 * the server's embedded database, with the rollups ingest keeps rebuilt for them.
 */
async function millionPointRun(home: string, teamId: string): Promise<string> {
  const db = embeddedDb(home);
  try {
    const owner = await db.membership.findFirstOrThrow({ where: { teamId, role: 'OWNER' } });
    const startedAt = new Date(Date.now() - 3_600_000);
    const job = await db.job.create({ data: { teamId, ownerId: owner.userId, kind: 'TRAIN', state: 'SUCCEEDED', config: { training: { steps: MILLION } }, startedAt, finishedAt: new Date() } });
    await db.$executeRaw`
      INSERT INTO "MetricPoint" ("jobId", key, step, value, attempt)
      SELECT ${job.id}, 'reward/mean', s, 0.5 + 0.4 * sin(s / 5000.0) + random() * 0.1, 1 FROM generate_series(1, ${MILLION}::int) AS s`;
    await rebuildRollups(db, job.id);
    await db.$executeRawUnsafe('ANALYZE "MetricPoint"');
    return job.id;
  } finally {
    await db.$disconnect();
  }
}

/** The server's embedded database (its URL from the home's credentials and the postmaster's port). */
function embeddedDb(home: string): Db {
  const { password } = JSON.parse(fs.readFileSync(path.join(home, 'postgres-credentials.json'), 'utf8')) as { password: string };
  const port = fs.readFileSync(path.join(home, 'pg', 'postmaster.pid'), 'utf8').split('\n')[3].trim();
  return createDb(`postgresql://whetstone:${encodeURIComponent(password)}@127.0.0.1:${port}/whetstone`, 2);
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

/**
 * A running run whose worker is the bench (an attempt of a worker registered straight in the
 * database, its batches posted over the worker HTTP API as a daemon posts them), watched on its
 * page: latency from a point's send to the frame that draws it at 50 points a second, the
 * socket.io fan-out of the same points, and the page's long tasks at 1,000 points a second.
 */
async function liveFigures(page: Page, server: { url: string; home: string }, teamUrl: string, teamId: string): Promise<void> {
  const db = embeddedDb(server.home);
  let seq = 0;
  try {
    const owner = await db.membership.findFirstOrThrow({ where: { teamId, role: 'OWNER' } });
    const job = await db.job.create({ data: { teamId, ownerId: owner.userId, kind: 'TRAIN', state: 'RUNNING', config: { training: { steps: 100_000 } }, startedAt: new Date() } });
    const attempt = await activeAttempt(db, { id: job.id, teamId }, 1);
    await db.job.update({ where: { id: job.id }, data: { attempts: 1 } });
    const send = async (steps: number[]) => {
      const res = await postBatch(server.url, attempt, seq++, 'metrics', steps.map((step) => ({ step, key: 'reward/mean', value: Math.sin(step / 50) })));
      if (res.status !== 200) throw new Error(`the stream refused a batch: ${res.status} ${JSON.stringify(res.body)}`);
    };
    await send([1]);
    await page.goto(`${teamUrl}/runs/${job.id}`);
    await page.locator('figure[data-metric="reward/mean"][data-last-step="1"]').waitFor({ timeout: 60_000 });
    // The page marks the frame at which the chart's newest step changes (epoch ms).
    await page.evaluate(`(() => {
      const seen = (window.__seen = []);
      let last = '';
      const tick = () => {
        const f = document.querySelector('figure[data-metric="reward/mean"]');
        const step = f ? f.getAttribute('data-last-step') : '';
        if (step && step !== last) { last = step; seen.push([Number(step), performance.timeOrigin + performance.now()]); }
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
      window.__long = [];
      // How often recharts draws the chart again: its line's path is redrawn (not the live tail's).
      window.__redraws = 0;
      new MutationObserver((list) => { if (list.some((m) => m.target.closest && m.target.closest('.recharts-line'))) window.__redraws++; }).observe(document.querySelector('figure[data-metric="reward/mean"]'), { subtree: true, attributes: true, childList: true });
      new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push(e.duration); }).observe({ type: 'longtask' });
    })()`);
    // A socket.io client of the owner's session in the run's room: when each point arrives.
    const cookie = (await page.context().cookies(server.url)).map((c) => `${c.name}=${c.value}`).join('; ');
    const socket = connect(server.url, { path: '/socket.io', transports: ['websocket'], extraHeaders: { cookie, origin: server.url } });
    const received = new Map<number, number>();
    socket.on('stream', (batch: { kind: string; items: Array<{ step: number }> }) => {
      const at = Date.now();
      if (batch.kind === 'metrics') for (const item of batch.items) if (!received.has(item.step)) received.set(item.step, at);
    });
    await new Promise<void>((resolve, reject) => {
      socket.on('connect', () => socket.emit('subscribe', { room: `run:${job.id}` }, (answer: { ok: boolean }) => (answer.ok ? resolve() : reject(new Error('the run room refused the bench')))));
      socket.on('connect_error', reject);
    });

    // BENCH_PROFILE=<file>: the page's CPU profile of the 50-points-a-second phase (open it in
    // Chromium's DevTools, Performance), to see where the frames' time goes, and <file>.png.
    const profiler = process.env.BENCH_PROFILE ? await page.context().newCDPSession(page) : null;
    if (profiler) {
      await profiler.send('Profiler.enable');
      await profiler.send('Profiler.start');
    }
    // 50 points a second for 10 seconds, one a batch.
    const sentAt = new Map<number, number>();
    let step = 2;
    for (const until = Date.now() + 10_000; Date.now() < until; ) {
      const due = Date.now() + 20;
      sentAt.set(step, Date.now());
      await send([step++]);
      await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
    }
    const lastSent = step - 1;
    // With the profile, a picture of the panel as the stream left it (its live tail drawn).
    if (profiler) await page.locator('figure[data-metric="reward/mean"]').screenshot({ path: `${process.env.BENCH_PROFILE}.png` });
    if (profiler) fs.writeFileSync(process.env.BENCH_PROFILE!, JSON.stringify((await profiler.send('Profiler.stop')).profile));
    const redraws = (await page.evaluate('window.__redraws')) as number;
    await page.locator(`figure[data-metric="reward/mean"][data-last-step="${lastSent}"]`).waitFor({ timeout: 60_000 });
    const seen = (await page.evaluate('window.__seen')) as Array<[number, number]>;
    const drawnAt = (n: number) => seen.find(([s]) => s >= n)?.[1];
    const toPixel = [...sentAt].flatMap(([n, at]) => (drawnAt(n) === undefined ? [] : [drawnAt(n)! - at]));
    const fanout = [...sentAt].flatMap(([n, at]) => (received.has(n) ? [received.get(n)! - at] : []));
    emit('live_point_to_pixel_p95_ms', quantile(toPixel, 0.95), 'ms', {
      fanout_p95_ms: Math.round(quantile(fanout, 0.95)), difference_ms: Math.round(quantile(toPixel, 0.95) - quantile(fanout, 0.95)), points: toPixel.length, p50_ms: Math.round(quantile(toPixel, 0.5)), fanout_p50_ms: Math.round(quantile(fanout, 0.5)), frames_with_new_points: seen.length, chart_redraws: redraws, rate: `${Math.round(sentAt.size / 10)} points/s sent (50 asked: one HTTP batch at a time)`,
      what: 'worker HTTP send of a point until the frame whose reward chart shows its step (fanout: until a subscribed socket.io client has it)', target: 'difference < 50',
    });
    socket.close();

    // 1,000 points a second (50 a batch every 50 ms) for 5 seconds: the page's long tasks.
    await page.evaluate('window.__long.length = 0');
    for (const until = Date.now() + 5_000; Date.now() < until; ) {
      const due = Date.now() + 50;
      await send(Array.from({ length: 50 }, () => step++));
      await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
    }
    await page.locator(`figure[data-metric="reward/mean"][data-last-step="${step - 1}"]`).waitFor({ timeout: 60_000 });
    const long = (await page.evaluate('window.__long')) as number[];
    emit('long_tasks_during_live_s', long.length / 5, 'per s', { longest_ms: Math.round(Math.max(0, ...long)), rate: '1000 points/s', seconds: 5, what: 'main-thread tasks over 50 ms a second on the run page while points stream in', target: '0' });
    await db.job.update({ where: { id: job.id }, data: { state: 'SUCCEEDED', finishedAt: new Date() } });
  } finally {
    await db.$disconnect();
  }
}

/** Resolves with `performance.now()` of the first animation frame at which `selector` is in the page. */
function frameWhen(page: Page, selector: string, timeout = 120_000): Promise<number> {
  return page
    .waitForFunction((s) => (document.querySelector(s) ? performance.now() : false), selector, { polling: 'raf', timeout })
    .then((handle) => handle.jsonValue() as Promise<number>);
}

const server = await startServer();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();

  // first_load_js_kb: the sign-in link lands on the team's page, cold (a new context, no cache).
  const scripts = new Map<string, Promise<Buffer | null>>();
  page.on('response', (response) => {
    if (response.request().resourceType() === 'script') scripts.set(response.url(), response.body().catch(() => null));
  });
  await page.goto(server.signInLink);
  await page.waitForURL(/\/teams\/[^/]+$/);
  await page.getByRole('button', { name: /Jump to or run/ }).waitFor();
  await page.waitForLoadState('networkidle');
  page.removeAllListeners('response');
  const bodies = (await Promise.all(scripts.values())).filter((b): b is Buffer => b !== null);
  const gzipped = bodies.reduce((sum, b) => sum + gzipSync(b).length, 0);
  const raw = bodies.reduce((sum, b) => sum + b.length, 0);
  const monacoChunks = bodies.filter((b) => b.includes('monaco-editor') || b.includes('MonacoEnvironment')).length;
  emit('first_load_js_kb', gzipped / 1024, 'KiB', { page: 'team home', scripts: bodies.length, uncompressed_kb: Math.round(raw / 1024), monaco_chunks: monacoChunks, compression: 'gzip (default level)', target: '< 350' });

  // The bandit environment's editor.
  const teamUrl = page.url();
  // BENCH_ONLY=live: the live figures alone (the sections before them take minutes).
  const onlyLive = process.env.BENCH_ONLY === 'live';
  if (!onlyLive) {
    await page.goto(`${teamUrl}/environments`);
    await page.getByRole('link', { name: 'bandit', exact: true }).click();
    await page.waitForURL(/\/environments\/[^/?]+/);
    const editorUrl = page.url().split('?')[0];
    await page.locator('.monaco-editor .view-lines').first().waitFor({ timeout: 120_000 });

    // editor_ready_ms: warm (the visit above filled the caches), median of RUNS navigations.
    const accepting = '.monaco-editor.focused .view-lines .view-line';
    const ready: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      await page.goto('about:blank');
      await page.goto(editorUrl, { waitUntil: 'commit' });
      ready.push(await frameWhen(page, accepting));
    }
    emit('editor_ready_ms', median(ready), 'ms', { runs: ready.map(Math.round), cache: 'warm', what: 'navigation start until Monaco has the focus and shows the file', target: '< 1500' });

    // diagnostic_ms: `const probe: number = 1` is fine; the keystroke `n` makes it a bigint.
    const editor = page.locator('.monaco-editor .view-lines').first();
    await editor.click();
    await page.keyboard.press('Control+End');
    await page.keyboard.insertText('\nexport const probe: number = 1');
    const squiggle = '.monaco-editor .squiggly-error';
    const diagnostics: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      await page.locator(squiggle).first().waitFor({ state: 'detached', timeout: 60_000 });
      await page.evaluate(() => {
        document.addEventListener('keydown', (e) => ((window as unknown as { keyAt: number }).keyAt = e.timeStamp), { once: true, capture: true });
      });
      const shown = frameWhen(page, squiggle, 60_000);
      await page.keyboard.press('n');
      const at = await shown;
      diagnostics.push(at - (await page.evaluate(() => (window as unknown as { keyAt: number }).keyAt)));
      await page.keyboard.press('Backspace');
    }
    emit('diagnostic_ms', median(diagnostics), 'ms', { runs: diagnostics.map(Math.round), what: 'keydown of a key making a type error until its squiggle is drawn', target: '< 1000' });

    // save_to_dry_run_ms: each save a new version (a new comment), until its statistics show.
    const saves: number[] = [];
    let version = Number(await page.locator('#version-select').inputValue());
    for (let i = 0; i < RUNS; i++) {
      await editor.click();
      await page.keyboard.press('Control+End');
      await page.keyboard.insertText(`\n// bench save ${i} ${Date.now()}\n`);
      await page.getByText('● unsaved').waitFor();
      version += 1;
      await page.evaluate(() => {
        document.addEventListener('keydown', (e) => ((window as unknown as { keyAt: number }).keyAt = e.timeStamp), { once: true, capture: true });
      });
      const shown = page
        .waitForFunction(
          (v) => (document.querySelector<HTMLSelectElement>('#version-select')?.value === String(v) && document.querySelector('section[aria-label="Statistics"]') ? performance.now() : false),
          version,
          { polling: 'raf', timeout: 120_000 },
        )
        .then((h) => h.jsonValue() as Promise<number>);
      await page.keyboard.press('Control+s');
      const at = await shown;
      saves.push(at - (await page.evaluate(() => (window as unknown as { keyAt: number }).keyAt)));
    }
    emit('save_to_dry_run_ms', median(saves), 'ms', { runs: saves.map(Math.round), environment: 'bandit template', what: 'Ctrl-S until the new version’s dry-run statistics show', target: '< 3000' });

    // The playground, on a sampler checkpoint of a short gomoku run (trained now, on the local worker).
    const teamId = new URL(teamUrl).pathname.split('/')[2];
    const call = async <T>(procedure: string, kind: 'query' | 'mutation', input: unknown): Promise<T> => {
      const response =
        kind === 'query'
          ? await page.request.get(`${server.url}/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`)
          : await page.request.post(`${server.url}/api/trpc/${procedure}`, { data: { json: input }, headers: { origin: server.url } });
      if (!response.ok()) throw new Error(`${procedure}: ${await response.text()}`);
      return ((await response.json()) as { result: { data: { json: T } } }).result.data.json;
    };
    const environments = await call<Array<{ name: string; versions: Array<{ id: string }> }>>('environments.list', 'query', { teamId });
    const gomoku = environments.find((e) => e.name === 'gomoku');
    if (!gomoku) throw new Error('no gomoku environment in the default team');
    const run = await call<{ id: string }>('jobs.submit', 'mutation', {
      teamId, kind: 'TRAIN',
      config: { environmentVersionId: gomoku.versions[0].id, training: { steps: 1, batchSize: 1, groupSize: 2, checkpointEvery: 100, evalEpisodes: 0, warmStart: null, model: { contextLength: 1024 } } },
    });
    for (let waited = 0; !(await call<Array<{ kind: string }>>('runs.checkpoints', 'query', { teamId, jobId: run.id })).some((c) => c.kind === 'SAMPLER'); waited++) {
      if (waited > 600) throw new Error('the gomoku run wrote no sampler checkpoint in 10 minutes');
      await new Promise((r) => setTimeout(r, 1000));
    }
    // The run's session must not be what the click waits for: its job has ended.
    for (let waited = 0; (await call<{ state: string }>('runs.summary', 'query', { teamId, jobId: run.id })).state !== 'SUCCEEDED'; waited++) {
      if (waited > 600) throw new Error('the gomoku run did not end');
      await new Promise((r) => setTimeout(r, 1000));
    }

    // playground_first_token_ms: the click on "Open in playground" until the first token is drawn;
    // Generate is pressed the frame it is enabled (the session placed and loaded), as a user would.
    await page.goto(`${teamUrl}/runs/${run.id}`);
    const open = page.getByRole('link', { name: /Open step \d+ in playground/ });
    await open.waitFor();
    await page.evaluate(() => {
      document.addEventListener('click', (e) => ((window as unknown as { clickAt: number }).clickAt = e.timeStamp), { once: true, capture: true });
    });
    await open.click();
    await page.getByRole('textbox', { name: 'Samples' }).fill('3');
    await page.getByRole('textbox', { name: 'Max tokens' }).fill('512');
    await page.waitForFunction(() => [...document.querySelectorAll('button')].some((b) => b.textContent?.includes('Generate') && !b.disabled), null, { polling: 'raf', timeout: 300_000 });
    // Every change of each completion's token count, with the time of the frame it was drawn in.
    // (A string: tsx names inner functions with a helper the page does not have.)
    await page.evaluate(`(() => {
      const drawn = [];
      window.drawn = drawn;
      const look = () => {
        document.querySelectorAll('[data-testid="completion"]').forEach((li, i) => {
          const tokens = li.querySelectorAll('[data-testid="token"]').length;
          const series = (drawn[i] ??= []);
          if (series.length === 0 || series[series.length - 1].tokens !== tokens) series.push({ at: performance.now(), tokens });
        });
        requestAnimationFrame(look);
      };
      requestAnimationFrame(look);
    })()`);
    const firstToken = frameWhen(page, '[data-testid="token"]', 120_000);
    await page.getByRole('button', { name: /Generate/ }).click();
    const firstAt = await firstToken;
    const clickAt = await page.evaluate(() => (window as unknown as { clickAt: number }).clickAt);
    emit('playground_first_token_ms', firstAt - clickAt, 'ms', { what: 'click on "Open in playground" (fresh checkpoint, idle local worker) until the first token is drawn, Generate pressed once enabled', target: '< 3000' });

    // playground_tokens_per_s: tokens drawn a second in the page against the worker's own decode
    // rate for the same requests (each completion's footer names it), over completions of 20+ tokens.
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="completion"]').length === 3 && document.querySelectorAll('[data-testid="completion"][data-done=""]').length === 0, null, { timeout: 300_000 });
    const drawn = await page.evaluate(() => (window as unknown as { drawn: Array<Array<{ at: number; tokens: number }>> }).drawn);
    const footers = await page.getByTestId('completion').locator('.playground-completion-foot').allTextContents();
    // The page lists the newest first; `drawn` is by position at each frame, and the three were all
    // listed (streaming one after another) before the first token: positions are stable.
    const pairs = drawn.flatMap((series, i) => {
      const withTokens = series.filter((s) => s.tokens > 0);
      const worker = /\(worker (\d+)\)/.exec(footers[i] ?? '')?.[1];
      if (withTokens.length < 2 || !worker) return [];
      const first = withTokens[0];
      const last = withTokens[withTokens.length - 1];
      if (last.tokens - first.tokens < 20 || last.at <= first.at) return [];
      return [{ page: ((last.tokens - first.tokens) / (last.at - first.at)) * 1000, worker: Number(worker), tokens: last.tokens }];
    });
    if (pairs.length === 0) throw new Error(`no completion of 20 tokens or more to time: ${footers.join(' | ')}`);
    const pageRate = pairs.reduce((s, p) => s + p.page, 0) / pairs.length;
    const workerRate = pairs.reduce((s, p) => s + p.worker, 0) / pairs.length;
    emit('playground_tokens_per_s', pageRate, 'tokens/s', { worker_tokens_per_s: Math.round(workerRate), ratio: Number((pageRate / workerRate).toFixed(3)), completions: pairs.map((p) => p.tokens), what: 'tokens drawn a second in the page vs the worker’s own decode rate for the same requests', target: 'ratio ≥ 0.9' });

    // replay_step_ms: the longest of a few games random play plays against itself on gomoku (kept
    // as matches by the play console), stepped with → from its start: keydown until the frame whose
    // board shows the next move; median over the moves.
    let longest = { id: '', moves: 0 };
    for (let seed = 1; seed <= 6 && longest.moves < 81; seed++) {
      const game = await call<{ ok: boolean; matchId?: string; transcript?: { turns: unknown[] } }>('play.autoplay', 'mutation', { teamId, source: { versionId: gomoku.versions[0].id }, policy: { random: true }, seed });
      if (game.ok && game.matchId && (game.transcript?.turns.length ?? 0) > longest.moves) longest = { id: game.matchId, moves: game.transcript!.turns.length };
    }
    await page.goto(`${teamUrl}/matches/${longest.id}?move=0`);
    await page.getByRole('img', { name: /^Board after 0 of/ }).waitFor();
    const steps: number[] = [];
    for (let n = 1; n <= longest.moves; n++) {
      await page.evaluate(() => {
        document.addEventListener('keydown', (e) => ((window as unknown as { keyAt: number }).keyAt = e.timeStamp), { once: true, capture: true });
      });
      const drawn = page
        .waitForFunction((k) => (document.querySelector(`[aria-label^="Board after ${k} of"]`) ? performance.now() : false), n, { polling: 'raf', timeout: 10_000 })
        .then((h) => h.jsonValue() as Promise<number>);
      await page.keyboard.press('ArrowRight');
      steps.push((await drawn) - (await page.evaluate(() => (window as unknown as { keyAt: number }).keyAt)));
    }
    emit('replay_step_ms', median(steps), 'ms', { moves: longest.moves, p90: Math.round([...steps].sort((a, b) => a - b)[Math.floor(steps.length * 0.9)]), what: '→ keydown until the frame that draws the next move, median over a random game’s moves', target: '< 16' });

    // series_1m_first_render_ms, zoom_rerender_ms: a finished run of 1,000,000 points.
    const jobId = await millionPointRun(server.home, teamId);
    const firstRender: number[] = [];
    for (let i = 0; i < 3; i++) {
      await page.goto('about:blank');
      await page.goto(`${teamUrl}/runs/${jobId}`);
      firstRender.push(await frameWhen(page, 'figure[data-metric="reward/mean"] .recharts-line-curve'));
    }
    emit('series_1m_first_render_ms', median(firstRender), 'ms', { points: MILLION, runs: firstRender.map(Math.round), what: 'navigation start until the reward chart of a 1,000,000-point run has drawn its line', target: '< 1000' });
    const zooms: number[] = [];
    for (const from of [100_000, 300_000, 500_000, 700_000, 900_000]) {
      const to = from + 500;
      await page.getByRole('spinbutton', { name: 'Zoom from step' }).fill(String(from));
      await page.getByRole('spinbutton', { name: 'Zoom to step' }).fill(String(to));
      await page.evaluate(() => {
        document.addEventListener('click', (e) => ((window as unknown as { clickAt: number }).clickAt = e.timeStamp), { once: true, capture: true });
      });
      const shown = page
        .waitForFunction(
          ([lo, hi]) => {
            const f = document.querySelector('figure[data-metric="reward/mean"]');
            const last = Number(f?.getAttribute('data-last-step'));
            return f && f.querySelector('.recharts-line-curve') && last >= lo && last <= hi ? performance.now() : false;
          },
          [from, to],
          { polling: 'raf', timeout: 60_000 },
        )
        .then((h) => h.jsonValue() as Promise<number>);
      await page.getByRole('button', { name: 'Zoom', exact: true }).click();
      zooms.push((await shown) - (await page.evaluate(() => (window as unknown as { clickAt: number }).clickAt)));
    }
    emit('zoom_rerender_ms', median(zooms), 'ms', { points: MILLION, range_steps: 500, runs: zooms.map(Math.round), what: 'click on Zoom (500 steps of the 1,000,000-point run) until the chart shows the range re-queried', target: '< 300' });

  }
  // live_point_to_pixel_p95_ms, fanout_p95_ms, long_tasks_during_live_s: the bench as the worker of a running run.
  await liveFigures(page, server, teamUrl, new URL(teamUrl).pathname.split('/')[2]);
  await context.close();
} catch (error) {
  process.stderr.write(`${server.output()}\n`);
  throw error;
} finally {
  await browser.close();
  await server.stop();
}
