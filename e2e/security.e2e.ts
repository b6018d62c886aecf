import type { Page } from '@playwright/test';
import { expect, test, watchPage } from './fixtures';
import { trpc } from './helpers';

// The app's own scripts run under the Content-Security-Policy, every script of a page carries
// the answer's nonce, and the installable app: manifest, icons, service worker, and its page for
// a server that does not answer. (The journeys' watchPage fails on any console error, CSP
// violations included; these tests look for violations in particular.)

/** What the browser refused under the CSP, and uncaught errors (a refused script can cause one). */
function watchCsp(page: Page) {
  const refused: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy|Refused to (execute|load|apply|connect|create|evaluate)/i.test(msg.text())) refused.push(msg.text());
  });
  page.on('pageerror', (error) => refused.push(`uncaught: ${error.message}`));
  return { expectNoneRefused: () => expect(refused).toEqual([]) };
}

test('pages run under a nonce CSP: every script carries the answer’s nonce and nothing is refused', async ({ browser, ownerState, whetstone }) => {
  const owner = await browser.newContext({ storageState: ownerState });
  const page = await owner.newPage();
  const csp = watchCsp(page);
  const response = await page.goto(whetstone.url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  await expect(page.getByRole('heading', { level: 1, name: 'Default team' })).toBeVisible();
  expect(response?.headers()['x-content-type-options']).toBe('nosniff');

  for (const path of ['/', '/sign-in', '/~offline']) {
    const answer = await page.request.get(`${whetstone.url}${path}`, { maxRedirects: 0 });
    const policy = answer.headers()['content-security-policy'];
    const nonce = /'nonce-([^']+)'/.exec(policy)?.[1];
    expect(nonce, path).toBeTruthy();
    expect(policy, path).toContain("'strict-dynamic'");
    expect(policy, path).not.toMatch(/script-src[^;]*unsafe-(inline|eval)/);
    const html = await answer.text();
    const scripts = html.match(/<script\b[^>]*>/g) ?? [];
    expect(scripts.length, path).toBeGreaterThan(0);
    for (const tag of scripts) expect(tag, path).toContain(`nonce="${nonce}"`);
  }
  csp.expectNoneRefused();
  await owner.close();
});

test('the editor runs under the CSP: Monaco and its TypeScript worker load from the origin and mark a type error', async ({ browser, ownerState, whetstone }) => {
  const owner = await browser.newContext({ storageState: ownerState });
  const page = await owner.newPage();
  const csp = watchCsp(page);
  await page.goto(whetstone.url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  await page.goto(`${page.url()}/environments`);
  await page.getByRole('link', { name: 'bandit', exact: true }).click();
  const editor = page.locator('.monaco-editor').first();
  await expect(editor).toBeVisible({ timeout: 30_000 });
  await editor.locator('.view-lines').click();
  await page.keyboard.press('ControlOrMeta+End');
  // Inserted at once: typed key by key on a loaded machine, Monaco's suggestions could take some of
  // the keys (seen: "const wnumber = \"te\"", no type error to mark).
  await page.keyboard.insertText('\nconst wrong: number = "text";\n');
  // The squiggle comes from the TypeScript worker: a worker refused by the CSP would draw none.
  await expect(editor.locator('.squiggly-error').first()).toBeVisible({ timeout: 30_000 });
  csp.expectNoneRefused();
  await owner.close();
});

test('installable: a manifest with icons, a service worker, and a clear page when the server does not answer', async ({ browser, whetstone }) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const manifest = await (await page.request.get(`${whetstone.url}/manifest.webmanifest`)).json();
  expect(manifest).toMatchObject({ name: 'Whetstone', display: 'standalone', start_url: '/' });
  for (const icon of manifest.icons as Array<{ src: string; type: string }>) {
    const answer = await page.request.get(`${whetstone.url}${icon.src}`);
    expect(answer.status(), icon.src).toBe(200);
    expect(answer.headers()['content-type'], icon.src).toContain(icon.type);
  }

  const watch = watchPage(page);
  await page.goto(whetstone.url);
  await expect(page.getByRole('heading', { name: 'Whetstone', level: 1 })).toBeVisible();
  // The worker installs (its precache done) and takes the page.
  const scriptURL = await page.evaluate(async () => (await navigator.serviceWorker.ready).active?.scriptURL);
  expect(scriptURL).toBe(`${whetstone.url}/sw.js`);
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
  watch.expectClean();

  // With the network gone, a page that was never visited opens as the "server unreachable" page.
  await context.setOffline(true);
  await page.goto(`${whetstone.url}/teams/some-team/settings`);
  await expect(page.getByRole('heading', { level: 1, name: 'The server is not answering' })).toBeVisible();
  await expect(page.getByText(`Whetstone's server at ${whetstone.url} is not answering`)).toBeVisible();
  await expect(page.getByText('npm start')).toBeVisible();
  await page.screenshot({ path: test.info().outputPath('offline.png'), fullPage: true });
  // When it answers again, the page opens what was asked for by itself: this browser is signed
  // out, so that ends at the sign-in page, which goes on to the page asked for.
  await context.setOffline(false);
  await expect(page.getByRole('heading', { level: 1, name: 'The server is not answering' })).toBeHidden({ timeout: 30_000 });
  await expect(page).toHaveURL(`${whetstone.url}/sign-in?next=${encodeURIComponent('/teams/some-team/settings')}`);
  await context.close();
});

