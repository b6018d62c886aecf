import { defineConfig } from '@playwright/test';

// Playwright drives the system Chromium (Debian's package, or CHROMIUM_PATH); it never
// downloads a browser. Each test file starts its own Whetstone (e2e/fixtures.ts).
export default defineConfig({
  testDir: '.',
  testMatch: '**/*.e2e.ts',
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 120_000,
  // Every expect waits for its condition; on a loaded CI machine a client navigation (its chunk,
  // its queries) took over the default 5 s. Longer only changes how late a real failure is told.
  expect: { timeout: 20_000 },
  reporter: process.env.CI ? [['list']] : [['list']],
  use: {
    browserName: 'chromium',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    },
    trace: 'off',
    screenshot: 'only-on-failure',
  },
  outputDir: '../test-results',
});
