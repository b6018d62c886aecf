import { expect, test, watchPage } from './fixtures';
import { expectAccessible, samplerCheckpointOf, shoot, submitTeamRun } from './helpers';

// A checkpoint tournament from the page: two checkpoints of gomoku (two one-step runs) and the
// random bot, 4 games a pairing; the pairings run as evaluation jobs on the local worker, and the
// Elo table and the cross-table fill in.

test('tournament: two checkpoints and the random bot, 4 games a pairing, give an Elo table and a cross-table', async ({ browser, ownerState, whetstone }, testInfo) => {
  test.setTimeout(600_000);
  const url = whetstone.url;
  const context = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const watch = watchPage(page);
  const training = { steps: 1, batchSize: 1, groupSize: 2, checkpointEvery: 100, evalEpisodes: 0, warmStart: null, model: { contextLength: 1024 } };
  const one = await submitTeamRun(page, url, { environment: 'gomoku', training: { ...training, seed: 1 } });
  const two = await submitTeamRun(page, url, { environment: 'gomoku', training: { ...training, seed: 2 } });
  const { teamId, base, environment: gomoku } = one;
  const runs = [one.job.id, two.job.id];
  const samplers = [await samplerCheckpointOf(page, url, teamId, runs[0]), await samplerCheckpointOf(page, url, teamId, runs[1])];

  await page.getByRole('link', { name: 'Tournaments' }).click();
  await expect(page).toHaveURL(`${base}/tournaments`);
  await page.getByRole('combobox', { name: 'Game', exact: true }).selectOption(gomoku.id);
  for (const jobId of runs) await page.getByRole('checkbox', { name: new RegExp(`of run ${jobId}`) }).check();
  await page.getByRole('checkbox', { name: /^random/ }).check();
  await page.getByRole('textbox', { name: 'Games a pairing' }).fill('4');
  await expect(page.getByText('3 pairings of 4 games')).toBeVisible();
  await page.getByRole('button', { name: 'Start tournament' }).click();
  await expect(page).toHaveURL(/\/tournaments\/[0-9a-f-]{36}$/);

  await expect(page.getByRole('status').filter({ hasText: 'pairings done' })).toContainText('3 of 3 pairings done', { timeout: 420_000 });
  const elo = page.getByRole('table', { name: 'Elo table' });
  await expect(elo.getByRole('row')).toHaveCount(4);
  await expect(elo).toContainText('random (bot)');
  await expect(elo).toContainText('±');
  // Every pairing played its 4 games (an errored game would be named in its cell).
  await expect(page.getByRole('status').filter({ hasText: 'pairings done' })).toContainText('12 games played of 12');
  const cross = page.getByRole('table', { name: /^Cross-table/ });
  await expect(cross.getByRole('link')).toHaveCount(6);

  await expectAccessible(page, 'tournament');
  await shoot(page, testInfo, 'tournament');
  // A cell opens that pairing's games.
  await cross.getByRole('link').first().click();
  await expect(page).toHaveURL(/\/runs\/[^/?]+\?tab=matches$/);
  await page.goto(`${base}/tournaments`);
  await expect(page.getByRole('table', { name: 'Tournaments' })).toContainText('3 of 3');

  // A checkpoint's games, from the matches list's filter: the 8 it played here (and none else of its).
  await page.goto(`${base}/matches?checkpoint=${samplers[0]}`);
  await expect(page.getByRole('table', { name: 'Matches' }).getByRole('row')).toHaveCount(9);
  await page.getByRole('textbox', { name: 'Moves from' }).fill('100000');
  await expect(page.getByText('No match fits these filters')).toBeVisible();
  await shoot(page, testInfo, 'matches-filtered-empty');
  await page.getByRole('textbox', { name: 'Moves from' }).fill('');
  await expect(page.getByRole('table', { name: 'Matches' }).getByRole('row')).toHaveCount(9);
  await shoot(page, testInfo, 'matches-filtered');
  await shoot(page, testInfo, 'tournaments');

  watch.expectClean();
  await context.close();
});
