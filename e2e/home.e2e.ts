import { expect, test, watchPage } from './fixtures';

test('the home page loads with no console errors and no request leaving localhost', async ({ page, whetstone }) => {
  const watch = watchPage(page);
  await page.goto(whetstone.url);
  await expect(page.getByText('Whetstone', { exact: true })).toBeVisible();
  await expect(page.getByLabel('System status')).toContainText('ok');
  await expect(page.getByText('You are not signed in')).toBeVisible();
  watch.expectClean();
});

test('the owner signs in with the printed link and sees the default team', async ({ page, whetstone }) => {
  const watch = watchPage(page);
  await page.goto(whetstone.signInLink);
  await expect(page).toHaveURL(`${whetstone.url}/`);
  await expect(page.getByText('owner@localhost')).toBeVisible();
  await expect(page.getByText(/owner of Default team/)).toBeVisible();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByText('You are not signed in')).toBeVisible();
  watch.expectClean();
});
