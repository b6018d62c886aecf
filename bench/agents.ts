/**
 * `npm run bench:agents [-- <template>…]`: each template's default training through the product
 * path, then an eval job of its final checkpoint, with the figures issue 16 names. One JSON object
 * per figure on stdout, nothing else (progress goes to stderr).
 *
 * The product path: a control plane process (server/main.ts's composition: tRPC, worker API,
 * socket.io, scheduler; server/test-support/reliability/server-process.ts), a real worker daemon
 * with one WASM device, PostgreSQL (DATABASE_URL's server, else an embedded one, in a database of
 * its own dropped at the end), and the CLI as a user types it: `whetstone run env-templates/<t>
 * --watch --json`, then `whetstone eval <checkpoint> … --json`. Nothing is configured beyond the
 * template's manifest.
 *
 * Figures: `bandit_final_reward` (the greedy eval job's mean return), `math_heldout_exact` and
 * `math_tools_heldout_exact` (eval jobs on the held-out split, greedy) with
 * `math_tools_tool_use_rate`, `gomoku_win_rate_vs_random` and `gomoku_win_rate_vs_scripted` (200
 * games each, colours alternated, Wilson intervals) with `gomoku_legal_move_rate`, and
 * `selfplay_zero_sum_max_abs` (bench/selfplay.ts: two independently learning gomoku agents).
 * Each carries the training's wall seconds and the machine's load.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { TEMPLATE_NAMES, type TemplateName } from '../env-templates/load-template';
import { createDb } from '../server/db/client';
import { startEmbeddedPostgres } from '../server/db/embedded';
import { migrate } from '../server/db/migrate';
import { killAll, seedTeam, startServer, startWorker, stopGracefully, tempDir } from '../server/test-support/reliability/harness';
import { emit } from './engine-measure';
import { selfPlayZeroSum } from './selfplay';

const REPO = path.resolve(import.meta.dirname, '..');
const TEMPLATES: TemplateName[] = ['bandit', 'math', 'math-tools', 'gomoku'];

interface CliDocument {
  job: { id: string };
  final: { state: string; failureReason: string | null; startedAt: string | null; finishedAt: string | null; metrics: Record<string, number>; checkpoints: { id: string; kind: string; step: number }[] };
}

const progress = (line: string) => process.stderr.write(`[bench:agents] ${line}\n`);

/** `whetstone <argv> --json` as a user runs it; its one JSON document. */
async function cli(argv: string[], env: Record<string, string>): Promise<CliDocument> {
  const child = spawn(process.execPath, ['bin/whetstone.mjs', ...argv, '--json'], { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)));
  // With --json the CLI's stdout is its one document (indented).
  const doc = (stdout.includes('{') ? JSON.parse(stdout.slice(stdout.indexOf('{'))) : {}) as CliDocument;
  if (code !== 0 && !doc.final) throw new Error(`whetstone ${argv.join(' ')} exited ${code}: ${stderr || stdout}`);
  return doc;
}

function seconds(doc: CliDocument): number {
  const { startedAt, finishedAt } = doc.final;
  return startedAt && finishedAt ? Number(((Date.parse(finishedAt) - Date.parse(startedAt)) / 1000).toFixed(1)) : NaN;
}

function sampler(doc: CliDocument): string {
  const c = doc.final.checkpoints.filter((x) => x.kind === 'SAMPLER').at(-1) ?? doc.final.checkpoints.at(-1);
  if (!c) throw new Error(`job ${doc.job.id} left no checkpoint (${doc.final.state}: ${doc.final.failureReason ?? ''})`);
  return c.id;
}

const load = () => Number(os.loadavg()[0].toFixed(1));
const interval = (m: Record<string, number>, key: 'win_rate' | 'success_rate') => [m[`eval/${key}_low`], m[`eval/${key}_high`]].map((x) => Number(x.toFixed(3)));

