import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadTemplate, templateRows } from '../load-template';
import { openInSandbox, playWith } from '../test-support/template-harness';
import { generateMathDataset, toJsonl } from './generate-dataset';
import { type SandboxEnvironment } from '../../gpu-worker/runtime/sandbox/sandbox-environment';
import { dryRun } from '../../gpu-worker/runtime/dry-run';

const template = loadTemplate('math');
let env: SandboxEnvironment;
beforeAll(async () => {
  env = await openInSandbox(template);
});
afterAll(() => env.dispose());

describe('math template', () => {
  test('the shipped dataset is what the generator makes, and the splits are disjoint', () => {
    const generated = generateMathDataset();
    expect(template.datasetFiles['data/train.jsonl']).toBe(toJsonl(generated.train));
    expect(template.datasetFiles['data/held-out.jsonl']).toBe(toJsonl(generated.heldOut));
    const rowSchema = env.description.rowSchema!;
    const train = templateRows(template, 'train', rowSchema);
    const heldOut = templateRows(template, 'heldOut', rowSchema);
    expect(train).toHaveLength(9500);
    expect(heldOut).toHaveLength(500);
    const trainQuestions = new Set(train.map((r) => r.question));
    expect(heldOut.some((r) => trainQuestions.has(r.question))).toBe(false);
    // Every two-digit addition, once.
    expect(new Set([...trainQuestions, ...heldOut.map((r) => r.question)]).size).toBe(10_000);
    for (const row of [...heldOut, ...train]) {
      const [a, b] = /^(\d\d)\+(\d\d)$/.exec(String(row.question))!.slice(1);
      expect(row.answer).toBe(Number(a) + Number(b));
    }
  });

  test('exact match on the first line, the answer written ones digit first', async () => {
    const row = { question: '07+45', answer: 52 };
    const cases: [string, number][] = [['250', 1], [' 250.\nbecause', 1], ['250 ', 1], ['052', 0], ['52', 0], ['25', 0], ['350', 0], ['the answer is 250', 0], ['', 0]];
    for (const [completion, reward] of cases) {
      const t = await playWith(env, { agent: [completion] }, { row });
      expect(t.turns[0].observation).toBe('07+45=');
      expect(t.totalRewards.agent, completion).toBe(reward);
    }
    const t = await playWith(env, { agent: ['891'] }, { row: { question: '99+99', answer: 198 } });
    expect(t.totalRewards.agent).toBe(1);
    expect(t.finalInfo).toMatchObject({ given: '891', read: 198, correct: true });
  });

  test('rows that do not match the schema are refused', async () => {
    const t = await playWith(env, { agent: ['1'] }, { row: { question: '1+1' } });
    expect(t.error).toMatchObject({ kind: 'invalid-output', message: expect.stringMatching(/row.answer: missing/) });
  });

  test('dry run on held-out rows: oracle all right, noisy about half', async () => {
    const rows = templateRows(template, 'heldOut', env.description.rowSchema!);
    const oracle = await dryRun({ source: template.source, manifest: template.manifest, rows, episodes: 30 });
    expect(oracle.ok).toBe(true);
    expect(oracle.rewards.agent.mean).toBe(1);
    const noisy = await dryRun({ source: template.source, manifest: template.manifest, rows, episodes: 60, botPerAgent: { agent: 'noisy' } });
    expect(noisy.rewards.agent.mean).toBeGreaterThan(0.25);
    expect(noisy.rewards.agent.mean).toBeLessThan(0.75);
  });
});
