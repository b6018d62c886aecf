// Sums the JSON reports of vitest and Playwright into one closing line: "N passed, N failed".
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
let passed = 0;
let failed = 0;
let skipped = 0;
const read = (name) => {
  const file = path.join(dir, name);
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : null;
};
// vitest.json, and vitest-*.json for the runs of a part again in another configuration.
for (const name of fs.readdirSync(dir).filter((f) => /^vitest(-.+)?\.json$/.test(f)).sort()) {
  const vitest = read(name);
  passed += vitest.numPassedTests;
  failed += vitest.numFailedTests + (vitest.numFailedTestSuites && !vitest.numFailedTests ? vitest.numFailedTestSuites : 0);
  skipped += vitest.numPendingTests + vitest.numTodoTests;
}
const playwright = read('playwright.json');
if (playwright) {
  passed += playwright.stats.expected + playwright.stats.flaky;
  failed += playwright.stats.unexpected;
  skipped += playwright.stats.skipped;
}
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