async function measure(name: TemplateName, env: Record<string, string>): Promise<void> {
  progress(`${name}: training with the template's defaults`);
  const trained = await cli(['run', `env-templates/${name}`, '--watch'], env);
  const common = { train_seconds: seconds(trained), train_state: trained.final.state, job: trained.job.id, load: load() };
  if (trained.final.state !== 'SUCCEEDED') throw new Error(`${name}: ${trained.final.state}: ${trained.final.failureReason}`);
  const checkpoint = sampler(trained);
  const evaluate = async (against: string, games: number) => {
    progress(`${name}: eval of ${checkpoint} against ${against}, ${games} games, greedy`);
    const doc = await cli(['eval', checkpoint, '--against', against, '--games', String(games), '--temperature', '0'], env);
    if (doc.final.state !== 'SUCCEEDED') throw new Error(`${name}: eval ${doc.final.state}: ${doc.final.failureReason}`);
    return { m: doc.final.metrics, eval_seconds: seconds(doc) };
  };
  if (name === 'bandit') {
    const { m, eval_seconds } = await evaluate('bot', 256);
    emit('bandit_final_reward', m['eval/mean_return'], 'mean reward', { target: 0.95, training_reward: trained.final.metrics['reward/mean'], episodes: m['eval/games'], eval_seconds, ...common });
  } else if (name === 'math' || name === 'math-tools') {
    const games = name === 'math' ? 500 : 100;
    const { m, eval_seconds } = await evaluate('bot', games);
    const prefix = name.replace('-', '_');
    emit(`${prefix}_heldout_exact`, m['eval/success_rate'], 'rate', { target: 0.95, interval: interval(m, 'success_rate'), episodes: m['eval/games'], eval_seconds, ...common });
    if (name === 'math-tools') emit('math_tools_tool_use_rate', m['eval/tool_use_rate'], 'rate', { episodes: m['eval/games'], ...common });
  } else if (name === 'gomoku') {
    const legal: number[] = [];
    for (const [against, figure, target] of [['random', 'gomoku_win_rate_vs_random', 0.95], ['bot', 'gomoku_win_rate_vs_scripted', 0.5]] as const) {
      const { m, eval_seconds } = await evaluate(against, 200);
      legal.push(m['eval/legal_move_rate']);
      emit(figure, m['eval/win_rate'], 'rate', {
        target, interval: interval(m, 'win_rate'), draw_rate: m['eval/draw_rate'], loss_rate: m['eval/loss_rate'],
        black: m['eval/win_rate/black'], white: m['eval/win_rate/white'], mean_length: m['eval/mean_length'], legal_move_rate: m['eval/legal_move_rate'], games: m['eval/games'], eval_seconds, ...common,
      });
    }
    emit('gomoku_legal_move_rate', Math.min(...legal), 'rate', { target: 0.99, ...common });
  }
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2);
  for (const a of asked) if (!(TEMPLATE_NAMES as readonly string[]).includes(a) && a !== 'selfplay') throw new Error(`unknown template ${a}: name some of ${TEMPLATES.join(', ')}, selfplay`);
  const names = asked.length > 0 ? TEMPLATES.filter((t) => asked.includes(t)) : TEMPLATES;
  const started = performance.now();
  // Its own folder, not the harness's (killAll removes those, and PostgreSQL's data lives here).
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-bench-agents-'));
  fs.chmodSync(home, 0o755); // run as root, the embedded PostgreSQL is another user who must enter it
  const embedded = process.env.DATABASE_URL ? null : await startEmbeddedPostgres(home);
  const serverUrl = process.env.DATABASE_URL ?? embedded!.url;
  const name = `whetstone_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  try {
    if (names.length > 0) {
      await migrate(databaseUrl);
      const db = createDb(databaseUrl, 2);
      const team = await seedTeam(db);
      await db.$disconnect();
      // Generous: at nice 19 on a loaded machine the control plane may take minutes to start.
      const server = await startServer({ databaseUrl, name: 'bench-agents-server', leaseSeconds: 300, startTimeoutMs: 600_000 });
      const worker = startWorker({ url: server.url, token: team.workerToken, name: 'bench-agents-worker', home: tempDir('whetstone-bench-worker-'), backend: 'wasm' });
      const cliHome = tempDir('whetstone-bench-cli-');
      fs.chmodSync(cliHome, 0o700);
      const env = { WHETSTONE_URL: server.url, WHETSTONE_API_KEY: team.apiKey, WHETSTONE_HOME: cliHome };
      try {
        for (const t of names) await measure(t, env);
      } finally {
        await stopGracefully(worker);
        await stopGracefully(server.proc);
      }
    }
    if (asked.length === 0 || asked.includes('selfplay')) {
      progress('selfplay: two independently learning gomoku agents');
      const r = await selfPlayZeroSum();
      emit('selfplay_zero_sum_max_abs', r.maxAbs, 'reward', { target: 0, steps: r.steps, games: r.games, black_mean_reward: r.blackCurve, white_mean_reward: r.whiteCurve, seconds: r.seconds, load: load() });
    }
    emit('bench_agents_seconds', (performance.now() - started) / 1000, 's', { target: 3600, templates: names, load: load() });
  } finally {
    await killAll();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((e: unknown) => progress(`could not drop ${name}: ${(e as Error).message}`));
    await admin.end();
    await embedded?.stop();
    fs.rmSync(home, { recursive: true, force: true });
  }
}

await main();
