import fs from 'node:fs';
import type { Page } from '@playwright/test';
import { expect, test, watchPage } from './fixtures';
import { errorNote, expectAccessible, shoot, trpc } from './helpers';

// Environment packages and the gallery from the pages: the owner exports a version of an
// environment from its page and publishes it; in a second team, the file imports by the picker
// with its content hash kept, a changed copy dropped on the list is refused saying why, and the
// gallery shows the published environment with its README and imports it under another name.

/** Drops a file on the element as a browser drag-and-drop does. */
async function dropFile(page: Page, selector: string, name: string, text: string) {
  const transfer = await page.evaluateHandle(
    ({ name, text }) => {
      const dt = new DataTransfer();
      dt.items.add(new File([text], name, { type: 'application/json' }));
      return dt;
    },
    { name, text },
  );
  await page.dispatchEvent(selector, 'dragover', { dataTransfer: transfer });
  await page.dispatchEvent(selector, 'drop', { dataTransfer: transfer });
}

test('packages: export from the environment page, publish, import by picker and by drop into another team, and the gallery', async ({ browser, ownerState, whetstone }, testInfo) => {
  test.setTimeout(300_000);
  const url = whetstone.url;
  const context = await browser.newContext({ storageState: ownerState, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  // The server's refusal of the changed package is a 400 on purpose.
  const watch = watchPage(page, { expectedStatuses: [400] });
  await page.goto(url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  const teamA = /\/teams\/([^/]+)$/.exec(page.url())![1];
  const made = await trpc<{ environmentId: string; versionId: string }>(page, url, 'environments.create', 'mutation', { teamId: teamA, name: 'shared-bandit', from: { template: 'bandit' } });
  const teamB = (await trpc<{ id: string }>(page, url, 'teams.create', 'mutation', { name: 'Importers' })).id;

  // Export from the environment's page: a download of the version as one file.
  await page.goto(`${url}/teams/${teamA}/environments/${made.environmentId}`);
  await expect(page.getByRole('heading', { level: 1, name: 'shared-bandit' })).toBeVisible({ timeout: 60_000 });
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export' }).click()]);
  expect(download.suggestedFilename()).toBe('shared-bandit-v1.wsenv');
  const file = testInfo.outputPath('shared-bandit-v1.wsenv');
  await download.saveAs(file);
  const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { contentHash: string; files: Record<string, string> };
  expect(pkg).toMatchObject({ format: 'whetstone-environment', name: 'shared-bandit' });
  expect(Object.keys(pkg.files)).toContain('README.md');

  // Published by the owner (an admin): the button says it is in the gallery.
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  await expect(page.getByRole('group', { name: /Every team here can then read and import this version/ })).toBeVisible();
  await page.getByRole('button', { name: 'Publish it' }).click();
  await expect(page.getByText('In the gallery')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Take back' })).toBeVisible();
  await shoot(page, testInfo, 'environment-published');

  // Team B's environments: the file by the picker, its content hash kept.
  await page.goto(`${url}/teams/${teamB}/environments`);
  await expect(page.getByRole('heading', { level: 1, name: 'Environments' })).toBeVisible();
  await page.getByLabel('Import package').setInputFiles(file);
  const note = page.getByRole('status').filter({ hasText: 'Imported shared-bandit' });
  await expect(note).toContainText('Imported shared-bandit as version 1, its content hash kept', { timeout: 60_000 });
  await expect(page.getByRole('table').getByRole('link', { name: 'shared-bandit' })).toBeVisible();
  const imported = await trpc<Array<{ name: string; versions: Array<{ id: string }> }>>(page, url, 'environments.list', 'query', { teamId: teamB });
  const version = await trpc<{ contentHash: string }>(page, url, 'environments.version', 'query', { teamId: teamB, versionId: imported[0].versions[0].id });
  expect(version.contentHash).toBe(pkg.contentHash);
  await shoot(page, testInfo, 'environments-imported');

  // A copy changed after export, dropped on the list: refused, and the reason said.
  const changed = JSON.stringify({ ...pkg, files: { ...pkg.files, 'env.ts': `${pkg.files['env.ts']}\n// changed\n` } });
  await dropFile(page, '.package-drop', 'changed.wsenv', changed);
  await expect(errorNote(page)).toContainText('its content hash does not match its files');
  await dropFile(page, '.package-drop', 'notes.txt', 'just some notes');
  await expect(errorNote(page)).toContainText('notes.txt is not a Whetstone environment package');

  // The gallery, from the rail: the published environment, its README, and an import under another name.
  await page.getByRole('link', { name: 'Gallery', exact: true }).first().click();
  await expect(page).toHaveURL(`${url}/teams/${teamB}/gallery`);
  const card = page.getByRole('list', { name: 'Published environments' }).getByRole('listitem').filter({ hasText: 'shared-bandit' });
  await expect(card).toContainText('v1');
  await expectAccessible(page, 'gallery');
  await shoot(page, testInfo, 'gallery');
  await card.getByRole('link', { name: 'shared-bandit' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'shared-bandit' })).toBeVisible();
  await expect(page.getByRole('region', { name: 'README' })).toContainText('Try it in the play console');
  const form = page.getByRole('form', { name: 'Import into Importers' });
  await form.getByLabel('Name in this team').fill('bandit-from-gallery');
  await form.getByRole('button', { name: 'Import' }).click();
  await expect(form.getByRole('status')).toContainText('Imported bandit-from-gallery as version 1, under a new name', { timeout: 60_000 });
  await expectAccessible(page, 'gallery entry');
  await shoot(page, testInfo, 'gallery-entry');
  await form.getByRole('link', { name: 'Open bandit-from-gallery' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'bandit-from-gallery' })).toBeVisible({ timeout: 60_000 });

  // Taken back by the owner: gone from the gallery.
  await trpc(page, url, 'environments.publish', 'mutation', { teamId: teamA, versionId: made.versionId, published: false });
  await page.goto(`${url}/teams/${teamB}/gallery`);
  await expect(page.getByRole('list', { name: 'Published environments' }).getByText('shared-bandit')).toHaveCount(0);

  watch.expectClean();
  await context.close();
});
