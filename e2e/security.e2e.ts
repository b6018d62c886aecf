import type { Page } from '@playwright/test';
import { expect, test, watchPage } from './fixtures';

// The app's own scripts run under the Content-Security-Policy, every script of a page carries
// the answer's nonce, and the installable app: manifest, icons, service worker, and its page for
// a server that does not answer. (The journeys' watchPage fails on any console error, CSP
// violations included; these tests look for violations in particular.)

/** What the browser refused under the CSP, and uncaught errors (a refused script can cause one). */
function watchCsp(page: Page) {
  const refused: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy|Refused to (execute|load|apply|connect|create|evaluate)/i.test(msg.text())) refused.push(msg.text());
  });
  page.on('pageerror', (error) => refused.push(`uncaught: ${error.message}`));
  return { expectNoneRefused: () => expect(refused).toEqual([]) };
}

test('pages run under a nonce CSP: every script carries the answer’s nonce and nothing is refused', async ({ browser, ownerState, whetstone }) => {
  const owner = await browser.newContext({ storageState: ownerState });
  const page = await owner.newPage();
  const csp = watchCsp(page);
  const response = await page.goto(whetstone.url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  await expect(page.getByRole('heading', { level: 1, name: 'Default team' })).toBeVisible();
  expect(response?.headers()['x-content-type-options']).toBe('nosniff');

  for (const path of ['/', '/sign-in', '/~offline']) {
    const answer = await page.request.get(`${whetstone.url}${path}`, { maxRedirects: 0 });
    const policy = answer.headers()['content-security-policy'];
    const nonce = /'nonce-([^']+)'/.exec(policy)?.[1];
    expect(nonce, path).toBeTruthy();
    expect(policy, path).toContain("'strict-dynamic'");
    expect(policy, path).not.toMatch(/script-src[^;]*unsafe-(inline|eval)/);
    const html = await answer.text();
    const scripts = html.match(/<script\b[^>]*>/g) ?? [];
    expect(scripts.length, path).toBeGreaterThan(0);
    for (const tag of scripts) expect(tag, path).toContain(`nonce="${nonce}"`);
  }
  csp.expectNoneRefused();
  await owner.close();
});

test('the editor runs under the CSP: Monaco and its TypeScript worker load from the origin and mark a type error', async ({ browser, ownerState, whetstone }) => {
  const owner = await browser.newContext({ storageState: ownerState });
  const page = await owner.newPage();
  const csp = watchCsp(page);
  await page.goto(whetstone.url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  await page.goto(`${page.url()}/environments`);
  await page.getByRole('link', { name: 'bandit', exact: true }).click();
  const editor = page.locator('.monaco-editor').first();
  await expect(editor).toBeVisible({ timeout: 30_000 });
  await editor.locator('.view-lines').click();
  await page.keyboard.press('ControlOrMeta+End');
  await page.keyboard.type('\nconst wrong: number = "text";\n');
  // The squiggle comes from the TypeScript worker: a worker refused by the CSP would draw none.
  await expect(editor.locator('.squiggly-error').first()).toBeVisible({ timeout: 30_000 });
  csp.expectNoneRefused();
  await owner.close();
});

test('installable: a manifest with icons, a service worker, and a clear page when the server does not answer', async ({ browser, whetstone }) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const manifest = await (await page.request.get(`${whetstone.url}/manifest.webmanifest`)).json();
  expect(manifest).toMatchObject({ name: 'Whetstone', display: 'standalone', start_url: '/' });
  for (const icon of manifest.icons as Array<{ src: string; type: string }>) {
    const answer = await page.request.get(`${whetstone.url}${icon.src}`);
    expect(answer.status(), icon.src).toBe(200);
    expect(answer.headers()['content-type'], icon.src).toContain(icon.type);
  }

  const watch = watchPage(page);
  await page.goto(whetstone.url);
  await expect(page.getByRole('heading', { name: 'Whetstone', level: 1 })).toBeVisible();
  // The worker installs (its precache done) and takes the page.
  const scriptURL = await page.evaluate(async () => (await navigator.serviceWorker.ready).active?.scriptURL);
  expect(scriptURL).toBe(`${whetstone.url}/sw.js`);
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
  watch.expectClean();

  // With the network gone, a page that was never visited opens as the "server unreachable" page.
  await context.setOffline(true);
  await page.goto(`${whetstone.url}/teams/some-team/settings`);
  await expect(page.getByRole('heading', { level: 1, name: 'The server is not answering' })).toBeVisible();
  await expect(page.getByText(`Whetstone's server at ${whetstone.url} is not answering`)).toBeVisible();
  await expect(page.getByText('npm start')).toBeVisible();
  await page.screenshot({ path: test.info().outputPath('offline.png'), fullPage: true });
  // When it answers again, the page opens what was asked for by itself.
  await context.setOffline(false);
  await expect(page.getByRole('heading', { level: 1, name: 'The server is not answering' })).toBeHidden({ timeout: 30_000 });
  expect(page.url()).toBe(`${whetstone.url}/teams/some-team/settings`);
  await context.close();
});
