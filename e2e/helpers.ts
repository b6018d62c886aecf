import { randomBytes } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import { expect, type Page, type TestInfo } from '@playwright/test';

export const PASSWORD = 'correct horse battery';

export function uniqueEmail(who: string): string {
  return `${who}-${randomBytes(4).toString('hex')}@example.test`;
}

/** Fills and sends the sign-up form on the page it is on. */
export async function fillSignUp(page: Page, user: { name: string; email: string; password?: string }) {
  await page.getByLabel('Name').fill(user.name);
  await page.getByLabel('E-mail').fill(user.email);
  await page.getByLabel('Password').fill(user.password ?? PASSWORD);
  await page.getByRole('button', { name: /^Create account/ }).click();
}

/** Signs up a new user with no invitation; returns the id of the team they get. */
export async function signUp(page: Page, baseUrl: string, user: { name: string; email: string; password?: string }) {
  await page.goto(`${baseUrl}/sign-up`);
  await fillSignUp(page, user);
  await page.waitForURL(/\/teams\/[^/]+$/);
  await expect(page.getByRole('heading', { level: 1, name: `${user.name}'s team` })).toBeVisible();
  return teamIdOf(page);
}

export function teamIdOf(page: Page): string {
  const id = /\/teams\/([^/?#]+)/.exec(page.url())?.[1];
  if (!id) throw new Error(`not a team page: ${page.url()}`);
  return id;
}

/** Creates an invitation link on the team's Members page and returns it. */
export async function createInvitation(page: Page, baseUrl: string, teamId: string, role: 'Admin' | 'Member' | 'Viewer') {
  await page.goto(`${baseUrl}/teams/${teamId}/members`);
  const form = page.getByRole('form', { name: 'Create an invitation' });
  await form.getByLabel('Role').selectOption({ label: role });
  await form.getByRole('button', { name: 'Create invitation link' }).click();
  const link = await page.getByRole('region', { name: 'Invitation link' }).getByRole('textbox').inputValue();
  expect(link).toMatch(new RegExp(`^${baseUrl}/invite/`));
  return link;
}

/** The error shown next to a form (not Next's route announcer, which is also role=alert). */
export function errorNote(page: Page) {
  return page.locator('.notice-error[role="alert"]');
}

/** Fails on any serious or critical axe violation, listing each with the elements it found. */
export async function expectAccessible(page: Page, name: string) {
  // Next.js streams a page's metadata: just after a navigation the <title> may not be there yet.
  await expect(page).toHaveTitle(/\S/);
  const { violations } = await new AxeBuilder({ page }).analyze();
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map((v) => `${name}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
}

/** The page in light and dark, kept with the test's output. */
export async function shoot(page: Page, testInfo: TestInfo, name: string) {
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    await page.screenshot({ path: testInfo.outputPath(`${name}-${colorScheme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: null });
}

/** A tRPC call with the page's session, as the CLI or a script makes it; fails the test on a refusal. */
export async function trpc<T>(page: Page, url: string, path: string, kind: 'query' | 'mutation', input: unknown): Promise<T> {
  const response =
    kind === 'query'
      ? await page.request.get(`${url}/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`)
      : await page.request.post(`${url}/api/trpc/${path}`, { data: { json: input }, headers: { origin: url } });
  expect(response.ok(), `${path}: ${await response.text()}`).toBe(true);
  return ((await response.json()) as { result: { data: { json: T } } }).result.data.json;
}

/**
 * The owner's page, its team, and a short training run of one of the team's built-in environments
 * (its first version), submitted through the API as `whetstone run` does. The page is left on the
 * team's page; `base` is that page's URL.
 */
export async function submitTeamRun(
  page: Page,
  url: string,
  run: { environment: string; training: Record<string, unknown>; tags?: string[] },
): Promise<{ teamId: string; base: string; job: { id: string }; environment: TeamEnvironment }> {
  await page.goto(url);
  await page.waitForURL(/\/teams\/[^/]+$/);
  const teamId = teamIdOf(page);
  const environment = await teamEnvironment(page, url, teamId, run.environment);
  const job = await trpc<{ id: string }>(page, url, 'jobs.submit', 'mutation', {
    teamId,
    kind: 'TRAIN',
    config: { environmentVersionId: environment.versions[0].id, ...(run.tags ? { tags: run.tags } : {}), training: run.training },
  });
  return { teamId, base: `${url}/teams/${teamId}`, job, environment };
}

/** One of the team's environments, as environments.list gives it. */
export interface TeamEnvironment {
  id: string;
  name: string;
  versions: Array<{ id: string }>;
}

/** The team's environment of this name (a built-in template's, on `npm start`'s default team). */
async function teamEnvironment(page: Page, url: string, teamId: string, name: string): Promise<TeamEnvironment> {
  const environments = await trpc<TeamEnvironment[]>(page, url, 'environments.list', 'query', { teamId });
  const environment = environments.find((e) => e.name === name);
  if (!environment) throw new Error(`no environment ${name} among ${environments.map((e) => e.name).join(', ')}`);
  return environment;
}

/**
 * The sampler checkpoint a run writes at its end, once it is there: this run's own (the e2e server
 * is shared by the journeys, whose runs write theirs).
 */
export async function samplerCheckpointOf(page: Page, url: string, teamId: string, jobId: string): Promise<string> {
  let id = '';
  await expect
    .poll(
      async () => {
        const list = await trpc<Array<{ id: string; kind: string }>>(page, url, 'runs.checkpoints', 'query', { teamId, jobId });
        id = list.find((c) => c.kind === 'SAMPLER')?.id ?? '';
        return id;
      },
      { timeout: 300_000, intervals: [1_000] },
    )
    .not.toBe('');
  return id;
}
