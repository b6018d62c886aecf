import AxeBuilder from '@axe-core/playwright';
import { expect, test, watchPage } from './fixtures';
import { shoot, submitTeamRun, trpc } from './helpers';

// A recorded gomoku game as an analysis board: a short training run plays games; one opens in
// the replay at a move from its link, and is stepped through by keyboard alone while the URL
// follows; a move past the end opens at the end; a match of no team of the user is a 404 page.

test('match replay: open at a move from its link, step by keyboard with the URL following, flip, keys, the end, and a 404', async ({ browser, ownerState, whetstone }, testInfo) => {
  test.setTimeout(360_000);
  const url = whetstone.url;
  const context = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const watch = watchPage(page, { expectedStatuses: [404] });
  // A few small steps: two games each, with a context the board's observation fits in.
  const { teamId, base, job } = await submitTeamRun(page, url, {
    environment: 'gomoku',
    training: { steps: 4, batchSize: 1, groupSize: 2, checkpointEvery: 100, evalEpisodes: 0, warmStart: null, model: { contextLength: 1024 } },
  });
  // Watched while it trains: its games tab shows each step's game live, as the board's text.
  await page.goto(`${base}/runs/${job.id}`);
  await page.getByRole('tab', { name: 'Matches' }).click({ timeout: 240_000 });
  const liveBoard = page.getByRole('region', { name: /^Live: a game of step \d+$/ });
  await expect(liveBoard).toBeVisible({ timeout: 120_000 });
  await expect(liveBoard.getByText(/^Position \d+ of \d+/)).toBeVisible();
  await shoot(page, testInfo, 'run-live-board');
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

  // Branch from move 1 with the scripted bot on both sides: a new match, a variation of this one,
  // opening at the move it branched from, and listed under its parent.
  await page.goto(`${base}/matches/${match!.id}?move=1`);
  for (const seat of ['black', 'white']) await page.getByRole('combobox', { name: `Who plays ${seat} after move 1` }).selectOption('bot:scripted');
  await page.getByRole('button', { name: 'Continue from move 1' }).click();
  await expect(page).not.toHaveURL(new RegExp(`/matches/${match!.id}\\?`), { timeout: 60_000 });
  await expect(page).toHaveURL(/\/matches\/[^/?]+\?move=1$/);
  await expect(page.getByText('A variation of')).toBeVisible();
  await page.getByRole('link', { name: 'its parent game' }).click();
  await expect(page.getByRole('link', { name: 'from move 1' })).toBeVisible();

  // The user takes a side of a branch: white from move 1, against the scripted bot, on the board.
  await page.getByRole('combobox', { name: 'Who plays white after move 1' }).selectOption('user');
  await page.getByRole('combobox', { name: 'Who plays black after move 1' }).selectOption('bot:scripted');
  await page.getByRole('button', { name: 'Play white from move 1' }).click();
  const playBoard = page.getByRole('table', { name: 'Board, 9 by 9' });
  await expect(playBoard.getByRole('button', { name: /: black$/ })).toHaveCount(1, { timeout: 60_000 });
  const firstStone = (await playBoard.getByRole('button', { name: /: black$/ }).getAttribute('aria-label'))!.split(':')[0];
  await playBoard.getByRole('button', { name: /: empty$/ }).first().click();
  await page.getByRole('button', { name: 'Send the action' }).click();
  // The user's stone, and the bot's answer.
  await expect(playBoard.getByRole('button', { name: /: white$/ })).toHaveCount(1);
  await expect(playBoard.getByRole('button', { name: /: black$/ })).toHaveCount(2);
  // A move on a taken cell ends the game as the rules say; it is kept as a variation of this match.
  await page.getByRole('textbox', { name: 'Your action' }).fill(`<move>${firstStone}</move>`);
  await page.keyboard.press('Enter');
  await page.getByRole('link', { name: 'Open in the replay' }).click();
  await expect(page.getByText('A variation of')).toBeVisible();

  // Past the end opens at the end; a match that is not the team's is a clear 404 page.
  await page.goto(`${base}/matches/${match!.id}?move=9999`);
  await expect(board).toHaveAccessibleName(new RegExp(`^Board after ${total} of ${total} moves`));
  await page.goto(`${base}/matches/no-such-match`);
  await expect(page.getByRole('heading', { name: 'No such match' })).toBeVisible();

  watch.expectClean();
  await context.close();
});
