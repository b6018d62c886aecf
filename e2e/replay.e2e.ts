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
  const { teamId, base, job, environment } = await submitTeamRun(page, url, {
    environment: 'gomoku',
    training: { steps: 4, batchSize: 1, groupSize: 2, checkpointEvery: 100, evalEpisodes: 0, warmStart: null, model: { contextLength: 1024 } },
  });
  const gomokuVersion = environment.versions[0].id;
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

  // A game with a mistake in it, played through the play console's API: black (the user) makes
  // four in a row with an open end, then plays elsewhere (a missed win in one); the replay marks
  // that move, and n jumps to it.
  type Turn = { agent: string; info: { move?: [number, number] } };
  const session = await trpc<{ sessionId: string; history: Turn[] }>(page, url, 'play.open', 'mutation', {
    teamId, source: { versionId: gomokuVersion }, seat: 'black', opponents: { white: { random: true } }, seed: 7,
  });
  const taken = new Set<string>();
  const take = (turns: Turn[]) => turns.forEach((t) => t.info.move && taken.add(t.info.move.join(',')));
  take(session.history);
  const free = (r: number, c: number) => r >= 1 && r <= 9 && c >= 1 && c <= 9 && !taken.has(`${r},${c}`);
  const step = async (r: number, c: number) => {
    const res = await trpc<{ turn: Turn | null; botTurns: Turn[]; done: boolean; matchId?: string }>(page, url, 'play.step', 'mutation', { teamId, sessionId: session.sessionId, action: `<move>${r},${c}</move>` });
    take([...(res.turn ? [res.turn] : []), ...res.botTurns]);
    return res;
  };
  // A row with five free cells in a line: black plays the middle four, one at a time.
  let line: Array<[number, number]> = [];
  for (let stone = 0; stone < 4; stone++) {
    if (line.length === 0 || !line.slice(stone).every(([r, c]) => free(r, c))) {
      const r = [5, 4, 6, 3, 7, 2, 8].find((row) => [2, 3, 4, 5].every((c) => free(row, c)) && (free(row, 1) || free(row, 6)))!;
      line = [[r, 2], [r, 3], [r, 4], [r, 5]];
      stone = 0;
    }
    await step(...line[stone]);
  }
  const [row] = line[0];
  expect(free(row, 1) || free(row, 6), 'black has a win in one').toBe(true);
  // Not the win: a far cell.
  const far = ([[9, 9], [1, 9], [9, 1], [1, 1]] as Array<[number, number]>).find(([r, c]) => free(r, c) && r !== row)!;
  // Every move so far placed a stone: the far move is the next one.
  const farMove = taken.size + 1;
  await step(...far);
  // Then a move on a taken cell ends the game; it is kept as a match.
  const end = await step(...line[0]);
  expect(end.done).toBe(true);
  await page.goto(`${base}/matches/${end.matchId}?move=0`);
  const missed = page.locator('.replay-move-missed-win');
  await expect(missed).toHaveCount(1);
  await expect(missed).toContainText('(missed a win in one)');
  // n goes from mistake to mistake (white's failures to block are marked too) until black's.
  for (let n = 0; n < 6 && !new URL(page.url()).searchParams.get('move')?.match(new RegExp(`^${farMove}$`)); n++) {
    const before = page.url();
    await page.keyboard.press('n');
    await expect(page).not.toHaveURL(before);
  }
  await expect(page).toHaveURL(new RegExp(`[?&]move=${farMove}$`));
  await expect(page.locator('.replay-move[aria-current="step"]')).toHaveClass(/replay-move-missed-win/);
  await expect(page.getByText('?? missed a win in one')).toBeVisible();

  // Past the end opens at the end; a match that is not the team's is a clear 404 page.
  await page.goto(`${base}/matches/${match!.id}?move=9999`);
  await expect(board).toHaveAccessibleName(new RegExp(`^Board after ${total} of ${total} moves`));
  await page.goto(`${base}/matches/no-such-match`);
  await expect(page.getByRole('heading', { name: 'No such match' })).toBeVisible();

  watch.expectClean();
  await context.close();
});
