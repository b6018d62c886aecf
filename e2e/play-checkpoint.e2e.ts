import { expect, test, watchPage } from './fixtures';
import { expectAccessible, samplerCheckpointOf, shoot, submitTeamRun } from './helpers';

// A checkpoint of the team's as a player: a short gomoku run saves one; in the play console it
// opens as black against the user, then plays a whole episode by itself; in the launcher it is a
// frozen opponent of the mix. Screenshots of each in light and dark.

test('a saved checkpoint plays in the play console and is offered as a frozen opponent in the launcher', async ({ browser, ownerState, whetstone }, testInfo) => {
  test.setTimeout(480_000);
  const url = whetstone.url;
  const context = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const watch = watchPage(page);
  const { teamId, job, environment: gomoku } = await submitTeamRun(page, url, {
    environment: 'gomoku',
    training: { steps: 1, batchSize: 1, groupSize: 2, evalEpisodes: 0, warmStart: null, model: { contextLength: 256 } },
  });
  const checkpointId = await samplerCheckpointOf(page, url, teamId, job.id);

  // The play console: the user plays white, the checkpoint black; it opens with a move.
  await page.goto(`${url}/teams/${teamId}/environments/${gomoku.id}`);
  await page.getByRole('tab', { name: 'Play' }).click();
  await page.getByLabel('You play').selectOption('white');
  await page.getByLabel('black is').selectOption(`checkpoint:${checkpointId}`);
  await page.getByRole('button', { name: 'Play an episode' }).click();
  const log = page.locator('.play-log');
  await expect(log).toContainText(/black · checkpoint train \S+ · step 1 · log-prob -?\d/, { timeout: 60_000 });
  await expect(page.getByLabel('Your action')).toBeVisible();
  await expectAccessible(page, 'play console with a checkpoint');
  await shoot(page, testInfo, 'play-checkpoint');

  // "Let it play": the checkpoint plays black, a bot white, one whole episode.
  await page.getByLabel('Bot or checkpoint that plays').selectOption(`checkpoint:${checkpointId}`);
  await page.getByLabel('black is').selectOption('bot:random');
  await page.getByRole('button', { name: 'Let it play' }).click();
  await expect(page.getByText(/^One episode, seed \d+:$/)).toBeVisible({ timeout: 60_000 });
  await expect(log).toContainText(/white · checkpoint train \S+ · step 1/);
  await shoot(page, testInfo, 'autoplay-checkpoint');

  // The playground, one click: watch the checkpoint play white against the scripted bot; the game
  // opens in the replay, playing move by move.
  await page.goto(`${url}/teams/${teamId}/playground/${checkpointId}`);
  const watchForm = page.getByRole('form', { name: 'Watch a game' });
  await watchForm.getByRole('combobox', { name: 'This checkpoint plays' }).selectOption('white');
  await watchForm.getByRole('combobox', { name: 'against' }).selectOption('bot:scripted');
  await watchForm.getByRole('button', { name: 'Watch them play' }).click();
  await expect(page).toHaveURL(/\/matches\/[^/?]+\?move=\d+/, { timeout: 60_000 });
  await expect(page.getByRole('heading', { level: 1 })).toContainText(/black\s*\(scripted bot\)\s*vs\s*white\s*\(checkpoint/);
  // It opened at the start and plays by itself.
  await expect(page.getByRole('img', { name: /^Board after [1-9]\d* of/ })).toBeVisible({ timeout: 30_000 });

  // Back in the playground: play white against it on the board, three moves, then a move on a taken
  // cell ends the game as the rules say; the game is kept as a match and opens in the replay.
  await page.goBack();
  await expect(page).toHaveURL(new RegExp(`/playground/${checkpointId}$`));
  await page.getByRole('combobox', { name: 'You play' }).selectOption('white');
  await page.getByRole('button', { name: 'Play an episode' }).click();
  const board = page.getByRole('table', { name: 'Board, 9 by 9' });
  await expect(board.getByRole('button', { name: /: black$/ })).toHaveCount(1, { timeout: 60_000 });
  for (let move = 1; move <= 3; move++) {
    await board.getByRole('button', { name: /: empty$/ }).first().click();
    await page.getByRole('button', { name: 'Send the action' }).click();
    await expect(board.getByRole('button', { name: /: white$/ })).toHaveCount(move);
    await expect(board.getByRole('button', { name: /: black$/ })).toHaveCount(move + 1);
  }
  await shoot(page, testInfo, 'playground-game');
  const taken = (await board.getByRole('button', { name: /: black$/ }).first().getAttribute('aria-label'))!.split(':')[0];
  await page.getByRole('textbox', { name: 'Your action' }).fill(`<move>${taken}</move>`);
  await page.keyboard.press('Enter');
  await page.getByRole('link', { name: 'Open in the replay' }).click();
  await expect(page.getByRole('heading', { level: 1 })).toContainText(/black\s*\(checkpoint[^)]*\)\s*vs\s*white\s*\(a person, in the play console\)/);
  // At its end: the seven stones, and the refused move that ended it (kept as the record says).
  await expect(page.getByRole('img', { name: /^Board after (\d+) of \1 moves/ })).toBeVisible();
  expect(await page.locator('.grid-stone').count()).toBe(7);

  // The launcher: the checkpoint is a frozen opponent of the mix.
  await page.goto(`${url}/teams/${teamId}/launch?environment=${gomoku.id}`);
  await page.getByLabel('Opponent to add').selectOption(`checkpoint:${checkpointId}`);
  await expect(page.getByRole('rowheader', { name: /^frozen checkpoint train \S+ · step 1$/ })).toBeVisible();
  await expectAccessible(page, 'launcher with a frozen checkpoint');
  await shoot(page, testInfo, 'launch-checkpoint');
  watch.expectClean();
  await context.close();
});
