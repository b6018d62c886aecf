import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadTemplate } from '../load-template';
import { openInSandbox, playWith } from '../test-support/template-harness';
import { type SandboxEnvironment } from '../../gpu-worker/runtime/sandbox/sandbox-environment';
import { dryRun } from '../../gpu-worker/runtime/dry-run';

const template = loadTemplate('bandit');
let env: SandboxEnvironment;
beforeAll(async () => {
  env = await openInSandbox(template);
});
afterAll(() => env.dispose());

describe('bandit template', () => {
  test('describes itself as a data-free single-turn environment', () => {
    expect(env.description).toMatchObject({ kind: 'single-turn', agents: ['agent'], rowSchema: null, bots: ['oracle', 'random'] });
    expect(template.manifest.kind).toBe('single-turn');
  });

  test('the oracle always earns 1; a random arm about a quarter of the time', async () => {
    const oracle: number[] = [];
    const random: number[] = [];
    for (let seed = 0; seed < 200; seed++) {
      oracle.push((await playWith(env, { agent: 'oracle' }, { seed })).totalRewards.agent);
      random.push((await playWith(env, { agent: 'random' }, { seed })).totalRewards.agent);
    }
    expect(oracle.every((r) => r === 1)).toBe(true);
    const mean = random.reduce((a, b) => a + b, 0) / random.length;
    expect(mean).toBeGreaterThan(0.15);
    expect(mean).toBeLessThan(0.35);
  });

  test('the arm is read from the first letter; anything else earns 0', async () => {
    const t = await playWith(env, { agent: ['  c, I think'] }, { seed: 3 });
    expect(t.turns[0].info.arm).toBe('C');
    const garbage = await playWith(env, { agent: ['???'] }, { seed: 3 });
    expect(garbage.totalRewards.agent).toBe(0);
    expect(garbage.turns[0].info).toMatchObject({ arm: null, valid: false });
  });

  test('the task follows the task seed', async () => {
    const a = await playWith(env, { agent: ['A'] }, { seed: 1, taskSeed: 9 });
    const b = await playWith(env, { agent: ['A'] }, { seed: 2, taskSeed: 9 });
    expect(a.task).toEqual(b.task);
    expect(a.turns[0].observation).toMatch(/^colour: (red|green|blue|yellow)\narm:$/);
  });

  test('dry run passes', async () => {
    const report = await dryRun({ source: template.source, manifest: template.manifest, episodes: 20 });
    expect(report.ok).toBe(true);
    expect(report.warnings).toEqual([]);
    expect(report.rewards.agent.mean).toBe(1);
  });
});