// ── Untrusted text is never markup ───────────────────────────────────────────────────────────────

/** Markup that would run if any page rendered untrusted text as HTML (or followed it as a link). */
const PLANT = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1;alert(1)"><a href="javascript:window.__pwned=1">js-link</a></textarea><script>window.__pwned=1</script>';

/** An environment that writes the plant everywhere it writes text: prompt, observations, info, logs, completions (its bot), a metric's name. */
const PLANTED_ENV = `import { defineSingleTurn } from 'whetstone';
const PLANT = ${JSON.stringify(PLANT)};
export default defineSingleTurn<{ n: number }>({
  name: 'planted',
  description: 'description ' + PLANT,
  systemPrompt: 'system ' + PLANT,
  sample: (rng) => ({ n: rng.int(0, 2) }),
  prompt: () => { console.log('log ' + PLANT); return 'observation ' + PLANT; },
  reward: () => ({ reward: 1, info: { note: 'info ' + PLANT, '<img src=x onerror=alert(1)>': 1 } }),
  bots: { planter: () => 'completion ' + PLANT },
});
`;

const PLANTED_README = `# Planted\n\nraw ${PLANT}\n\n[md-js-link](javascript:window.__pwned=1) and <a href="javascript:alert(1)">raw-link</a>\n`;

/** Nothing planted became markup or ran: no flag, no dialog, no element made from the plant, no CSP refusal. */
async function expectNothingRan(page: Page, dialogs: string[], where: string) {
  const found = await page.evaluate(() => ({
    pwned: (window as unknown as { __pwned?: unknown }).__pwned ?? null,
    images: document.querySelectorAll('img[src="x"]').length,
    javascriptLinks: document.querySelectorAll('a[href^="javascript:" i]').length,
    scripts: [...document.scripts].filter((s) => s.textContent?.includes('__pwned')).length,
  }));
  expect(found, where).toEqual({ pwned: null, images: 0, javascriptLinks: 0, scripts: 0 });
  expect(dialogs, where).toEqual([]);
}

