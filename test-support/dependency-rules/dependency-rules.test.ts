import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult, type IConfiguration } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';

// The architecture rules of `npm run lint` (.dependency-cruiser.cjs), run on small trees that
// break one rule each (fixtures/, which the real run excludes): a rule that never fails would
// pass lint just as well as one that holds.

const here = path.dirname(fileURLToPath(import.meta.url));
const config = createRequire(import.meta.url)('../../.dependency-cruiser.cjs') as IConfiguration;

async function cruiseFixture(name: string): Promise<ICruiseResult> {
  // The repository's tsconfig and exclusions are for the repository, not for these trees.
  const { tsConfig: _repoTsConfig, exclude: _exclude, ...options } = config.options ?? {};
  const result = await cruise(['.'], { ...options, baseDir: path.join(here, 'fixtures', name), ruleSet: { forbidden: config.forbidden }, validate: true });
  return result.output as ICruiseResult;
}

/** The names of the rules that the fixture tree `name` breaks. */
async function brokenRules(name: string): Promise<string[]> {
  const output = await cruiseFixture(name);
  return [...new Set(output.summary.violations.map((v) => v.rule.name))].sort();
}

describe('the dependency rules', () => {
  it('pass a tree that keeps the layers, having read all of it', async () => {
    const output = await cruiseFixture('clean');
    expect(output.summary.violations).toEqual([]);
    expect(output.modules.map((m) => m.source).sort()).toEqual(['app/page.ts', 'gpu-worker/work.ts', 'sdk/contract.ts', 'server/serve.ts']);
    // The browser's import of the server is there, as a type-only one.
    const page = output.modules.find((m) => m.source === 'app/page.ts');
    expect(page?.dependencies.map((d) => [d.resolved, d.dependencyTypes.includes('type-only')])).toEqual([['server/serve.ts', true]]);
  });

  it('fail on a circular import', async () => {
    expect(await brokenRules('circular')).toEqual(['no-circular']);
  });

  it('fail when the worker imports the server', async () => {
    expect(await brokenRules('worker-imports-server')).toEqual(['worker-never-imports-server']);
  });

  it('fail when the browser imports server code rather than its types', async () => {
    expect(await brokenRules('browser-imports-server-code')).toEqual(['browser-sees-server-types-only']);
  });

  it('fail when the sdk imports the worker', async () => {
    expect(await brokenRules('sdk-imports-worker')).toEqual(['sdk-is-the-floor']);
  });

  it('fail when production code imports test support', async () => {
    expect(await brokenRules('production-imports-test-support')).toEqual(['production-never-imports-tests']);
  });

  it('fail when the environment API imports anything outside itself', async () => {
    expect(await brokenRules('environment-api-imports-node')).toEqual(['environment-api-stands-alone']);
  });

  it("fail when a template's environment code imports outside its own folder", async () => {
    expect(await brokenRules('template-imports-outside-its-folder')).toEqual(['environment-code-runs-in-quickjs']);
  });

  it('fail when a router imports another router', async () => {
    expect(await brokenRules('router-imports-router')).toEqual(['routers-never-import-routers']);
  });
});
