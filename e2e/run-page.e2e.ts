import type { Page, Route } from '@playwright/test';
import { expect, test, watchPage } from './fixtures';
import { expectAccessible, shoot, submitTeamRun, trpc } from './helpers';

// The live run page on `npm start`'s embedded default: a GRPO run on bandit, submitted as the CLI
// does, watched from the page while it trains. The reward chart gains points without a reload;
// the page goes offline and back and then holds every step exactly once; a brush re-queries the
// series for the range; a rollout shows trainable and non-trainable tokens in two colours; a
// checkpoint appears; the run is cancelled from its page. A short second run finishes, its header
// links its sampler checkpoint to the playground, and the two are compared. Every wait is on a
// condition.

/**
 * The watched run's steps: more than any machine trains while the checks run, so it is RUNNING for
 * all of them however fast the engine is (400 steps once finished before the refused-refetch check
 * on a quick machine); the test ends it by cancelling.
 */
const LONG_RUN_STEPS = 100_000;

/**
 * Steps the reward panel holds (its table of numbers, once opened): one row per bucket, which is
 * one step each until the run has more steps than the plot has pixels; a row of a range counts
 * each of its steps, so "every step exactly once" holds either way.
 */
function rewardSteps(page: Page): Promise<number[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll('figure[data-metric="reward/mean"] tr[data-step]')].flatMap((r) => {
      const to = Number(r.getAttribute('data-step'));
      const from = Number(r.getAttribute('data-from-step') ?? to);
      return Array.from({ length: to - from + 1 }, (_, i) => from + i);
    }),
  );
}

interface Summary {
  state: string;
  step: number | null;
}