test('planted markup in every kind of untrusted text shows as text and never runs', async ({ browser, ownerState, whetstone }) => {
  test.setTimeout(420_000);
  const url = whetstone.url;
  const owner = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await owner.newPage();
  const csp = watchCsp(page);
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto(url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  const teamId = /\/teams\/([^/?#]+)/.exec(page.url())![1];
  const base = `${url}/teams/${teamId}`;

  // Plant: the environment (code, README, manifest description), a dataset (name, description,
  // rows), and a one-step run on the environment (its logs, rollouts, metrics; a context long
  // enough for the planted prompt, so that episodes reach the reward and its info's metric).
  const saved = await trpc<{ environmentId: string; versionId: string }>(page, url, 'environments.saveVersion', 'mutation', {
    teamId,
    name: 'planted',
    entry: 'env.ts',
    files: { 'env.ts': PLANTED_ENV, 'README.md': PLANTED_README },
    manifest: {
      name: 'planted', version: '0.1.0', description: `manifest ${PLANT}`, kind: 'single-turn', entry: 'env.ts', agents: ['agent'],
      limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 4 }, training: { algorithm: 'grpo', steps: 1, batchSize: 2, groupSize: 2, model: { contextLength: 1024 } },
    },
  });
  const dataset = await trpc<{ datasetId: string }>(page, url, 'datasets.upload', 'mutation', {
    teamId,
    name: 'planted.jsonl',
    description: `description ${PLANT}`,
    jsonl: [JSON.stringify({ prompt: `row ${PLANT}`, completion: PLANT }), JSON.stringify({ [`key ${PLANT}`]: 1 })].join('\n'),
  });
  const job = await trpc<{ id: string }>(page, url, 'jobs.submit', 'mutation', { teamId, kind: 'TRAIN', config: { environmentVersionId: saved.versionId } });

  // The environments list: the description.
  await page.goto(`${base}/environments`);
  await expect(page.getByRole('link', { name: 'planted', exact: true })).toBeVisible({ timeout: 30_000 });
  await expect(page.getByText('js-link').first()).toBeVisible();
  await expectNothingRan(page, dialogs, 'environments');

  // The editor: the dry run's transcripts (prompt, observation, completion), logs and info.
  await page.goto(`${base}/environments/${saved.environmentId}`);
  await expect(page.getByText('Dry run passed')).toBeVisible({ timeout: 120_000 });
  const transcripts = page.getByRole('region', { name: 'Transcripts' });
  for (const summary of await transcripts.locator('summary').all()) await summary.click();
  await expect(transcripts).toContainText(`observation ${PLANT}`);
  await expect(transcripts).toContainText(`completion ${PLANT}`);
  await expect(page.getByRole('region', { name: 'Logs' })).toContainText(`log ${PLANT}`);
  await expectNothingRan(page, dialogs, 'editor, dry run');

  // The README, rendered as safe Markdown: raw HTML stays text, the javascript: link is no link.
  await page.getByRole('navigation', { name: 'Files' }).getByRole('button', { name: /README\.md/ }).click();
  const preview = page.getByRole('region', { name: 'Preview' });
  await expect(preview.getByRole('heading', { name: 'Planted' })).toBeVisible({ timeout: 30_000 });
  await expect(preview).toContainText('md-js-link');
  await expect(preview.getByRole('link')).toHaveCount(0);
  await expectNothingRan(page, dialogs, 'editor, README');

  // The play console: the observation, the user's completion (the plant, typed) and the info.
  await page.getByRole('tab', { name: 'Play' }).click();
  await page.getByRole('button', { name: 'Play an episode' }).click();
  const action = page.getByRole('textbox', { name: 'Your action' });
  await expect(action).toBeVisible({ timeout: 60_000 });
  await expect(page.locator('.play-log')).toContainText(`observation ${PLANT}`);
  await action.fill(PLANT);
  await action.press('Enter');
  await expect(page.getByText(/Episode over/)).toBeVisible({ timeout: 60_000 });
  await expect(page.locator('.play-log')).toContainText(`info ${PLANT}`.slice(0, 40));
  // "Let it play": the bot's completion.
  await page.getByRole('button', { name: 'Let it play' }).click();
  await expect(page.locator('.play-log')).toContainText(`completion ${PLANT}`, { timeout: 60_000 });
  await expectNothingRan(page, dialogs, 'play console');

  // Datasets: the list (name, description) and the rows.
  await page.goto(`${base}/datasets`);
  await expect(page.getByRole('table', { name: 'Datasets' })).toContainText(`description ${PLANT}`, { timeout: 30_000 });
  await expectNothingRan(page, dialogs, 'datasets');
  await page.goto(`${base}/datasets/${dataset.datasetId}`);
  await expect(page.getByRole('list', { name: 'Rows 1 to 2' })).toContainText('</textarea><script>', { timeout: 30_000 });
  await expectNothingRan(page, dialogs, 'dataset rows');

  // The run: its state, logs and metrics (one named by the planted info key).
  await page.goto(`${base}/runs/${job.id}`);
  await expect(page.getByRole('heading', { level: 1 })).toContainText('succeeded', { timeout: 240_000 });
  // The metric named by the planted info key has its chart, titled by its name as text (the page
  // opened anew: its list of metric names is read once, and the run may have had none yet).
  await page.reload();
  await expect(page.getByRole('figure', { name: /^env\/<img_src=x_onerror=alert\(1\)> by step$/ })).toHaveCount(1, { timeout: 30_000 });
  await expectNothingRan(page, dialogs, 'run');
  for (const tab of ['Logs', 'Config', 'Matches', 'Checkpoints']) {
    const t = page.getByRole('tab', { name: tab });
    if ((await t.count()) === 0) continue;
    await t.click();
    await expect(page.getByRole('tabpanel')).toBeVisible({ timeout: 30_000 });
    await expectNothingRan(page, dialogs, `run, ${tab}`);
  }
  csp.expectNoneRefused();
  await owner.close();
});
