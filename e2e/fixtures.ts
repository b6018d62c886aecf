import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test as base, expect, type BrowserContextOptions, type Page } from '@playwright/test';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface Whetstone {
  url: string;
  /** The owner's one-time sign-in link, as `npm start` printed it. */
  signInLink: string;
  output: () => string;
}

/**
 * A real Whetstone for each test worker: `server/main.ts` on a free port with its own
 * WHETSTONE_HOME and embedded PostgreSQL (or DATABASE_URL's server, in a new database).
 */
export const test = base.extend<object, { whetstone: Whetstone; ownerState: OwnerState }>({
  whetstone: [
    // eslint-disable-next-line no-empty-pattern -- Playwright reads the fixtures a function names from its first parameter
    async ({}, use) => {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-e2e-'));
      fs.chmodSync(home, 0o755);
      const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
        cwd: repoRoot,
        env: { ...process.env, PORT: '0', WHETSTONE_HOME: home, DATABASE_URL: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const ready = new Promise<Whetstone>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`Whetstone did not start:\n${output}`)), 900_000);
        const onData = (chunk: Buffer) => {
          output += chunk.toString();
          const url = output.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
          const signInLink = output.match(/(http:\/\/\S+\/api\/auth\/local-sign-in\?token=\S+)/)?.[1];
          if (url && signInLink && /web app ready/.test(output)) {
            clearTimeout(timer);
            resolve({ url, signInLink, output: () => output });
          }
        };
        child.stdout!.on('data', onData);
        child.stderr!.on('data', onData);
        child.on('exit', (code) => reject(new Error(`Whetstone exited (${code}):\n${output}`)));
      });
      const whetstone = await ready;
      await use(whetstone);
      const exited = new Promise((r) => child.on('exit', r));
      child.kill('SIGINT');
      await exited;
      fs.rmSync(home, { recursive: true, force: true });
    },
    { scope: 'worker', timeout: 960_000 },
  ],

  // The owner's session, made once per server with the printed one-time link (which cannot be
  // used twice). Tests open `browser.newContext({ storageState: ownerState })` to act as the owner
  // (the installation admin); they must not sign that session out.
  ownerState: [
    async ({ browser, whetstone }, use) => {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(whetstone.signInLink);
      await page.waitForURL(/\/teams\/[^/]+$/);
      const state = await context.storageState();
      await context.close();
      await use(state);
    },
    { scope: 'worker' },
  ],
});

export type OwnerState = Exclude<BrowserContextOptions['storageState'], string | undefined>;

/**
 * Fails the test on console errors, uncaught exceptions and any request leaving this machine.
 * `expectedStatuses`: HTTP error statuses the test provokes on purpose (Chromium logs each one);
 * `expectedErrors`: console errors it provokes (a connection lost while offline).
 */
export function watchPage(page: Page, opts: { expectedStatuses?: number[]; expectedErrors?: RegExp } = {}) {
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    // A test that takes the page offline on purpose names the errors that causes.
    if (opts.expectedErrors?.test(msg.text())) return;
    // A test that provokes an API refusal (404, 403…) on purpose names its status; Chromium logs it.
    const status = /^Failed to load resource: the server responded with a status of (\d{3})/.exec(msg.text())?.[1];
    if (status && opts.expectedStatuses?.includes(Number(status))) return;
    // The resource's address too: Chromium's text names only the status.
    const where = msg.location().url;
    problems.push(`console error: ${msg.text()}${status && where ? ` (${where})` : ''}`);
  });
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  page.on('request', (request) => {
    const url = new URL(request.url());
    const local = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
    if (!local && !['data:', 'blob:'].includes(url.protocol)) problems.push(`request left localhost: ${request.url()}`);
  });
  return { expectClean: () => expect(problems).toEqual([]) };
}

export { expect };
