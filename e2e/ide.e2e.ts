import AxeBuilder from '@axe-core/playwright';
import type { Locator, Page } from '@playwright/test';
import { expect, test, watchPage } from './fixtures';
import { startHttpBandit } from '../gpu-worker/test-support/http-bandit-server';
import { teamIdOf } from './helpers';

/** No serious or critical accessibility violation on the page as it is now. */
async function expectAccessible(page: Page, what: string) {
  const result = await new AxeBuilder({ page }).analyze();
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map((v) => `${what}: ${v.id} (${v.impact}) ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join('; ')}`)).toEqual([]);
}

/** A screenshot in both themes, kept with the test's artifacts. */
async function screenshots(page: Page, name: string) {
  for (const theme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: theme });
    await page.screenshot({ path: test.info().outputPath(`${name}-${theme}.png`) });
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

test('IDE journey: a new environment from the bandit template, a type error and its fix, save, reward tests, play, launch GRPO', async ({ browser, ownerState, whetstone }) => {
  test.setTimeout(600_000);
  const context = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const watch = watchPage(page);
  await page.goto(whetstone.url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  const teamId = teamIdOf(page);

  // The environments list, then New environment from the bandit template.
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Environments' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Environments' })).toBeVisible();
  await expect(page.getByRole('link', { name: 'bandit', exact: true })).toBeVisible();
  await expectAccessible(page, 'environments');
  await screenshots(page, 'environments');
  await page.getByRole('link', { name: 'New environment' }).click();
  await page.getByText('Bandit', { exact: true }).click();
  await page.getByLabel('Name').fill('my-bandit');
  await expectAccessible(page, 'new environment');
  await page.getByRole('button', { name: 'Create environment' }).click();
  await page.waitForURL(new RegExp(`/teams/${teamId}/environments/[^/?]+`), { timeout: 120_000 });
  const editor = page.locator('.monaco-editor .view-lines').first();
  await expect(editor).toBeVisible({ timeout: 120_000 });
  await expect(page.getByText('Dry run passed')).toBeVisible({ timeout: 120_000 });

  // A type error gets its red squiggle from the SDK's types; undoing it clears it.
  await editor.click();
  await page.keyboard.press('Control+End');
  // Inserted at once (typed key by key on a loaded machine, Monaco's suggestions can take keys).
  await page.keyboard.insertText('\nconst broken: number = "text";\n');
  await expect(page.locator('.monaco-editor .squiggly-error').first()).toBeVisible({ timeout: 60_000 });
  await screenshots(page, 'editor-type-error');
  // Undo takes the typing back a group at a time (words, auto-closed quotes): undo until it is gone.
  await expect(async () => {
    await page.keyboard.press('Control+z');
    await expect(page.locator('.monaco-editor .squiggly-error')).toHaveCount(0, { timeout: 2_000 });
  }).toPass({ timeout: 90_000 });

  // A real change, saved with Ctrl-S: version 2, dry-run statistics and the reward tests.
  await editor.click();
  await page.keyboard.press('Control+End');
  await page.keyboard.insertText('\n// tuned by hand\n');
  await expect(page.getByText('● unsaved')).toBeVisible();
  await page.keyboard.press('Control+s');
  await expect(page.locator('#version-select')).toHaveValue('2', { timeout: 120_000 });
  await expect(page.getByText('Dry run passed')).toBeVisible({ timeout: 120_000 });
  await expect(page.getByRole('region', { name: 'Reward tests' })).toContainText(/(\d+) of \1 pass/);
  await expect(page.getByRole('region', { name: 'Statistics' })).toContainText('terminated');
  await expectAccessible(page, 'editor');
  await screenshots(page, 'editor-saved');

  // Play by hand: two episodes of one turn each, in the real sandbox.
  await page.getByRole('tab', { name: 'Play' }).click();
  await page.getByRole('button', { name: 'Play an episode' }).click();
  const action = page.getByLabel('Your action');
  await expect(action).toBeVisible({ timeout: 60_000 });
  await expect(page.locator('.play-log')).toContainText('colour:');
  await action.fill('C');
  await action.press('Enter');
  await expect(page.getByText(/Episode over \(terminated\)\. Return: [01]/)).toBeVisible({ timeout: 60_000 });
  await page.getByRole('button', { name: 'Again' }).click();
  await expect(action).toBeVisible({ timeout: 60_000 });
  await action.fill('A');
  await action.press('Enter');
  await expect(page.getByText(/Episode over \(terminated\)\. Return: [01]/)).toBeVisible({ timeout: 60_000 });
  await screenshots(page, 'play');

  // Launch GRPO with a changed learning rate: the scheduler answers before submitting.
  await page.getByRole('link', { name: 'Launch…' }).click();
  await page.waitForURL(/\/launch\?/);
  await expect(page.getByRole('heading', { level: 1, name: 'Launch a run' })).toBeVisible();
  await page.getByLabel('learningRate', { exact: true }).fill('0.002');
  await expect(page.getByLabel('learningRate', { exact: true })).toHaveValue('0.002');
  await page.getByLabel('steps', { exact: true }).fill('oops');
  await expect(page.getByText('write a number')).toBeVisible();
  await page.getByLabel('steps', { exact: true }).fill('40');
  await expect(page.getByText(/starts now|waits/)).toBeVisible({ timeout: 60_000 });
  await expect(page.locator('.copy-block').first()).toContainText('--set learningRate=0.002');
  await expectAccessible(page, 'launcher');
  await screenshots(page, 'launcher');
  await page.getByRole('button', { name: 'Launch GRPO' }).click();
  await page.waitForURL(new RegExp(`/teams/${teamId}/runs/[^/?]+`), { timeout: 60_000 });
  const jobId = /\/runs\/([^/?]+)/.exec(page.url())![1];

  // The run reaches RUNNING on the local worker, with the changed learning rate in its config.
  await expect
    .poll(
      async () => {
        const r = await page.request.get(`${whetstone.url}/api/trpc/jobs.get?input=${encodeURIComponent(JSON.stringify({ json: { teamId, jobId } }))}`);
        const body = (await r.json()) as { result?: { data?: { json?: { state: string; config: { training: { learningRate?: number } } } } } };
        const job = body.result?.data?.json;
        return job ? `${job.state} ${job.config.training.learningRate}` : 'none';
      },
      { timeout: 180_000 },
    )
    .toMatch(/^(RUNNING|SUCCEEDED) 0\.002$/);
  watch.expectClean();
  await context.close();
});

