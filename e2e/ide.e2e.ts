import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { expect, test, watchPage } from './fixtures';
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
  await page.keyboard.type('\nconst broken: number = "text";\n');
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
