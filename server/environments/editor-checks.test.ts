import { describe, expect, it } from 'vitest';
import { loadTemplate } from '../../env-templates/load-template';
import type { DryRunReport } from '../../sdk/dry-run-report';
import { seedTeam, trpc } from '../test-support/reliability/harness';
import { useTestServer } from '../test-support/test-server';

// What Save answers the editor beside the dry run, through the API: the reward tests of tests.ts
// (pass or fail, with the actual reward and the case's line) and TypeScript's type errors at the
// user's file, line and column. Neither makes the version invalid.

const bandit = loadTemplate('bandit');
type Saved = { versionId: string; validation: DryRunReport };

const lineOf = (text: string, needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1;

describe('editor checks on save', () => {
  const ctx = useTestServer();

  async function save(files: Record<string, string>, name = 'bandit-checks') {
    const team = await seedTeam(ctx.t.db);
    const saved = await trpc<Saved>(ctx.server.url, team.apiKey, 'environments.saveVersion', { teamId: team.teamId, name, entry: 'env.ts', files, manifest: bandit.rawManifest });
    const row = await ctx.t.db.environmentVersion.findUniqueOrThrow({ where: { id: saved.versionId } });
    return { report: saved.validation, status: row.validationStatus };
  }

  it('the bandit template: its reward tests pass, with no type errors', async () => {
    const { report, status } = await save(bandit.source.files);
    expect(status).toBe('VALID');
    expect(report).toMatchObject({ ok: true, typeErrors: [], compileErrors: [] });
    const tests = bandit.source.files['tests.ts'];
    expect(report.tests).toEqual([
      { name: 'red pays on C', pass: true, expected: { reward: 1, info: { arm: 'C', valid: true } }, actual: 1, info: { arm: 'C', valid: true }, failure: null, error: null, location: { file: 'tests.ts', line: lineOf(tests, 'red pays on C'), column: 11 } },
      expect.objectContaining({ name: 'a wrong arm earns nothing', pass: true, actual: 0 }),
      expect.objectContaining({ name: 'no arm at all is invalid', pass: true, actual: 0, info: { arm: null, valid: false } }),
    ]);
    expect(report.typeCheckMs).toEqual(expect.any(Number));
    console.log(`[editor-checks] bandit type check: ${report.typeCheckMs} ms, dry run with tests: ${report.durationMs} ms`);
  });

  it('failing, throwing and malformed cases are reported one by one; the version stays valid', async () => {
    const env = bandit.source.files['env.ts'].replace(
      '    const arm = chosenArm(completion);',
      "    if (completion === 'crash') throw new Error('crash requested');\n    const arm = chosenArm(completion);",
    );
    const tests = `import { defineRewardTests } from 'whetstone';
import type { BanditTask } from './env';

export default defineRewardTests<BanditTask>([
  { name: 'passes', task: { colour: 'red' }, completion: 'C', expect: { reward: 1 } },
  { name: 'expects too much', task: { colour: 'red' }, completion: 'A', expect: { rewardAtLeast: 0.5 } },
  { name: 'wrong info', task: { colour: 'green' }, completion: 'A', expect: { info: { arm: 'B' } } },
  { name: 'no completion', task: { colour: 'green' }, expect: { reward: 1 } },
  { name: 'crashes', task: { colour: 'blue' }, completion: 'crash', expect: { reward: 0 } },
]);
`;
    const { report, status } = await save({ 'env.ts': env, 'tests.ts': tests });
    expect(status).toBe('VALID');
    expect(report.ok).toBe(true);
    const at = (name: string) => ({ file: 'tests.ts', line: lineOf(tests, `'${name}'`), column: 11 });
    expect(report.tests).toMatchObject([
      { name: 'passes', pass: true, actual: 1, location: at('passes') },
      { name: 'expects too much', pass: false, actual: 0, failure: 'expected reward at least 0.5, got 0', error: null, location: at('expects too much') },
      { name: 'wrong info', pass: false, actual: 1, failure: 'expected info.arm = "B", got "A"', location: at('wrong info') },
      { name: 'no completion', pass: false, actual: null, error: { kind: 'invalid-output', message: 'reward test "no completion": give either completion or actions', location: at('no completion') } },
      { name: 'crashes', pass: false, actual: null, error: { kind: 'throw', location: { file: 'env.ts', line: lineOf(env, 'crash requested') } }, location: at('crashes') },
    ]);
    expect(report.tests[4].error!.message).toMatch(/crash requested/);
  });

  it('a tests.ts that does not compile is one failing entry at its line', async () => {
    const tests = "import { defineRewardTests } from 'whetstone';\nexport default defineRewardTests([\n  { name: 'x', completion: 'A' expect: { reward: 1 } },\n]);\n";
    const { report, status } = await save({ 'env.ts': bandit.source.files['env.ts'], 'tests.ts': tests });
    expect(status).toBe('VALID');
    expect(report.tests).toMatchObject([{ name: 'tests.ts', pass: false, error: { kind: 'syntax', location: { file: 'tests.ts', line: 3 } } }]);
  });

  it('type errors come back at their file, line and column, and do not make the version invalid', async () => {
    const env = `${bandit.source.files['env.ts']}\nexport const wrong: number = 'a';\n`;
    const tests = bandit.source.files['tests.ts'].replace("task: { colour: 'blue' }", "task: { colour: 'purple' }");
    const { report, status } = await save({ 'env.ts': env, 'tests.ts': tests });
    expect(status).toBe('VALID');
    expect(report.ok).toBe(true);
    expect(report.typeErrors).toEqual([
      { message: "Type 'string' is not assignable to type 'number'.", location: { file: 'env.ts', line: lineOf(env, 'export const wrong'), column: 14 }, lineText: "export const wrong: number = 'a';", length: 5 },
      expect.objectContaining({ message: expect.stringMatching(/"purple"/), location: expect.objectContaining({ file: 'tests.ts', line: lineOf(tests, "'purple'") }) }),
    ]);
  });
});
