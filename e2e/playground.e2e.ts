import { expect, test, watchPage } from './fixtures';
import { expectAccessible, samplerCheckpointOf, shoot, submitTeamRun, trpc } from './helpers';

// The playground, one click from a run's checkpoint: an inference session is placed on the local
// worker, the environment's own prompt is pre-filled, completions stream token by token, and
// pointing at a token shows its probability and the alternatives. Leaving the page ends the session.

test('playground: open a run’s checkpoint, a completion streams, a token’s probability on hover, and leaving ends the session', async ({ browser, ownerState, whetstone }, testInfo) => {
  test.setTimeout(420_000);
  const url = whetstone.url;
  const context = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const watch = watchPage(page, { expectedStatuses: [404] });
  const { teamId, base, job } = await submitTeamRun(page, url, {
    environment: 'gomoku',
    training: { steps: 1, batchSize: 1, groupSize: 2, checkpointEvery: 100, evalEpisodes: 0, warmStart: null, model: { contextLength: 1024 } },
  });
  await samplerCheckpointOf(page, url, teamId, job.id);

  // One click from the run page.
  await page.goto(`${base}/runs/${job.id}`);
  await page.getByRole('link', { name: /Open step \d+ in playground/ }).click();
  await expect(page).toHaveURL(/\/playground\/[^/?]+$/);
  await expect(page.getByRole('heading', { name: /^Playground/ })).toBeVisible();
  // The environment's own first prompt, from its dry run.
  await expect(page.getByRole('textbox', { name: 'System' })).toHaveValue(/Gomoku|gomoku|five/i);
  await expect(page.getByRole('textbox', { name: 'Message' })).not.toHaveValue('');
  await expect(page.getByTestId('session-state')).toContainText('Ready', { timeout: 180_000 });

  // Four samples of up to 120 tokens; the page's token count is recorded at every change, so
  // that a completion seen part-way (some tokens, not yet done) shows it streamed.
  await page.getByRole('textbox', { name: 'Max tokens' }).fill('120');
  await page.getByRole('textbox', { name: 'Samples' }).fill('4');
  await page.evaluate(() => {
    const seen: Array<{ tokens: number; done: boolean }> = [];
    (window as unknown as { seen: typeof seen }).seen = seen;
    new MutationObserver(() => {
      for (const li of document.querySelectorAll('[data-testid="completion"]')) {
        seen.push({ tokens: li.querySelectorAll('[data-testid="token"]').length, done: (li as HTMLElement).dataset.done !== '' });
      }
    }).observe(document.body, { subtree: true, childList: true, attributes: true });
  });
  await page.getByRole('textbox', { name: 'Message' }).press('Control+Enter');
  const completions = page.getByTestId('completion');
  await expect(completions).toHaveCount(4, { timeout: 60_000 });
  await expect(page.locator('[data-testid="completion"][data-done=""]')).toHaveCount(0, { timeout: 120_000 });
  const seen = await page.evaluate(() => (window as unknown as { seen: Array<{ tokens: number; done: boolean }> }).seen);
  expect(seen.some((s) => s.tokens > 0 && !s.done), 'a completion was drawn before its end').toBe(true);
  await expect(completions.first()).toContainText(/seed \d+ · \d+ tokens/);

  // Pointing at a token: its probability and the likeliest alternatives.
  const longest = completions.filter({ has: page.getByTestId('token') }).first();
  await longest.getByTestId('token').first().hover();
  await expect(longest.getByTestId('token-inspector')).toContainText('%');
  await expect(longest.getByTestId('token-inspector')).toContainText('likeliest here');
  // The same by keyboard: focus the text, step with →.
  await longest.getByRole('group').focus();
  await page.keyboard.press('ArrowRight');
  await expect(longest.getByTestId('token-inspector')).toContainText('log-prob');
  await page.getByLabel('Colour by probability').check();
  await expect(page.locator('.token-text-colour').first()).toBeVisible();

  await expectAccessible(page, 'playground');
  await longest.getByTestId('token').nth(2).hover();
  await page.evaluate(() => window.scrollTo(0, 0));
  await shoot(page, testInfo, 'playground');

  // Leaving the page ends the session: its job is cancelled.
  const sessions = await trpc<{ runs: Array<{ id: string; kind: string; state: string }> }>(page, url, 'runs.list', 'query', { teamId, kinds: ['INFERENCE'], limit: 5 });
  const session = sessions.runs.find((r) => r.state === 'RUNNING')!;
  await page.getByRole('link', { name: 'Checkpoints' }).first().click();
  await expect(page).toHaveURL(`${base}/checkpoints`);
  await expect
    .poll(async () => (await trpc<{ state: string }>(page, url, 'runs.summary', 'query', { teamId, jobId: session.id })).state, { timeout: 60_000 })
    .toBe('CANCELLED');

  await page.goBack();
  await expect(page).toHaveURL(/\/playground\/[^/?]+$/);
  // Play against the model on the board: three moves as black (the checkpoint, preferred, plays
  // white), then a word that is no move, which forfeits as gomoku's rules say; the game is kept
  // as a match, and opens in the replay.
  const play = page.getByRole('region', { name: /^Play gomoku with this checkpoint/ });
  await play.getByLabel('You play').selectOption('black');
  await expect(play.getByLabel('white is')).toHaveValue(/^checkpoint:/);
  await play.getByRole('button', { name: 'Play an episode' }).click();
  for (let i = 1; i <= 3; i++) {
    await play.getByRole('button', { name: /: empty$/ }).first().click();
    await play.getByRole('button', { name: 'Send the action' }).click();
    await expect(play.locator('.board .cell.stone')).toHaveCount(2 * i, { timeout: 60_000 });
  }
  await play.getByLabel('Your action').fill('I pass');
  await play.getByRole('button', { name: 'Send the action' }).click();
  await play.getByRole('link', { name: 'Open in the replay' }).click();
  await expect(page).toHaveURL(/\/matches\/[^/?]+$/);
  await expect(page.getByRole('img', { name: /^Board after 7 of 7 moves/ })).toBeVisible();
  await expect(page.getByText('white won')).toBeVisible();

  // Leaving for the replay ended that page's session too: nothing holds the worker.
  await expect
    .poll(async () => (await trpc<{ runs: Array<{ state: string }> }>(page, url, 'runs.list', 'query', { teamId, kinds: ['INFERENCE'], states: ['QUEUED', 'ASSIGNED', 'RUNNING'], limit: 5 })).runs.length, { timeout: 60_000 })
    .toBe(0);

  // A checkpoint of no team of the user is a clear 404 page.
  await page.goto(`${base}/playground/no-such-checkpoint`);
  await expect(page.getByRole('heading', { name: 'No such checkpoint' })).toBeVisible();

  watch.expectClean();
  await context.close();
});
