import { expect, test, watchPage } from './fixtures';
import { expectAccessible, shoot, submitTeamRun, trpc } from './helpers';

// The team's sections with real data: a dataset uploaded through the page (first with a bad line,
// which the page names, then fixed), a short gomoku training run (so there are a run, checkpoints
// and games) started through the API as the CLI does, and each page checked for its content, for
// accessibility (axe: no serious or critical violation) and shot in both themes.

test('the team’s sections: datasets with a bad line then fixed, runs, a run’s status, cluster, checkpoints, matches', async ({ browser, ownerState, whetstone }, testInfo) => {
  test.setTimeout(360_000);
  const url = whetstone.url;
  const context = await browser.newContext({ storageState: ownerState });
  const page = await context.newPage();
  // The refused upload is a 400 on purpose (Chromium logs it).
  const watch = watchPage(page, { expectedStatuses: [400] });
  // A short gomoku run, submitted as `whetstone run` does; it plays games while it trains.
  const { teamId, base, job, environment } = await submitTeamRun(page, url, {
    environment: 'gomoku',
    training: { steps: 2, checkpointEvery: 1, evalEvery: 1, evalEpisodes: 8, warmStart: null },
    tags: ['e2e-sections'],
  });

  // Datasets: a file with a bad line is refused line by line, and nothing is lost.
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Datasets' }).click();
  await expect(page).toHaveURL(`${base}/datasets`);
  const upload = page.getByRole('form', { name: 'Upload a dataset' });
  const good = ['{"prompt": "1+1=", "completion": "2"}', '{"prompt": "<script>window.pwned = 1</script>", "completion": "<img src=x onerror=\\"window.pwned = 1\\">"}'];
  await upload.getByLabel('Choose file').setInputFiles({ name: 'e2e-sums.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from([good[0], '{"prompt": "2+2=", "completion": ', good[1]].join('\n')) });
  await expect(upload.getByLabel('Name', { exact: true })).toHaveValue('e2e-sums.jsonl');
  await upload.getByLabel('Description (optional)').fill('sums for the e2e test');
  await upload.getByRole('button', { name: 'Upload' }).click();
  const refused = upload.getByRole('alert');
  await expect(refused).toContainText('1 line has a problem');
  await expect(refused.getByRole('list', { name: 'Problems by line' }).getByRole('listitem')).toHaveText([/^line 2\s*not JSON/]);
  await expect(upload.getByText('e2e-sums.jsonl', { exact: true })).toBeVisible();
  await expect(upload.getByLabel('Name', { exact: true })).toHaveValue('e2e-sums.jsonl');
  await expect(upload.getByLabel('Description (optional)')).toHaveValue('sums for the e2e test');
  await expectAccessible(page, 'datasets, refused upload');

  // Fixed, the same file goes through.
  await upload.getByLabel('Choose file').setInputFiles({ name: 'e2e-sums.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from([good[0], '{"prompt": "2+2=", "completion": "4"}', good[1]].join('\n')) });
  await upload.getByRole('button', { name: 'Upload' }).click();
  await expect(upload.getByText(/Stored e2e-sums\.jsonl version 1: 3 rows/)).toBeVisible();
  await expect(page.getByRole('table', { name: 'Datasets' }).getByRole('row', { name: /e2e-sums\.jsonl/ })).toContainText('3');
  await expectAccessible(page, 'datasets');
  await shoot(page, testInfo, 'datasets');

  // Its page: the version, and its rows as text (the planted markup shows, and nothing ran).
  await upload.getByRole('link', { name: 'Open it' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'e2e-sums.jsonl' })).toBeVisible();
  await expect(page.getByRole('table', { name: 'Versions' }).getByRole('row')).toHaveCount(2);
  const rows = page.getByRole('list', { name: 'Rows 1 to 3' });
  await expect(rows.getByRole('listitem')).toHaveCount(3);
  await expect(rows).toContainText('<script>window.pwned = 1</script>');
  expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
  await expectAccessible(page, 'dataset');
  await shoot(page, testInfo, 'dataset');

  // Runs: the gomoku run is listed; its page shows it through to the end.
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Runs' }).click();
  await expect(page).toHaveURL(`${base}/runs`);
  const runsTable = page.getByRole('table', { name: 'Runs' });
  await expect(runsTable.getByRole('row', { name: new RegExp(job.id) })).toContainText('gomoku');
  // Narrowed by its tag (a chip on its row), then by environment and owner; nothing fits a tag no run has.
  await runsTable.getByRole('row', { name: new RegExp(job.id) }).getByRole('link', { name: 'e2e-sections' }).click();
  await expect(page).toHaveURL(/[?&]tag=e2e-sections/);
  await expect(runsTable.getByRole('row')).toHaveCount(2);
  await expect(page.getByRole('textbox', { name: 'Tag' })).toHaveValue('e2e-sections');
  await page.getByRole('combobox', { name: 'Environment' }).selectOption({ label: 'gomoku' });
  await page.getByRole('combobox', { name: 'Owner' }).selectOption({ index: 1 });
  // Chosen one after the other at once, the three stay together in the URL and the fields.
  await expect(page).toHaveURL(/(?=.*[?&]tag=e2e-sections)(?=.*[?&]environment=)(?=.*[?&]owner=)/);
  await expect(page.getByRole('combobox', { name: 'Environment' })).toHaveValue(/.+/);
  await expect(runsTable.getByRole('row', { name: new RegExp(job.id) })).toBeVisible();
  await expectAccessible(page, 'runs, filtered');
  await shoot(page, testInfo, 'runs-filtered');
  await page.getByRole('textbox', { name: 'Tag' }).fill('no-run-has-this-tag');
  await expect(page.getByRole('heading', { name: 'No run fits these filters' })).toBeVisible();
  await page.getByRole('button', { name: 'Clear filters' }).last().click();
  await expect(page).toHaveURL(`${base}/runs`);
  await expect(page.getByRole('textbox', { name: 'Tag' })).toHaveValue('');
  await expect(runsTable.getByRole('row', { name: new RegExp(job.id) })).toBeVisible();
  await expectAccessible(page, 'runs');
  await page.getByRole('link', { name: `Run ${job.id}` }).click();
  await expect(page).toHaveURL(`${base}/runs/${job.id}`);
  await expect(page.getByRole('heading', { level: 1 })).toContainText('succeeded', { timeout: 240_000 });
  await expect(page.getByRole('tab', { name: 'Charts' })).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByRole('figure', { name: 'reward/mean by step' })).toBeVisible();
  await expectAccessible(page, 'run');
  await shoot(page, testInfo, 'run');
  // Tabs by keyboard: → moves to Rollouts, and the URL keeps it.
  await page.getByRole('tab', { name: 'Charts' }).focus();
  await page.keyboard.press('ArrowRight');
  await expect(page).toHaveURL(`${base}/runs/${job.id}?tab=rollouts`);
  await page.getByRole('tab', { name: 'Events' }).click();
  await expect(page.getByText(/by the worker/).first()).toBeVisible();
  await page.getByRole('tab', { name: 'Config' }).click();
  await expect(page).toHaveURL(`${base}/runs/${job.id}?tab=config`);
  await expect(page.getByRole('heading', { name: 'Optimiser' })).toBeVisible();
  await expectAccessible(page, 'run config');
  await page.getByRole('tab', { name: 'Checkpoints' }).click();
  await expect(page.getByRole('table', { name: 'Checkpoints of this run' }).getByRole('row').nth(1)).toBeVisible();
  await page.getByRole('tab', { name: 'Matches' }).click();
  await expect(page.getByRole('table', { name: 'Games of this run' }).getByRole('row').nth(1)).toBeVisible();
  await page.getByRole('tab', { name: 'Logs' }).click();
  await expect(page.getByRole('tabpanel')).toBeVisible();
  // Searched: only the lines that say it, the words marked, and how many of all.
  const log = page.getByRole('log', { name: 'Log' });
  await expect(log).toContainText('training checkpoint after step');
  await page.getByRole('searchbox', { name: 'Search the log' }).fill('CHECKPOINT after');
  await expect(page.getByRole('status').filter({ hasText: /^\d+ of \d+ lines$/ })).toBeVisible();
  await expect(log.locator('mark').first()).toHaveText('checkpoint after');
  for (const line of await log.locator('.log-line').allTextContents()) expect(line.toLowerCase()).toContain('checkpoint after');
  await expect(page).toHaveURL(/logq=CHECKPOINT/);
  await page.getByRole('combobox', { name: 'Log level' }).selectOption('error');
  await expect(page.getByText(/^No line matches “CHECKPOINT after” at errors\.$/)).toBeVisible();
  await expectAccessible(page, 'run logs');

  // Cluster: the local worker and its device; the team's usage.
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Cluster' }).click();
  await expect(page.getByRole('table', { name: 'Workers' })).toContainText('local');
  await expect(page.getByRole('meter', { name: 'Devices in use' })).toBeVisible();
  // The last 24 hours: this journey's run held the local worker's device for a while.
  await expect(page.getByRole('figure', { name: 'Devices in use, hour by hour, over the last 24 hours' })).toContainText(/Last 24 hours: \d+\.\d device-hours/);
  expect(await page.locator('.usage-chart .recharts-bar-rectangle').count()).toBeGreaterThan(0);
  await expect(page.getByText('Nothing running or waiting.')).toBeVisible();
  await expectAccessible(page, 'cluster');
  await shoot(page, testInfo, 'cluster');
  // A job no worker can take (two devices; the local worker has one) waits in the queue with the
  // scheduler's reason in words; an admin cancels it from here.
  const waiting = await trpc<{ id: string }>(page, url, 'jobs.submit', 'mutation', { teamId, kind: 'TRAIN', deviceCount: 2, config: { environmentVersionId: environment.versions[0].id } });
  const queueTable = page.getByRole('table', { name: 'Queue' });
  await expect(queueTable.getByRole('row', { name: new RegExp(waiting.id) })).toContainText('No online worker available to this team has 2 devices', { timeout: 60_000 });
  await shoot(page, testInfo, 'cluster-queued');
  await queueTable.getByRole('button', { name: `Cancel ${waiting.id}` }).click();
  await page.getByRole('button', { name: 'Yes, cancel' }).click();
  await expect(page.getByText('Nothing running or waiting.')).toBeVisible({ timeout: 30_000 });
  // With the local worker drained (stopped, as far as new work goes), a job it could run waits, and
  // the reason names it; resumed, it takes the job. It is the shared pool's worker: the owner
  // manages it as the installation admin.
  const workersTable = page.getByRole('table', { name: 'Workers' });
  const [local] = await trpc<Array<{ id: string; name: string }>>(page, url, 'workers.list', 'query', { teamId });
  await workersTable.getByRole('button', { name: `Drain ${local.name}` }).click();
  await page.getByRole('button', { name: 'Yes, drain' }).click();
  const resume = workersTable.getByRole('button', { name: `Resume ${local.name}` });
  let held: { id: string } | null = null;
  try {
    await expect(resume).toBeVisible();
    held = await trpc<{ id: string }>(page, url, 'jobs.submit', 'mutation', { teamId, kind: 'TRAIN', config: { environmentVersionId: environment.versions[0].id, training: { steps: 1, warmStart: null, evalEpisodes: 0 } } });
    const heldRow = queueTable.getByRole('row', { name: new RegExp(held.id) });
    await expect(heldRow).toContainText(`worker ${local.name} would, but is draining`, { timeout: 60_000 });
    await shoot(page, testInfo, 'cluster-drained');
    await resume.click();
    await expect(workersTable.getByRole('button', { name: `Drain ${local.name}` })).toBeVisible();
    // Placed on the worker: it leaves the queue.
    await expect(heldRow).toHaveCount(0, { timeout: 60_000 });
  } finally {
    // The worker serves the journeys after this one.
    if (await resume.isVisible()) await trpc(page, url, 'workers.resume', 'mutation', { teamId, workerId: local.id });
    if (held) await trpc(page, url, 'jobs.cancel', 'mutation', { teamId, jobId: held.id });
  }

  // Checkpoints and matches, team-wide, each leading back to the run.
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Checkpoints' }).click();
  const checkpoints = page.getByRole('table', { name: 'Checkpoints' });
  await expect(checkpoints.getByRole('link', { name: job.id }).first()).toBeVisible();
  await expectAccessible(page, 'checkpoints');
  await shoot(page, testInfo, 'checkpoints');
  // A checkpoint named as a base: the name is checked as typed, then the base leads the Bases
  // list with its card, and the launcher offers it first.
  await expect(page.getByText('No bases yet.')).toBeVisible();
  // The journey's own run's checkpoint (the run the cluster step let through may have written one since).
  await checkpoints.getByRole('row').filter({ hasText: job.id }).first().getByRole('button', { name: /^Name checkpoint/ }).click();
  await page.getByRole('textbox', { name: 'Base name' }).fill('Not A Name');
  await expect(page.getByText('a base name is 1 to 63 lower-case letters')).toBeVisible();
  await page.getByRole('textbox', { name: 'Base name' }).fill('e2e-base');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  const bases = page.getByRole('table', { name: 'Bases' });
  await expect(bases.getByRole('row').nth(1)).toContainText('e2e-base');
  await expect(bases.getByRole('row').nth(1)).toContainText(job.id);
  await expectAccessible(page, 'checkpoints with a base');
  await shoot(page, testInfo, 'checkpoints-bases');
  await page.goto(`${base}/launch`);
  await expect(page.locator('#l-start optgroup[label="Bases"] option')).toHaveText([/^e2e-base · step \d+ · gomoku v\d+$/]);
  await page.goBack();
  await page.getByRole('link', { name: 'Training' }).click();
  await expect(page).toHaveURL(`${base}/checkpoints?kind=training`);
  await expect(checkpoints.getByRole('row').nth(1)).toContainText('training');

  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Matches' }).click();
  const matches = page.getByRole('table', { name: 'Matches' });
  await expect(matches.getByRole('link', { name: job.id }).first()).toBeVisible();
  await expectAccessible(page, 'matches');
  await shoot(page, testInfo, 'matches');
  // A filter nothing fits: the empty state says so and clears them in one click.
  await page.getByRole('textbox', { name: 'Played by' }).fill('nobody-plays-like-this');
  await expect(page.getByRole('heading', { name: 'No match fits these filters' })).toBeVisible();
  await expect(page).toHaveURL(/player=nobody-plays-like-this/);
  await page.getByRole('button', { name: 'Clear filters' }).last().click();
  await expect(matches.getByRole('link', { name: job.id }).first()).toBeVisible();
  await expect(page.getByRole('textbox', { name: 'Played by' })).toHaveValue('');
  await expect(page).not.toHaveURL(/player=/);
  await matches.getByRole('link', { name: job.id }).first().click();
  await expect(page).toHaveURL(`${base}/runs/${job.id}?tab=matches`);

  watch.expectClean();
  await context.close();
});