test('live run page: RUNNING, points arrive live, reconnect without gap or duplicate, brush zoom, rollouts, checkpoint, cancel, playground link, compare', async ({ browser, ownerState, whetstone }, testInfo) => {
  test.setTimeout(900_000);
  const url = whetstone.url;
  const context = await browser.newContext({ storageState: ownerState });
  const page = await context.newPage();
  // Offline on purpose: the socket's and the fetches' failures are expected then; the 404 is the other team's run; ERR_FAILED the refused refetches.
  const watch = watchPage(page, { expectedStatuses: [404], expectedErrors: /ERR_INTERNET_DISCONNECTED|ERR_FAILED|WebSocket connection to .* failed|ERR_NETWORK_CHANGED/ });
  const { teamId, base, job, environment: bandit } = await submitTeamRun(page, url, {
    environment: 'bandit',
    training: { algorithm: 'grpo', steps: LONG_RUN_STEPS, batchSize: 2, groupSize: 4, checkpointEvery: 5 },
  });
  const summary = () => trpc<Summary>(page, url, 'runs.summary', 'query', { teamId, jobId: job.id });

  await page.goto(`${base}/runs/${job.id}`);
  await expect(page.getByRole('heading', { level: 1 })).toContainText('running', { timeout: 300_000 });
  await expect(page.getByText(/Running on worker \S+/)).toBeVisible();
  // The page is not reloaded from here on: a mark on the window would be lost.
  await page.evaluate(() => ((window as unknown as { kept: boolean }).kept = true));

  // The reward chart gains points live.
  const reward = page.getByRole('figure', { name: 'reward/mean by step' });
  await expect(reward).toBeVisible({ timeout: 120_000 });
  // Its numbers as a table: one row per step here, which the checks below count.
  await reward.getByText('The numbers as a table').click();
  await expect.poll(async () => (await rewardSteps(page)).length, { timeout: 120_000 }).toBeGreaterThan(0);
  const before = (await rewardSteps(page)).length;
  await expect.poll(async () => (await rewardSteps(page)).length, { timeout: 120_000 }).toBeGreaterThan(before);
  expect(await page.evaluate(() => (window as unknown as { kept?: boolean }).kept)).toBe(true);

  // Offline: the page says so; the run goes on meanwhile (two more steps, seen through the API).
  await context.setOffline(true);
  await expect(page.locator('[data-connection="offline"]')).toBeVisible();
  const heldOffline = Math.max(...(await rewardSteps(page)));
  await expect.poll(async () => (await summary()).step ?? 0, { timeout: 120_000 }).toBeGreaterThan(heldOffline + 2);
  await context.setOffline(false);
  await expect(page.locator('[data-connection]')).toHaveCount(0, { timeout: 60_000 });
  // Back: it caught up, and every step is there exactly once, in order.
  const reached = (await summary()).step ?? 0;
  await expect.poll(async () => Math.max(...(await rewardSteps(page))), { timeout: 120_000 }).toBeGreaterThanOrEqual(reached);
  const steps = await rewardSteps(page);
  expect(steps).toEqual(Array.from({ length: steps.length }, (_, i) => i + 1));
  expect(await page.evaluate(() => (window as unknown as { kept?: boolean }).kept)).toBe(true);

  // The server's answers to the header's live refetches fail for a while (as on a network that is
  // settling): the page keeps what it shows, the open table included, and does not turn into an error.
  let refused = 0;
  const summaries = (u: URL) => u.pathname.includes('runs.summary');
  const refuse = (route: Route) => {
    refused += 1;
    return route.abort('failed');
  };
  await page.route(summaries, refuse);
  await expect.poll(() => refused, { timeout: 60_000 }).toBeGreaterThanOrEqual(4);
  // It says the state shown is not fresh, and clears once an answer comes again.
  await expect(page.getByText(/could not be refreshed/)).toBeVisible();
  await page.unroute(summaries, refuse);
  await expect(page.getByText(/could not be refreshed/)).toBeHidden({ timeout: 60_000 });
  expect((await rewardSteps(page)).length).toBeGreaterThanOrEqual(steps.length);

  // A brush on the reward chart asks runs.series again for the range.
  await reward.scrollIntoViewIfNeeded();
  const box = (await reward.locator('.recharts-surface').boundingBox())!;
  const zoomed = page.waitForRequest((r) => r.url().includes('runs.series') && decodeURIComponent(r.url()).includes('"fromStep"'), { timeout: 60_000 });
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height * 0.5);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5, { steps: 5 });
  await page.mouse.move(box.x + box.width * 0.7, box.y + box.height * 0.5, { steps: 5 });
  await page.mouse.up();
  await zoomed;
  await expect(page).toHaveURL(/zoom=\d+-\d+/);
  await expect(page.getByRole('button', { name: 'Reset zoom' })).toBeVisible();
  await expectAccessible(page, 'run charts');
  await shoot(page, testInfo, 'run-charts');
  await page.getByRole('button', { name: 'Reset zoom' }).click();

  // Rollouts: the transcript's trainable and non-trainable tokens in two colours.
  await page.getByRole('tab', { name: 'Rollouts' }).click();
  const transcript = page.getByLabel('Transcript');
  // The viewer follows the newest step; a sample with no trainable token (flagged) may come first.
  await expect(transcript.locator('[data-trainable="true"]').first()).toBeVisible({ timeout: 60_000 });
  await expect(transcript.locator('[data-trainable="false"]').first()).toBeVisible();
  const colourOf = (trainable: boolean) => transcript.locator(`[data-trainable="${trainable}"]`).first().evaluate((e) => `${getComputedStyle(e).color} ${getComputedStyle(e).backgroundColor}`);
  expect(await colourOf(true)).not.toEqual(await colourOf(false));
  // Coloured token by token by the probability the sampler gave each.
  // (The choice lives in the URL: the radio shows checked once the URL has it.)
  await page.getByRole('radio', { name: 'token probability' }).click();
  await expect(page).toHaveURL(/colour=logprob/);
  await expect(page.getByRole('radio', { name: 'token probability' })).toBeChecked();
  const token = transcript.locator('[data-trainable="true"] [data-logprob]').first();
  await expect(token).toHaveAttribute('title', /^p = (0|1)\.\d{3} \(log-prob -?\d+\.\d{2}\)$/);
  await shoot(page, testInfo, 'run-rollouts-probability');
  await expectAccessible(page, 'run rollouts');
  await shoot(page, testInfo, 'run-rollouts');

  // A checkpoint appears while the run trains.
  await page.getByRole('tab', { name: 'Checkpoints' }).click();
  await expect(page.getByRole('table', { name: 'Checkpoints of this run' }).getByRole('row').nth(1)).toBeVisible({ timeout: 120_000 });

  // Cancelled from its page: the header says so without the page being reloaded.
  await page.getByRole('button', { name: 'Cancel run' }).click();
  await page.getByRole('button', { name: 'Yes, cancel' }).click();
  await expect(page.getByRole('heading', { level: 1 })).toContainText('cancelled', { timeout: 120_000 });
  expect(await page.evaluate(() => (window as unknown as { kept?: boolean }).kept)).toBe(true);

  // A short second run goes to its end; its page, open meanwhile, says so, and links the sampler
  // checkpoint written at the end to the playground (part 3's route).
  const second = await trpc<{ id: string }>(page, url, 'jobs.submit', 'mutation', {
    teamId, kind: 'TRAIN', config: { environmentVersionId: bandit.versions[0].id, training: { algorithm: 'grpo', steps: 4, batchSize: 2, groupSize: 4, checkpointEvery: 4 } },
  });
  await page.goto(`${base}/runs/${second.id}`);
  await expect(page.getByRole('heading', { level: 1 })).toContainText('succeeded', { timeout: 300_000 });
  await expect(page.getByRole('link', { name: /Open step \d+ in playground/ })).toHaveAttribute('href', new RegExp(`/teams/${teamId}/playground/\\w+`), { timeout: 60_000 });

  // The two compared, chosen on the runs list.
  await page.goto(`${base}/runs`);
  // The choice lives in the URL, so a box shows checked once the URL has it.
  for (const id of [job.id, second.id]) {
    await page.getByRole('checkbox', { name: `Compare ${id}` }).click();
    await expect(page.getByRole('checkbox', { name: `Compare ${id}` })).toBeChecked();
  }
  await page.getByRole('link', { name: 'Compare 2 runs' }).click();
  await expect(page).toHaveURL(/\/runs\/compare\?ids=/);
  await expect(page.getByRole('list', { name: 'Runs compared' }).getByRole('listitem')).toHaveCount(2);
  await expect(page.locator('figure[data-metric="reward/mean"]')).toHaveAttribute('data-runs', '2');
  const diff = page.getByRole('table', { name: 'Config differences' });
  await expect(diff.getByRole('row', { name: /training\.steps/ })).toContainText(String(LONG_RUN_STEPS));
  await expect(diff.getByRole('row', { name: /training\.algorithm/ })).toHaveCount(0);
  // The same task, each run's answer side by side (the first run's always has one: the task is its).
  const sameTask = page.getByRole('region', { name: 'Rollouts on the same task' });
  await expect(sameTask.getByRole('region', { name: /^Run \S+ on this task$/ })).toHaveCount(2);
  await expect(sameTask.getByRole('region', { name: `Run ${job.id} on this task` }).getByRole('article')).toBeVisible();
  await expectAccessible(page, 'compare');
  await shoot(page, testInfo, 'compare');

  // Another team's run (or none): a page that says so, no data.
  await page.goto(`${base}/runs/no-such-run`);
  await expect(page.getByRole('heading', { level: 1, name: 'No such run' })).toBeVisible();

  watch.expectClean();
  await context.close();
});
