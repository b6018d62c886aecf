import { expect, test, watchPage } from './fixtures';
import { createInvitation, errorNote, expectAccessible, fillSignUp, PASSWORD, shoot, signUp, teamIdOf, uniqueEmail } from './helpers';
import { formatBytes } from '../sdk/bytes';

test('team journey: sign up, invite, a second user joins by the link and sees only that team', async ({ browser, whetstone }) => {
  const url = whetstone.url;

  // Ada signs up and gets a team of her own.
  const ada = await browser.newContext();
  const adaPage = await ada.newPage();
  const adaWatch = watchPage(adaPage, { expectedStatuses: [412] }); // the last owner cannot leave
  const adaTeam = await signUp(adaPage, url, { name: 'Ada', email: uniqueEmail('ada') });

  // Cleo signs up too: her team is the one Bob must not see.
  const cleo = await browser.newContext();
  const cleoPage = await cleo.newPage();
  const cleoWatch = watchPage(cleoPage);
  const cleoTeam = await signUp(cleoPage, url, { name: 'Cleo', email: uniqueEmail('cleo') });

  // Ada invites a member; the link is shown once.
  await adaPage.getByRole('navigation', { name: 'Team' }).getByRole('link', { name: 'Members' }).click();
  await expect(adaPage).toHaveURL(`${url}/teams/${adaTeam}/members`);
  const link = await createInvitation(adaPage, url, adaTeam, 'Member');
  await expect(adaPage.getByRole('table', { name: 'Invitations' })).toContainText('pending');

  // Bob opens the link signed out, chooses to create an account, and joins Ada's team.
  const bob = await browser.newContext();
  const bobPage = await bob.newPage();
  const bobWatch = watchPage(bobPage, { expectedStatuses: [400, 404] }); // the spent link, Cleo's team
  const bobEmail = uniqueEmail('bob');
  await bobPage.goto(link);
  await expect(bobPage.getByRole('heading', { name: 'You are invited to a team' })).toBeVisible();
  await bobPage.getByRole('link', { name: 'Create an account' }).click();
  await expect(bobPage.getByText('You are signing up with an invitation')).toBeVisible();
  await fillSignUp(bobPage, { name: 'Bob', email: bobEmail });
  await bobPage.waitForURL(`${url}/teams/${adaTeam}`);
  await expect(bobPage.getByRole('heading', { level: 1, name: "Ada's team" })).toBeVisible();
  await expect(bobPage.getByText(/You are a member of this team/)).toBeVisible();

  // The switcher lists Ada's team (and only it: an invited user gets no team of their own).
  // Keyboard: Enter opens it and focuses the current team.
  await bobPage.getByRole('button', { name: /^Team/ }).focus();
  await bobPage.keyboard.press('Enter');
  const teams = bobPage.getByRole('navigation', { name: 'Your teams' });
  await expect(teams.getByRole('link')).toHaveCount(1);
  await expect(teams.getByRole('link', { name: /Ada's team/ })).toBeFocused();
  await bobPage.keyboard.press('Escape');
  await expect(teams).toBeHidden();

  // Bob sees the members of Ada's team.
  await bobPage.getByRole('navigation', { name: 'Team' }).getByRole('link', { name: 'Members' }).click();
  const members = bobPage.getByRole('table');
  await expect(members.getByRole('row', { name: /Ada/ })).toContainText('Owner');
  await expect(members.getByRole('row', { name: /Bob \(you\)/ })).toContainText('Member');
  await expect(bobPage.getByRole('form', { name: 'Create an invitation' })).toHaveCount(0);

  // The link is spent: opening it again says so.
  await bobPage.goto(link);
  await expect(errorNote(bobPage)).toContainText('This invitation was already used');

  // Cleo's team does not exist for Bob, and none of its data shows.
  for (const section of ['members', 'api-keys', 'quotas', '']) {
    await bobPage.goto(`${url}/teams/${cleoTeam}${section ? `/${section}` : ''}`);
    await expect(bobPage.getByRole('heading', { name: 'No such team' })).toBeVisible();
    await expect(bobPage.getByText('Cleo')).toHaveCount(0);
    await expect(bobPage.getByRole('table')).toHaveCount(0);
  }

  // Ada sees Bob among her members and the invitation as accepted.
  await adaPage.reload();
  await expect(adaPage.getByRole('table', { name: 'Invitations' })).toContainText('accepted');
  const bobRow = adaPage.getByRole('row', { name: /Bob/ });
  await expect(bobRow).toContainText(bobEmail);

  // She makes him a viewer; he sees his new role.
  await bobRow.getByLabel('Role of Bob', { exact: true }).selectOption({ label: 'Viewer' });
  await bobRow.getByRole('button', { name: 'Save role of Bob' }).click();
  await expect(bobRow.getByRole('button', { name: 'Save role of Bob' })).toBeDisabled();
  // The button is disabled while the change is saving too: Bob's page is checked until it says so.
  await expect(async () => {
    await bobPage.goto(`${url}/teams/${adaTeam}`);
    await expect(bobPage.getByText(/You are a viewer of this team/)).toBeVisible({ timeout: 2_000 });
  }).toPass({ timeout: 30_000 });

  // The last owner cannot leave: the API's reason shows on the page.
  await adaPage.getByRole('row', { name: /Ada \(you\)/ }).getByRole('button', { name: 'Leave team' }).click();
  await adaPage.getByRole('button', { name: 'Yes, leave' }).click();
  await expect(errorNote(adaPage)).toContainText('The last owner cannot leave');

  // Cleo, already signed in, accepts an invitation too: now she switches between two teams,
  // the section of the page staying the same, and / opens the team she used last.
  const adminLink = await createInvitation(adaPage, url, adaTeam, 'Admin');
  await cleoPage.goto(adminLink);
  await expect(cleoPage.getByRole('heading', { name: "Join Ada's team" })).toBeVisible();
  await cleoPage.getByRole('button', { name: "Accept and join Ada's team" }).click();
  await cleoPage.waitForURL(`${url}/teams/${adaTeam}`);
  await expect(cleoPage.getByText(/You are an admin of this team/)).toBeVisible();
  await cleoPage.getByRole('navigation', { name: 'Team' }).getByRole('link', { name: 'Members' }).click();
  // The switcher keeps the section you are on: be on it before switching.
  await cleoPage.waitForURL(`${url}/teams/${adaTeam}/members`);
  await cleoPage.getByRole('button', { name: /^Team/ }).click();
  const cleoTeams = cleoPage.getByRole('navigation', { name: 'Your teams' });
  await expect(cleoTeams.getByRole('link')).toHaveCount(2);
  await cleoTeams.getByRole('link', { name: /Cleo's team/ }).click();
  await cleoPage.waitForURL(`${url}/teams/${cleoTeam}/members`);
  await expect(cleoPage.getByRole('button', { name: /^Team/ })).toContainText("Cleo's team");
  await cleoPage.goto(url);
  await cleoPage.waitForURL(`${url}/teams/${cleoTeam}`);

  adaWatch.expectClean();
  bobWatch.expectClean();
  cleoWatch.expectClean();
  await ada.close();
  await bob.close();
  await cleo.close();
});

test('API keys: created with a name, shown once with a copy button, used, then revoked', async ({ browser, whetstone }) => {
  const url = whetstone.url;
  const context = await browser.newContext();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
  const page = await context.newPage();
  const watch = watchPage(page);
  const email = uniqueEmail('kim');
  const teamId = await signUp(page, url, { name: 'Kim', email });

  await page.getByRole('navigation', { name: 'Team' }).getByRole('link', { name: 'API keys' }).click();
  await expect(page.getByText('No API keys yet.')).toBeVisible();
  const form = page.getByRole('form', { name: 'Create an API key' });
  await form.getByLabel('Name').fill('laptop CLI');
  await form.getByLabel('Expires after').selectOption({ label: '30 days' });
  await form.getByRole('button', { name: 'Create key' }).click();

  const shown = page.getByRole('region', { name: 'New API key “laptop CLI”' });
  const key = await shown.getByRole('textbox').inputValue();
  expect(key).toMatch(/^wsk_\S{20,}$/);
  await shown.getByRole('button', { name: 'Copy' }).click();
  await expect(shown.getByText('Copied to the clipboard.')).toBeVisible();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);

  // The key works as a bearer token for this team.
  const me = async () =>
    (await (await page.request.get(`${url}/api/trpc/account.me`, { headers: { authorization: `Bearer ${key}`, cookie: '' } })).json()).result.data.json;
  expect((await me()).user.email).toBe(email);
  expect((await me()).teams.map((t: any) => t.id)).toEqual([teamId]);

  // Once dismissed, it is gone for good: the list shows only its prefix.
  await shown.getByRole('button', { name: 'Done' }).click();
  await page.reload();
  const row = page.getByRole('table', { name: 'API keys' }).getByRole('row', { name: /laptop CLI/ });
  await expect(row).toContainText(`${key.slice(0, 12)}…`);
  await expect(row).toContainText('active');
  await expect(row).not.toContainText('never'); // used just now; expires in 30 days
  expect(await page.content()).not.toContain(key);

  await row.getByRole('button', { name: 'Revoke laptop CLI' }).click();
  await row.getByRole('button', { name: 'Yes, revoke' }).click();
  await expect(row).toContainText('revoked');
  await expect(row.getByRole('button', { name: 'Revoke laptop CLI' })).toHaveCount(0);
  expect(await me()).toBeNull();

  watch.expectClean();
  await context.close();
});

test('quotas: an admin edits them; a viewer sees them read-only', async ({ browser, ownerState, whetstone }) => {
  const url = whetstone.url;
  const owner = await browser.newContext({ storageState: ownerState });
  const ownerPage = await owner.newPage();
  const ownerWatch = watchPage(ownerPage);
  await ownerPage.goto(url);
  await ownerPage.waitForURL(/\/teams\/[^/]+$/);
  const teamId = teamIdOf(ownerPage);

  await ownerPage.getByRole('navigation', { name: 'Team' }).getByRole('link', { name: 'Quotas' }).click();
  const form = ownerPage.getByRole('form', { name: 'Edit quotas' });
  await form.getByLabel('Concurrent devices').fill('6');
  await form.getByLabel('Queued jobs').fill('40');
  await form.getByLabel('Highest priority for members').fill('250');
  await form.getByLabel('Default time limit (hours)').fill('2.5');
  await form.getByRole('button', { name: 'Save quotas' }).click();
  await expect(ownerPage.getByText('Quotas saved.')).toBeVisible();
  await ownerPage.reload();
  await expect(ownerPage.getByLabel('Concurrent devices')).toHaveValue('6');
  await expect(ownerPage.getByLabel('Default time limit (hours)')).toHaveValue('2.5');
  await expect(ownerPage.getByRole('meter', { name: 'Queued jobs' })).toHaveAttribute('aria-valuemax', '40');
  // Stream storage, of the default 1 GiB: what the owner's team stored depends on the tests that
  // shared this server before (runs of other journeys), so the usage is read, not assumed.
  const storage = ownerPage.getByRole('meter', { name: 'Stream storage' });
  await expect(storage).toHaveAttribute('aria-valuemax', String(2 ** 30));
  const used = Number(await storage.getAttribute('aria-valuenow'));
  await expect(ownerPage.getByText(`${formatBytes(used)} of 1.0 GiB`)).toBeVisible();
  await expect(ownerPage.getByLabel('Stream storage (GiB)')).toHaveValue('1');

  const link = await createInvitation(ownerPage, url, teamId, 'Viewer');
  ownerWatch.expectClean();
  await owner.close();

  const viewer = await browser.newContext();
  const page = await viewer.newPage();
  const watch = watchPage(page);
  await page.goto(`${url}/sign-up?invitation=${link.split('/invite/')[1]}`);
  await fillSignUp(page, { name: 'Vera', email: uniqueEmail('vera') });
  await page.waitForURL(`${url}/teams/${teamId}`);
  await page.getByRole('navigation', { name: 'Team' }).getByRole('link', { name: 'Quotas' }).click();
  const limits = page.getByRole('definition');
  await expect(page.getByLabel('Quota limits')).toBeVisible();
  await expect(limits.nth(0)).toHaveText('6');
  await expect(limits.nth(1)).toHaveText('40');
  await expect(limits.nth(2)).toHaveText('250');
  await expect(limits.nth(4)).toHaveText('1.0 GiB');
  await expect(page.getByText('Only admins of this team change quotas.')).toBeVisible();
  await expect(page.getByRole('spinbutton')).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Save quotas' })).toHaveCount(0);

  // Nor does a viewer get the audit log.
  await expect(page.getByRole('navigation', { name: 'Team' }).getByRole('link', { name: 'Audit log' })).toHaveCount(0);
  await page.goto(`${url}/teams/${teamId}/audit`);
  await expect(errorNote(page)).toContainText('The audit log is for admins of this team.');
  watch.expectClean();
  await viewer.close();
});

test('the installation admin closes sign-up: an uninvited sign-up is refused, an invited one admitted', async ({ browser, ownerState, whetstone }) => {
  const url = whetstone.url;
  const owner = await browser.newContext({ storageState: ownerState });
  const ownerPage = await owner.newPage();
  const visitor = await browser.newContext();
  const page = await visitor.newPage();
  const watch = watchPage(page, { expectedStatuses: [403] }); // the refused sign-up

  // The visitor opens the form while sign-up is still open…
  await page.goto(`${url}/sign-up`);
  await expect(page.getByRole('form', { name: 'Sign up' })).toBeVisible();

  // …the owner (installation admin) closes it…
  await ownerPage.goto(`${url}/account`);
  const toggle = ownerPage.getByRole('switch', { name: 'Open sign-up' });
  await expect(toggle).toBeChecked();
  try {
    await toggle.uncheck();
    await expect(ownerPage.getByText('Sign-up is closed: only people with an invitation link')).toBeVisible();

    // …so the server refuses the visitor, who is told why.
    await fillSignUp(page, { name: 'Uma', email: uniqueEmail('uma') });
    await expect(errorNote(page)).toContainText('Sign-up is by invitation only on this installation');
    await expect(page).toHaveURL(`${url}/sign-up`);

    // A fresh visit says so before anyone types anything.
    await page.reload();
    await expect(errorNote(page)).toContainText('Sign-up is by invitation only on this installation');
    await expect(page.getByRole('form', { name: 'Sign up' })).toHaveCount(0);

    // An invitation still admits.
    await ownerPage.goto(url);
    await ownerPage.waitForURL(/\/teams\/[^/]+$/);
    const teamId = teamIdOf(ownerPage);
    const link = await createInvitation(ownerPage, url, teamId, 'Member');
    await page.goto(link);
    await page.getByRole('link', { name: 'Create an account' }).click();
    await fillSignUp(page, { name: 'Ivo', email: uniqueEmail('ivo') });
    await page.waitForURL(`${url}/teams/${teamId}`);
    await expect(page.getByRole('heading', { level: 1, name: 'Default team' })).toBeVisible();
  } finally {
    await ownerPage.goto(`${url}/account`);
    await ownerPage.getByRole('switch', { name: 'Open sign-up' }).check();
    await expect(ownerPage.getByText('Anyone who can reach this server can create an account')).toBeVisible();
  }
  watch.expectClean();
  await owner.close();
  await visitor.close();
});

test('a wrong password gets one clear error that does not tell whether the e-mail exists', async ({ browser, whetstone }) => {
  const url = whetstone.url;
  const context = await browser.newContext();
  const page = await context.newPage();
  const email = uniqueEmail('wes');
  await signUp(page, url, { name: 'Wes', email });
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByText('You are not signed in')).toBeVisible();

  // By keyboard only: labels lead to the fields, Enter sends the form.
  const attempt = async (mail: string, password: string) => {
    await page.goto(`${url}/sign-in`);
    await page.getByLabel('E-mail').focus();
    await page.keyboard.type(mail);
    await page.keyboard.press('Tab');
    await expect(page.getByLabel('Password')).toBeFocused();
    await page.keyboard.type(password);
    await page.keyboard.press('Enter');
  };

  await attempt(email, 'not the password at all');
  const wrongPassword = (await errorNote(page).textContent())?.trim();
  expect(wrongPassword).toBeTruthy();
  expect(wrongPassword).toMatch(/invalid e-?mail or password/i);

  await attempt(uniqueEmail('nobody'), 'not the password at all');
  await expect(errorNote(page)).toHaveText(wrongPassword!);

  await attempt(email, PASSWORD);
  await page.waitForURL(/\/teams\/[^/]+$/);
  await expect(page.getByRole('heading', { level: 1, name: "Wes's team" })).toBeVisible();

  // Changing the password asks for the current one.
  await page.getByRole('link', { name: 'Wes', exact: true }).click();
  const form = page.getByRole('form', { name: 'Change password' });
  const change = async (current: string) => {
    await form.getByLabel('Current password').fill(current);
    await form.getByLabel('New password', { exact: true }).fill('a brand new passphrase');
    await form.getByLabel('New password again').fill('a brand new passphrase');
    await form.getByRole('button', { name: 'Change password' }).click();
  };
  await change('not the password at all');
  await expect(errorNote(page)).toContainText(/invalid password/i);
  await change(PASSWORD);
  await expect(page.getByText('Password changed.')).toBeVisible();
  await context.close();
});

test('workers: an admin makes a registration token, shown once, and the local worker is listed', async ({ browser, ownerState, whetstone }) => {
  const owner = await browser.newContext({ storageState: ownerState });
  const page = await owner.newPage();
  const watch = watchPage(page);
  await page.goto(whetstone.url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  await page.getByRole('navigation', { name: 'Team' }).getByRole('link', { name: 'Workers' }).click();
  const form = page.getByRole('form', { name: /Create a registration token/ });
  await form.getByLabel('Token name').fill('rack 7');
  await form.getByRole('button', { name: 'Create token' }).click();
  await expect(page.getByRole('textbox', { name: /Registration token “rack 7”/ })).toHaveValue(/^wst_[A-Za-z0-9_-]{20,}$/);
  await expect(form.getByLabel('Token name')).toHaveValue('');
  await expect(page.getByRole('cell', { name: /rack 7/ })).toBeVisible();
  // npm start's own worker, in the shared pool.
  await expect(page.getByRole('row', { name: /^local .*Shared/ })).toBeVisible();
  watch.expectClean();
  await owner.close();
});

test('secrets: an admin sets, replaces and deletes one, its value never shown; a viewer reads names only', async ({ browser, whetstone }, testInfo) => {
  const url = whetstone.url;
  const context = await browser.newContext();
  const page = await context.newPage();
  const watch = watchPage(page);
  const teamId = await signUp(page, url, { name: 'Sol', email: uniqueEmail('sol') });

  await page.getByRole('navigation', { name: 'Team' }).getByRole('link', { name: 'Secrets' }).click();
  await expect(page).toHaveURL(`${url}/teams/${teamId}/secrets`);
  await expect(page.getByText('No secrets yet.')).toBeVisible();
  const form = page.getByRole('form', { name: 'Set a secret' });
  await form.getByLabel('Name').fill('game_token');
  await expect(form.getByLabel('Name')).toHaveValue('GAME_TOKEN');
  await expect(form.getByLabel('Value')).toHaveAttribute('type', 'password');
  await form.getByLabel('Value').fill('e2e-first-secret-value');
  await form.getByRole('button', { name: 'Set secret' }).click();
  await expect(form.getByRole('status')).toContainText('Created GAME_TOKEN');
  await expect(form.getByLabel('Value')).toHaveValue('');
  const row = page.getByRole('table', { name: 'Secrets' }).getByRole('row', { name: /GAME_TOKEN/ });
  await expect(row).toContainText('Sol');

  // Replace: the name is filled in and the value field focused.
  await row.getByRole('button', { name: 'Replace GAME_TOKEN' }).click();
  await expect(form.getByLabel('Value')).toBeFocused();
  await page.keyboard.type('e2e-second-secret-value');
  await form.getByRole('button', { name: 'Set secret' }).click();
  await expect(form.getByRole('status')).toContainText('Replaced GAME_TOKEN');
  await page.reload();
  await expect(page.getByRole('table', { name: 'Secrets' })).toBeVisible();
  await expectAccessible(page, 'secrets');
  await shoot(page, testInfo, 'secrets-admin');
  const html = await page.content();
  expect(html).not.toContain('e2e-first-secret-value');
  expect(html).not.toContain('e2e-second-secret-value');

  // A viewer sees the name, and no way to change it.
  const link = await createInvitation(page, url, teamId, 'Viewer');
  const viewer = await browser.newContext();
  const viewerPage = await viewer.newPage();
  const viewerWatch = watchPage(viewerPage);
  await viewerPage.goto(`${url}/sign-up?invitation=${link.split('/invite/')[1]}`);
  await fillSignUp(viewerPage, { name: 'Val', email: uniqueEmail('val') });
  await viewerPage.waitForURL(`${url}/teams/${teamId}`);
  await viewerPage.goto(`${url}/teams/${teamId}/secrets`);
  await expect(viewerPage.getByRole('table', { name: 'Secrets' }).getByRole('row', { name: /GAME_TOKEN/ })).toBeVisible();
  await expect(viewerPage.getByText(/Team admins set, replace and delete secrets/)).toBeVisible();
  await expect(viewerPage.getByRole('form', { name: 'Set a secret' })).toHaveCount(0);
  await expect(viewerPage.getByRole('button', { name: /Delete|Replace/ })).toHaveCount(0);
  await shoot(viewerPage, testInfo, 'secrets-viewer');
  viewerWatch.expectClean();
  await viewer.close();

  // Deleting asks first.
  await page.goto(`${url}/teams/${teamId}/secrets`);
  const again = page.getByRole('table', { name: 'Secrets' }).getByRole('row', { name: /GAME_TOKEN/ });
  await again.getByRole('button', { name: 'Delete GAME_TOKEN' }).click();
  await again.getByRole('button', { name: 'Yes, delete' }).click();
  await expect(page.getByText('No secrets yet.')).toBeVisible();
  watch.expectClean();
  await context.close();
});