test('the command palette jumps to an environment by keyboard alone, and the theme toggles', async ({ browser, ownerState, whetstone }) => {
  const context = await browser.newContext({ storageState: ownerState });
  const page = await context.newPage();
  const watch = watchPage(page);
  await page.goto(whetstone.url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  // The palette's shortcut is listened for once the page is interactive: its button shows then.
  await expect(page.getByRole('button', { name: /Jump to or run/ })).toBeVisible();
  const palette = page.getByRole('dialog', { name: 'Command palette' });
  // The home page hands over to the team's page: a key pressed during the hand-over is pressed again.
  await expect(async () => {
    await page.keyboard.press('Control+k');
    await expect(palette).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 30_000 });
  // Keys go where the focus is: the palette's search box once the dialog has taken it.
  const search = palette.getByRole('combobox');
  await expect(search).toBeFocused();
  await page.keyboard.type('gomoku');
  await expect(search).toHaveValue('gomoku');
  await expect(palette.getByRole('option', { selected: true })).toHaveText(/gomoku/, { timeout: 30_000 });
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/environments\/[^/?]+/);
  await expect(page.locator('.monaco-editor .view-lines').first()).toBeVisible({ timeout: 120_000 });
  await page.keyboard.press('Control+k');
  await expect(search).toBeFocused();
  await page.keyboard.type('dark theme');
  await expect(palette.getByRole('option', { selected: true })).toHaveText(/dark theme/);
  await page.keyboard.press('Enter');
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  watch.expectClean();
  await context.close();
});

