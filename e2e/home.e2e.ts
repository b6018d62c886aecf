import { expect, test, watchPage } from './fixtures';
import { errorNote } from './helpers';

test('the home page loads signed out, with no console errors and no request leaving localhost', async ({ page, whetstone }) => {
  const watch = watchPage(page);
  await page.goto(whetstone.url);
  await expect(page.getByRole('heading', { name: 'Whetstone', level: 1 })).toBeVisible();
  await expect(page.getByLabel('System status')).toContainText('ok');
  await expect(page.getByText('You are not signed in')).toBeVisible();
  await expect(page.getByRole('main').getByRole('link', { name: 'Sign in' })).toHaveAttribute('href', '/sign-in');
  await expect(page.getByRole('main').getByRole('link', { name: 'Create an account' })).toHaveAttribute('href', '/sign-up');
  // A browser's own ask for /favicon.ico (made when a page's icon link has not streamed in yet) gets the icon, not a 404.
  const icon = await page.request.get(`${whetstone.url}/favicon.ico`);
  expect(icon.status()).toBe(200);
  expect(icon.headers()['content-type']).toContain('image/svg+xml');
  watch.expectClean();
});

test('the owner, signed in by the printed link, lands on the default team; the spent link says so', async ({ browser, ownerState, whetstone }) => {
  const owner = await browser.newContext({ storageState: ownerState });
  const page = await owner.newPage();
  const watch = watchPage(page);
  await page.goto(whetstone.url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  await expect(page.getByRole('heading', { level: 1, name: 'Default team' })).toBeVisible();
  await expect(page.getByText(/You are an owner of this team/)).toBeVisible();
  await expect(page.getByRole('link', { name: 'Owner', exact: true })).toBeVisible();
  watch.expectClean();
  await owner.close();

  // ownerState already spent the link: using it again leads to the sign-in page and its message.
  const stranger = await browser.newContext();
  const again = await stranger.newPage();
  await again.goto(whetstone.signInLink);
  await expect(again).toHaveURL(/\/sign-in\?error=link$/);
  await expect(errorNote(again)).toContainText('This sign-in link was already used or has expired');
  await stranger.close();
});
