import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadTemplate, templateRows } from '../load-template';
import { openInSandbox, playWith } from '../template-harness';
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
    expect(train).toHaveLength(2000);
    expect(heldOut).toHaveLength(200);
    const trainQuestions = new Set(train.map((r) => r.question));
    expect(heldOut.some((r) => trainQuestions.has(r.question))).toBe(false);
    for (const row of heldOut.slice(0, 50)) {
      const [a, op, b] = /^(\d+)([+-])(\d+)$/.exec(String(row.question))!.slice(1);
      expect(row.answer).toBe(op === '+' ? Number(a) + Number(b) : Number(a) - Number(b));
    }
  });

  test('exact match on the first line', async () => {
    const row = { question: '37+45', answer: 82 };
    const cases: [string, number][] = [['82', 1], [' 82.\nbecause', 1], ['82 ', 1], ['83', 0], ['the answer is 82', 0], ['', 0]];
    for (const [completion, reward] of cases) {
      const t = await playWith(env, { agent: [completion] }, { row });
      expect(t.turns[0].observation).toBe('37+45=');
      expect(t.totalRewards.agent, completion).toBe(reward);
    }
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
