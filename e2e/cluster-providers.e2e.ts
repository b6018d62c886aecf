import type { Locator, Page } from '@playwright/test';
import { expect, test, watchPage } from './fixtures';
import { expectAccessible, shoot, teamIdOf, trpc } from './helpers';

// Issue 22's cluster page: an admin creates a Slurm provider through the form (a bad partition is
// named at its field first), sees its agent credential once with the agent's command, then the
// agent's polls (as gpu-worker/provider-agent.ts makes them) bring a launch pending for Slurm's
// "Resources" and one sbatch refused, which the card shows with the error and the backoff.

async function poll(page: Page, url: string, token: string, reports: unknown[] = []) {
  const response = await page.request.post(`${url}/api/providers/poll`, {
    headers: { authorization: `Bearer ${token}` },
    data: { agent: { host: 'login-1', version: 'e2e' }, reports },
  });
  expect(response.status(), await response.text()).toBe(200);
  return (await response.json()) as { orders: Array<{ type: string; launchId: string }> };
}

/** The section alone, in light and dark. */
async function shootSection(page: Page, section: Locator, name: string, testInfo: { outputPath: (name: string) => string }) {
  // Clipped from the whole page scrolled to its top: an element's own screenshot scrolls it under
  // the sticky top bar.
  await page.evaluate(() => window.scrollTo(0, 0));
  const clip = (await section.boundingBox())!;
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    await page.screenshot({ path: testInfo.outputPath(`${name}-${colorScheme}.png`), fullPage: true, clip });
  }
  await page.emulateMedia({ colorScheme: null });
}

