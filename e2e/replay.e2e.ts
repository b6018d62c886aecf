import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { expect, test, watchPage } from './fixtures';
import { teamIdOf } from './helpers';

// A recorded gomoku game as an analysis board: a short training run plays games; one opens in
// the replay at a move from its link, and is stepped through by keyboard alone while the URL
// follows; a move past the end opens at the end; a match of no team of the user is a 404 page.

async function trpc<T>(page: Page, url: string, path: string, kind: 'query' | 'mutation', input: unknown): Promise<T> {
  const response =
    kind === 'query'
      ? await page.request.get(`${url}/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`)
      : await page.request.post(`${url}/api/trpc/${path}`, { data: { json: input }, headers: { origin: url } });
  expect(response.ok(), `${path}: ${await response.text()}`).toBe(true);
  return ((await response.json()) as { result: { data: { json: T } } }).result.data.json;
}

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
  const job = await trpc<{ id: string }>(page, url, 'jobs.submit', 'mutation', {
    teamId, kind: 'TRAIN', config: { environmentVersionId: gomoku.versions[0].id, training: { steps: 1, checkpointEvery: 100 } },
  });
  // A game of at least four moves (games of the first step end early only by an invalid move).
  let match: { id: string; moves: number } | undefined;
  await expect
    .poll(
      async () => {
        const page1 = await trpc<{ matches: Array<{ id: string; moves: number }> }>(page, url, 'runs.teamMatches', 'query', { teamId, jobId: job.id, limit: 50 });
        match = page1.matches.find((m) => m.moves >= 4);
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

  await page.goto(`${base}/matches/${match!.id}?move=3`);
  await expect(board).toHaveAccessibleName(/^Board after 3 of /);
  await expect(page.getByRole('heading', { name: 'Move 3' })).toBeVisible();
  await expect(page.locator('.replay-move[aria-current="step"]')).toContainText('3.');

  await page.keyboard.press('ArrowRight');
  await expect(board).toHaveAccessibleName(/^Board after 4 of /);
  await expect(page).toHaveURL(/[?&]move=4$/);
  await page.keyboard.press('k');
  await expect(page).toHaveURL(/[?&]move=3$/);
  await page.keyboard.press('Home');
  await expect(board).toHaveAccessibleName(/^Board after 0 of /);
  await expect(page.getByRole('heading', { name: 'Before the first move' })).toBeVisible();
  await page.keyboard.press('End');
  await expect(page).toHaveURL(new RegExp(`[?&]move=${total}$`));
  await page.keyboard.press('f');
  await expect(board).toHaveAccessibleName(/flipped$/);
  await page.keyboard.press('?');
  await expect(page.getByRole('region', { name: 'Keys' })).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('region', { name: 'Keys' })).toBeHidden();
  // A click in the move list is the same cursor.
  await page.getByRole('button', { name: /^2\. / }).click();
  await expect(page).toHaveURL(/[?&]move=2$/);

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