/** The run's state and config as the API reports it (what the run page shows). */
async function jobOf(page: Page, url: string, teamId: string, jobId: string) {
  const r = await page.request.get(`${url}/api/trpc/jobs.get?input=${encodeURIComponent(JSON.stringify({ json: { teamId, jobId } }))}`);
  const body = (await r.json()) as { result?: { data?: { json?: { state: string; kind: string; config: { datasetVersionId?: string; training: { learningRate?: number } } } } } };
  return body.result?.data?.json ?? null;
}

test('second journey: a dataset with one bad line is refused at that line, fixed, and SFT launched on it from the launcher', async ({ browser, ownerState, whetstone }) => {
  test.setTimeout(420_000);
  const context = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  // The refused upload is a 400 on purpose (Chromium logs it).
  const watch = watchPage(page, { expectedStatuses: [400] });
  await page.goto(whetstone.url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  const teamId = teamIdOf(page);

  // Upload: line 3 is cut short; the page names it and keeps the form.
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Datasets' }).click();
  const upload = page.getByRole('form', { name: 'Upload a dataset' });
  const rows = Array.from({ length: 12 }, (_, i) => JSON.stringify({ prompt: `${i}+${i}=`, completion: String(2 * i) }));
  const broken = [...rows.slice(0, 2), '{"prompt": "9+1=", "completion": ', ...rows.slice(2)];
  await upload.getByLabel('Choose file').setInputFiles({ name: 'sft-sums.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(broken.join('\n')) });
  await upload.getByRole('button', { name: 'Upload' }).click();
  const refused = upload.getByRole('alert');
  await expect(refused).toContainText('1 line has a problem', { timeout: 60_000 });
  await expect(refused.getByRole('list', { name: 'Problems by line' }).getByRole('listitem')).toHaveText([/^line 3\s*not JSON/]);
  await expect(upload.getByLabel('Name', { exact: true })).toHaveValue('sft-sums.jsonl');
  await screenshots(page, 'dataset-refused');

  // Fixed: the same name, now stored as version 1.
  const fixed = [...rows.slice(0, 2), '{"prompt": "9+1=", "completion": "10"}', ...rows.slice(2)];
  await upload.getByLabel('Choose file').setInputFiles({ name: 'sft-sums.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(fixed.join('\n')) });
  await upload.getByRole('button', { name: 'Upload' }).click();
  await expect(upload.getByText(/Stored sft-sums\.jsonl version 1: 13 rows/)).toBeVisible({ timeout: 60_000 });

  // The launcher: SFT on that dataset (the demonstrations), a short run.
  await page.goto(`${whetstone.url}/teams/${teamId}/launch`);
  await expect(page.getByRole('heading', { level: 1, name: 'Launch a run' })).toBeVisible();
  const sft = page.getByRole('radio', { name: 'SFT' });
  await sft.click();
  await expect(sft).toBeChecked();
  await expect(page.getByText('This run needs a dataset')).toBeVisible({ timeout: 30_000 });
  const dataset = page.getByLabel('Demonstrations (dataset)');
  await dataset.selectOption({ label: 'sft-sums.jsonl · v1 · 13 rows' });
  const datasetVersionId = await dataset.inputValue();
  await page.getByLabel('steps', { exact: true }).fill('30');
  await expect(page.getByText(/starts now|waits/)).toBeVisible({ timeout: 60_000 });
  await expect(page.locator('.copy-block').nth(1)).toContainText(`"datasetVersionId": "${datasetVersionId}"`);
  await expectAccessible(page, 'launcher, SFT');
  await screenshots(page, 'launcher-sft');
  await page.getByRole('button', { name: 'Launch SFT' }).click();
  await page.waitForURL(new RegExp(`/teams/${teamId}/runs/[^/?]+`), { timeout: 60_000 });
  const jobId = /\/runs\/([^/?]+)/.exec(page.url())![1];

  // It appears in the runs list, on that dataset, and reaches RUNNING on the local worker.
  await expect
    .poll(async () => {
      const job = await jobOf(page, whetstone.url, teamId, jobId);
      return job ? `${job.kind} ${job.state} ${job.config.datasetVersionId}` : 'none';
    }, { timeout: 180_000 })
    .toMatch(new RegExp(`^SFT (RUNNING|SUCCEEDED) ${datasetVersionId}$`));
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Runs' }).click();
  await expect(page.getByRole('table', { name: 'Runs' }).getByRole('row', { name: new RegExp(jobId) })).toBeVisible({ timeout: 30_000 });
  watch.expectClean();
  await context.close();
});

/** Presses Tab (Shift-Tab with `back`) until `target` has the focus: the keyboard reaches it. */
async function tabTo(page: Page, target: Locator, { back = false, max = 150 } = {}) {
  await target.waitFor();
  for (let i = 0; i < max; i++) {
    if (await target.evaluate((el) => el === document.activeElement)) return;
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
  }
  throw new Error(`${max} presses of ${back ? 'Shift-Tab' : 'Tab'} never reached ${target.toString()}`);
}

test('keyboard only: new environment, edit, save, play a turn and launch, without the mouse', async ({ browser, ownerState, whetstone }) => {
  test.setTimeout(600_000);
  const context = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const watch = watchPage(page);
  // Nothing below uses the mouse: every mouse press in the page is counted, and none may happen.
  let clicks = 0;
  await page.exposeBinding('__countClick', () => void clicks++);
  await page.addInitScript(() => {
    window.addEventListener('mousedown', () => (window as unknown as { __countClick: () => void }).__countClick(), true);
  });
  await page.goto(whetstone.url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  const teamId = teamIdOf(page);
  await expect(page.getByRole('button', { name: /Jump to or run/ })).toBeVisible();

  // The rail's Environments, then New environment (the palette's keys have a test of their own).
  await tabTo(page, page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Environments' }));
  await page.keyboard.press('Enter');
  await page.waitForURL(`${whetstone.url}/teams/${teamId}/environments`);
  await tabTo(page, page.getByRole('link', { name: 'New environment' }));
  await page.keyboard.press('Enter');
  await page.waitForURL(`${whetstone.url}/teams/${teamId}/environments/new`);

  // The name has the focus; the template is a radio group reached with Shift-Tab, moved with arrows.
  const name = page.getByLabel('Name');
  await expect(name).toBeFocused();
  await tabTo(page, page.getByRole('radio', { name: /^Bandit/ }), { back: true });
  await page.keyboard.press('ArrowDown');
  await expect(page.getByRole('radio', { name: /^Math Single-turn/ })).toBeChecked();
  await page.keyboard.press('ArrowUp');
  await expect(page.getByRole('radio', { name: /^Bandit/ })).toBeChecked();
  await tabTo(page, name);
  await page.keyboard.type('keys-bandit');
  await page.keyboard.press('Enter');
  await page.waitForURL(new RegExp(`/teams/${teamId}/environments/[^/?]+`), { timeout: 120_000 });

  // The editor takes the focus when it opens: edit, then Ctrl-S.
  await expect(page.locator('.monaco-editor.focused')).toBeVisible({ timeout: 120_000 });
  await expect(page.getByText('Dry run passed')).toBeVisible({ timeout: 120_000 });
  // The text goes in as one keyboard insertion (as an IME sends it): typed key by key, the
  // editor's suggestions would take some of the keys.
  await page.keyboard.press('Control+End');
  await page.keyboard.insertText('\n// edited without a mouse\n');
  await expect(page.getByText('● unsaved')).toBeVisible();
  await page.keyboard.press('Control+s');
  await expect(page.locator('#version-select')).toHaveValue('2', { timeout: 120_000 });
  await expect(page.getByText('Dry run passed')).toBeVisible({ timeout: 120_000 });

  // Out of the editor: Ctrl-M makes Tab move the focus (as in VS Code), then the Play tab.
  await expect(page.locator('.monaco-editor.focused')).toBeVisible();
  await page.keyboard.press('Control+m');
  const playTab = page.getByRole('tab', { name: 'Play' });
  await tabTo(page, playTab);
  await page.keyboard.press('Enter');
  await expect(playTab).toHaveAttribute('aria-selected', 'true', { timeout: 30_000 });
  await tabTo(page, page.getByRole('button', { name: 'Play an episode' }));
  await page.keyboard.press('Enter');
  const action = page.getByRole('textbox', { name: 'Your action' });
  await tabTo(page, action);
  await page.keyboard.type('C');
  await page.keyboard.press('Enter');
  await expect(page.getByText(/Episode over \(terminated\)\. Return: [01]/)).toBeVisible({ timeout: 60_000 });

  // Back to the bar's Launch…, then the launcher: a changed learning rate, and Launch.
  await tabTo(page, page.getByRole('link', { name: 'Launch…' }), { back: true });
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/launch\?/);
  const learningRate = page.getByLabel('learningRate', { exact: true });
  await tabTo(page, learningRate);
  await page.keyboard.type('0.003');
  await expect(page.getByText(/starts now|waits/)).toBeVisible({ timeout: 60_000 });
  await tabTo(page, page.getByRole('button', { name: 'Launch GRPO' }));
  await page.keyboard.press('Enter');
  await page.waitForURL(new RegExp(`/teams/${teamId}/runs/[^/?]+`), { timeout: 60_000 });
  const jobId = /\/runs\/([^/?]+)/.exec(page.url())![1];
  await expect
    .poll(async () => {
      const job = await jobOf(page, whetstone.url, teamId, jobId);
      return job ? `${job.state} ${job.config.training.learningRate}` : 'none';
    }, { timeout: 180_000 })
    .toMatch(/^(RUNNING|SUCCEEDED) 0\.003$/);
  expect(clicks, 'mouse presses').toBe(0);
  watch.expectClean();
  await context.close();
});

test('an environment served over HTTP: made from its address alone, dry-run on the live server, its page says where it runs', async ({ browser, ownerState, whetstone }) => {
  test.setTimeout(300_000);
  const bandit = await startHttpBandit();
  const context = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const watch = watchPage(page);
  try {
    await page.goto(whetstone.url);
    await page.waitForURL(/\/teams\/[^/]+$/);
    const teamId = teamIdOf(page);
    await page.goto(`${whetstone.url}/teams/${teamId}/environments/new`);
    await page.getByText('Served over HTTP', { exact: true }).click();
    const create = page.getByRole('button', { name: 'Create environment' });
    await page.getByLabel('Name').fill('served-bandit');
    // No server yet, then one that is not http(s): the form says so and will not submit.
    await expect(create).toBeDisabled();
    await page.getByLabel('Server URLs').fill('ftp://example');
    await expect(page.getByText('“ftp://example” is not an http(s) URL.')).toBeVisible();
    await expect(create).toBeDisabled();
    await page.getByLabel('Server URLs').fill(bandit.url);
    await page.getByLabel('Tokens a turn').fill('2');
    await expectAccessible(page, 'new environment served over HTTP');
    await screenshots(page, 'new-http-environment');
    await create.click();
    await page.waitForURL(new RegExp(`/teams/${teamId}/environments/[^/?]+`), { timeout: 120_000 });
    await expect(page.getByText('Dry run passed')).toBeVisible({ timeout: 120_000 });
    expect(bandit.calls.steps).toBeGreaterThan(0);
    await expect(page.getByTestId('served-by')).toContainText(`Served over HTTP by ${bandit.url}`);
    // No code: the editor opens on the manifest that names the server.
    await expect(page.locator('.monaco-editor .view-lines').first()).toContainText('"server"');
    await expectAccessible(page, 'environment served over HTTP');
    await screenshots(page, 'http-environment');
    watch.expectClean();
  } finally {
    await context.close();
    await bandit.close();
  }
});