test('cluster providers: create through the form, credential once, a pending launch with Slurm’s reason and a refused one', async ({ browser, ownerState, whetstone }, testInfo) => {
  test.setTimeout(240_000);
  const url = whetstone.url;
  const context = await browser.newContext({ storageState: ownerState });
  const page = await context.newPage();
  const watch = watchPage(page);
  await page.goto(url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  const teamId = teamIdOf(page);
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Cluster' }).click();
  const section = page.getByRole('region', { name: 'Cluster providers', exact: true });

  // Empty: says what a provider is for and what to do.
  await expect(section.getByRole('heading', { name: 'No cluster provider' })).toBeVisible();
  await expect(section).toContainText('Workers start only by hand');
  await expect(section.getByRole('link', { name: 'Workers' })).toHaveAttribute('href', `/teams/${teamId}/workers`);
  // The shared pool's providers: the owner is the installation admin.
  await expect(page.getByRole('region', { name: 'Shared pool: cluster providers' })).toBeVisible();

  // The form, by keyboard where it counts: a bad partition is refused at its field before anything is sent.
  await section.getByRole('button', { name: 'New provider' }).click();
  const form = section.getByRole('form', { name: 'New Slurm provider' });
  await expect(form.getByLabel('Name')).toBeFocused();
  await form.getByLabel('Name').fill('e2e-slurm');
  await form.getByLabel('Partition').fill('gpu; rm -rf /');
  await form.getByLabel('Install path').fill('/shared/whetstone');
  // The schema's defaults are filled in.
  await expect(form.getByLabel('Max pending launches')).toHaveValue('2');
  await expect(form.getByLabel('Time limit')).toHaveValue('1-00:00:00');
  await form.getByLabel('Devices per worker').fill('2');
  await form.getByRole('button', { name: 'Create provider' }).click();
  const partition = form.getByLabel('Partition');
  await expect(partition).toHaveAttribute('aria-invalid', 'true');
  await expect(partition).toBeFocused();
  await expect(partition).toHaveAccessibleDescription(/^Letters, digits, _ \. \+ - \(at most 64\)/);
  await expectAccessible(page, 'provider form with a field error');
  await shootSection(page, section, 'providers-form-error', testInfo);
  await partition.fill('gpu');
  await partition.press('Enter');

  // The credential, once, with the agent's exact command.
  const secret = section.getByRole('region', { name: 'Agent credential of “e2e-slurm”' });
  const token = await secret.getByRole('textbox').inputValue();
  expect(token).toMatch(/^wsp_/);
  await expect(secret.getByRole('button', { name: 'Copy', exact: true })).toBeVisible();
  await expect(secret.getByLabel('Agent command')).toHaveText(`WHETSTONE_PROVIDER_TOKEN=${token} npx whetstone provider slurm --server ${url}`);
  const card = section.getByRole('article', { name: 'e2e-slurm' });
  await expect(card).toContainText('never polled. Run this on a login node');
  await expect(card.locator('.agent-command')).toHaveText(/^WHETSTONE_PROVIDER_TOKEN=wsp_… npx whetstone provider slurm --server http/);
  await expect(card.getByRole('definition')).toContainText(['gpu', 'none', '4', '2', '2 CUDA', '300']);
  await expectAccessible(page, 'provider created, credential shown');
  await shootSection(page, section, 'providers-created', testInfo);
  await secret.getByRole('button', { name: 'Done' }).click();
  await expect(secret).toHaveCount(0);
  // Not shown again, nor anywhere on the page after a reload.
  await page.reload();
  await expect(card).toBeVisible();
  expect(await page.content()).not.toContain(token);

  // Edit: the settings form, filled with the provider's, saved.
  await card.getByRole('button', { name: 'Edit settings of e2e-slurm' }).click();
  const edit = card.getByRole('form', { name: 'Settings of e2e-slurm' });
  await expect(edit.getByLabel('Partition')).toHaveValue('gpu');
  await edit.getByLabel('Max workers').fill('6');
  await edit.getByLabel('Device kind').selectOption('CPU');
  await edit.getByRole('button', { name: 'Save settings' }).click();
  await expect(edit).toHaveCount(0);
  await expect(card.getByRole('button', { name: 'Edit settings of e2e-slurm' })).toBeFocused();
  await expect(card.getByRole('definition')).toContainText(['gpu', 'none', '6', '2', '2 CPU', '300']);

  // Two jobs of two devices wait (the local worker has one): the agent's poll gets two launches.
  const environments = await trpc<Array<{ name: string; versions: Array<{ id: string }> }>>(page, url, 'environments.list', 'query', { teamId });
  const version = environments.find((e) => e.name === 'gomoku')!.versions[0].id;
  const jobs: Array<{ id: string }> = [];
  try {
    for (let i = 0; i < 2; i += 1) jobs.push(await trpc<{ id: string }>(page, url, 'jobs.submit', 'mutation', { teamId, kind: 'TRAIN', deviceCount: 2, config: { environmentVersionId: version } }));
    let launches: Array<{ launchId: string }> = [];
    await expect
      .poll(async () => {
        launches = (await poll(page, url, token)).orders.filter((o) => o.type === 'launch');
        return launches.length;
      }, { timeout: 60_000, intervals: [1_000] })
      .toBe(2);
    await expect(card).toContainText(/Agent: last poll \d+ s ago/);
    const live = card.getByRole('table', { name: 'Launches of e2e-slurm' });
    await expect(live.getByRole('row')).toHaveCount(3);
    await expect(live).toContainText('submitting');

    // Slurm queued one (its reason in Slurm's words) and refused the other.
    const refused = 'sbatch: error: Batch job submission failed: Invalid partition name specified';
    await poll(page, url, token, [
      { launchId: launches[0].launchId, externalId: '4242', state: 'PENDING', reason: 'Resources' },
      { launchId: launches[1].launchId, state: 'FAILED', reason: refused },
    ]);
    const pendingRow = live.getByRole('row', { name: /pending/ });
    await expect(pendingRow).toContainText('4242');
    await expect(pendingRow).toContainText('Resources');
    await expect(pendingRow).toContainText('not registered yet');
    await expect(live.getByRole('row')).toHaveCount(2);
    await expect(card.locator('.provider-error')).toContainText(`Last error (1 failed in a row): the cluster refused the launch: ${refused}`);
    await expect(card.locator('.provider-error')).toContainText(/No launch before .* \(in \d+ s\)/);
    // Ended launches stay folded until asked for, by keyboard.
    const ended = card.getByRole('table', { name: 'Ended launches of e2e-slurm' });
    await expect(ended).toBeHidden();
    await card.getByText('Ended launches (1)').focus();
    await page.keyboard.press('Enter');
    await expect(ended.getByRole('row', { name: /failed/ })).toContainText(refused);
    await expectAccessible(page, 'cluster providers with launches');
    await shootSection(page, section, 'providers-launches', testInfo);
    await shoot(page, testInfo, 'cluster-page-providers');

    // Delete, with a confirmation.
    await card.getByRole('button', { name: 'Delete provider e2e-slurm' }).click();
    await section.getByRole('button', { name: 'Yes, delete' }).click();
    await expect(card).toHaveCount(0);
    await expect(section.getByRole('heading', { name: 'No cluster provider' })).toBeVisible();
    await shootSection(page, section, 'providers-empty', testInfo);
  } finally {
    for (const job of jobs) await trpc(page, url, 'jobs.cancel', 'mutation', { teamId, jobId: job.id });
  }
  watch.expectClean();
  await context.close();
});
