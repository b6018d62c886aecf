import AxeBuilder from '@axe-core/playwright';
import { expect, test, watchPage } from './fixtures';
import { teamIdOf, trpc } from './helpers';

// A recorded gomoku game as an analysis board: a short training run plays games; one opens in
// the replay at a move from its link, and is stepped through by keyboard alone while the URL
// follows; a move past the end opens at the end; a match of no team of the user is a 404 page.

test('match replay: open at a move from its link, step by keyboard with the URL following, flip, keys, the end, and a 404', async ({ browser, ownerState, whetstone }, testInfo) => {
  test.setTimeout(360_000);
  const url = whetstone.url;
  const context = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const watch = watchPage(page, { expectedStatuses: [404] });
  await page.goto(url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  const teamId = teamIdOf(page);
  const base = `${url}/teams/${teamId}`;

  const environments = await trpc<Array<{ name: string; versions: Array<{ id: string }> }>>(page, url, 'environments.list', 'query', { teamId });
  const gomoku = environments.find((e) => e.name === 'gomoku')!;
  // One small step: two games, with a context the board's observation fits in.
  const job = await trpc<{ id: string }>(page, url, 'jobs.submit', 'mutation', {
    teamId, kind: 'TRAIN',
    config: { environmentVersionId: gomoku.versions[0].id, training: { steps: 1, batchSize: 1, groupSize: 2, checkpointEvery: 100, evalEpisodes: 0, warmStart: null, model: { contextLength: 1024 } } },
  });
  // A game of at least one move (an untrained policy's game may end at its first, invalid, move).
  let match: { id: string; moves: number } | undefined;
  await expect
    .poll(
      async () => {
        const page1 = await trpc<{ matches: Array<{ id: string; moves: number }> }>(page, url, 'runs.teamMatches', 'query', { teamId, jobId: job.id, limit: 50 });
        match = page1.matches.find((m) => m.moves >= 1);
        return match?.id ?? null;
      },
      { timeout: 240_000, intervals: [1_000] },
    )
    .not.toBeNull();
  const total = match!.moves;

  // From the run's matches, the replay; then straight to a move by its link.
  await page.goto(`${base}/matches`);
  await page.getByRole('link', { name: `Replay match ${match!.id}, ${total} moves` }).click();
  await expect(page).toHaveURL(`${base}/matches/${match!.id}`);
  const board = page.getByRole('img', { name: /^Board after/ });
  await expect(board).toHaveAccessibleName(new RegExp(`^Board after ${total} of ${total} moves`));

  await page.goto(`${base}/matches/${match!.id}?move=1`);
  await expect(board).toHaveAccessibleName(/^Board after 1 of /);
  await expect(page.getByRole('heading', { name: 'Move 1' })).toBeVisible();
  await expect(page.locator('.replay-move[aria-current="step"]')).toContainText('1.');

  await page.keyboard.press('ArrowLeft');
  await expect(board).toHaveAccessibleName(/^Board after 0 of /);
  await expect(page.getByRole('heading', { name: 'Before the first move' })).toBeVisible();
  await expect(page).toHaveURL(/[?&]move=0$/);
  await page.keyboard.press('j');
  await expect(page).toHaveURL(/[?&]move=1$/);
  await page.keyboard.press('End');
  await expect(board).toHaveAccessibleName(new RegExp(`^Board after ${total} of `));
  await expect(page).toHaveURL(new RegExp(`[?&]move=${total}$`));
  await page.keyboard.press('Home');
  await expect(page).toHaveURL(/[?&]move=0$/);
  await page.keyboard.press('f');
  await expect(board).toHaveAccessibleName(/flipped$/);
  await page.keyboard.press('?');
  await expect(page.getByRole('region', { name: 'Keys' })).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('region', { name: 'Keys' })).toBeHidden();
  // A click in the move list is the same cursor.
  await page.getByRole('button', { name: /^1\. / }).click();
  await expect(page).toHaveURL(/[?&]move=1$/);

  const { violations } = await new AxeBuilder({ page }).analyze();
  expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    await page.screenshot({ path: testInfo.outputPath(`replay-${colorScheme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: null });

  // Past the end opens at the end; a match that is not the team's is a clear 404 page.
  await page.goto(`${base}/matches/${match!.id}?move=9999`);
  await expect(board).toHaveAccessibleName(new RegExp(`^Board after ${total} of ${total} moves`));
  await page.goto(`${base}/matches/no-such-match`);
  await expect(page.getByRole('heading', { name: 'No such match' })).toBeVisible();

  watch.expectClean();
  await context.close();
});
