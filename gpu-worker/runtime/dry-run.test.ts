import { describe, expect, test } from 'vitest';
import { dryRun } from './dry-run';

const HEADER = "import { defineEnvironment, defineSingleTurn } from 'whetstone';\n";

describe('dry run', () => {
  test('compile errors come back as editor markers', async () => {
    const report = await dryRun({ source: { entry: 'env.ts', files: { 'env.ts': `${HEADER}export default defineSingleTurn({ name: 'x', \n  systemPrompt: 's' sample: () => 1 });\n` } } });
    expect(report.ok).toBe(false);
    expect(report.compileErrors[0]).toMatchObject({ location: { file: 'env.ts', line: 3 } });
    expect(report.episodes).toBe(0);
  });

  test('errors in some episodes are counted and located; failing transcripts come first', async () => {
    const code = `${HEADER}
export default defineEnvironment<number, number>({
  name: 'flaky',
  systemPrompt: 'count',
  sample: (rng) => rng.int(0, 4),
  reset: (ctx) => { ctx.state = 0; return 'n=' + ctx.task; },
  step: (_action, ctx) => {
    if (ctx.task === 0) throw new RangeError('task zero is not supported');
    console.log('task', ctx.task);
    ctx.state++;
    return { observation: String(ctx.state), reward: ctx.state, terminated: ctx.state >= ctx.task };
  },
});
`;
    const report = await dryRun({ source: { entry: 'env.ts', files: { 'env.ts': code } }, episodes: 24, policy: 'random' });
    expect(report.ok).toBe(false);
    expect(report.errors).toHaveLength(1);
    expect(report.errors[0]).toMatchObject({ kind: 'throw', during: 'step', location: { file: 'env.ts', line: 9 }, message: expect.stringMatching(/RangeError: task zero/) });
    expect(report.errors[0].episodes).toBe(report.endReasons.error);
    expect(report.endReasons.error).toBeGreaterThan(0);
    expect(report.endReasons.terminated).toBe(24 - report.endReasons.error);
    expect(report.transcripts[0].error).not.toBeNull();
    // Episode length equals the task (1..3) for the others; returns are 1, 1+2, 1+2+3.
    expect(report.lengths.max).toBeLessThanOrEqual(3);
    expect(report.rewards.agent.histogram.map((h) => h.value).sort()).toEqual(expect.arrayContaining([1]));
    expect(report.logs.some((l) => /^\[dry-\d+\] task [123]$/.test(l))).toBe(true);
  });

  test("a bad value is reported at the user's return statement", async () => {
    const code = `${HEADER}
export default defineEnvironment({
  name: 'bad-return',
  systemPrompt: 's',
  sample: () => undefined,
  reset: () => 'go',
  step: () => {
    const reward: unknown = 'high';
    return { observation: '', reward: reward as number, terminated: true };
  },
});
`;
    const report = await dryRun({ source: { entry: 'env.ts', files: { 'env.ts': code } }, episodes: 4, policy: 'random' });
    expect(report.ok).toBe(false);
    expect(report.errors[0]).toMatchObject({ kind: 'invalid-output', during: 'step', location: { file: 'env.ts', line: 10, column: 5 }, message: expect.stringMatching(/reward "high"/) });
  });

  test('a load error is reported with its line', async () => {
    const report = await dryRun({ source: { entry: 'env.ts', files: { 'env.ts': `${HEADER}\nthrow new Error('not yet');\n` } } });
    expect(report.loadError).toMatchObject({ kind: 'load', location: { file: 'env.ts', line: 3 } });
  });

  test('manifest mismatches and missing rows are warnings', async () => {
    const code = `${HEADER}export default defineSingleTurn<{ q: string }>({ name: 'x', systemPrompt: '', rowSchema: { type: 'object', properties: { q: { type: 'string' } } }, prompt: (r) => r.q, reward: () => 0 });\n`;
    const report = await dryRun({
      source: { entry: 'env.ts', files: { 'env.ts': code } },
      manifest: { kind: 'multi-agent', agents: ['a', 'b'], limits: { maxTurns: 1, maxTokensPerTurn: 8, maxResponseTokens: 8 } },
    });
    expect(report.warnings).toEqual([
      'manifest agents [a, b] differ from the code\'s [agent]',
      'manifest kind "multi-agent" but the code defines a single-turn environment',
      'this environment reads dataset rows (rowSchema) but the dry run was given none',
    ]);
  });

  test('a saved dataset is checked against the row schema, line by line', async () => {
    const code = `${HEADER}export default defineSingleTurn<{ q: string; a: number }>({ name: 'x', systemPrompt: '', rowSchema: { type: 'object', properties: { q: { type: 'string' }, a: { type: 'number' } } }, prompt: (r) => r.q, reward: (_p, c, r) => (c === String(r.a) ? 1 : 0) });\n`;
    const text = '{"q":"1+1","a":2}\n{"q":"2+2","a":"four"}\n{"q":"3+3","a":6}\n';
    const report = await dryRun({ source: { entry: 'env.ts', files: { 'env.ts': code } }, dataset: { path: 'data/train.jsonl', text }, episodes: 4 });
    expect(report.datasetProblems).toEqual([{ path: 'data/train.jsonl', line: 2, message: 'row.a: expected a finite number, got string' }]);
    expect(report.ok).toBe(false);
    expect(report.episodes).toBe(4);
    expect(report.transcripts[0].task).toMatchObject({ q: expect.stringMatching(/^[13]\+[13]$/) });
  });

  test('the time budget bounds a slow environment', async () => {
    const code = `${HEADER}export default defineSingleTurn({ name: 'slow', systemPrompt: '', sample: () => 0, prompt: () => 'p',
  reward: () => { const end = Date.now() + 150; while (Date.now() < end) {} return 0; } });\n`;
    const started = Date.now();
    const report = await dryRun({ source: { entry: 'env.ts', files: { 'env.ts': code } }, episodes: 100, timeBudgetMs: 600 });
    expect(report.episodes).toBeLessThan(10);
    expect(report.episodes).toBeGreaterThan(0);
    // Stopped near its budget, not after all 100 episodes (15 s); a bound, not a speed figure.
    expect(Date.now() - started).toBeLessThan(12_000);
  });
});
