import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { dryRun } from '../../gpu-worker/runtime/dry-run';
import { type SandboxEnvironment } from '../../gpu-worker/runtime/sandbox/sandbox-environment';
import { loadTemplate } from '../load-template';
import { openInSandbox, playWith } from '../test-support/template-harness';

const template = loadTemplate('blank');
let env: SandboxEnvironment;
beforeAll(async () => {
  env = await openInSandbox(template);
});
afterAll(() => env.dispose());

describe('blank template', () => {
  test('a data-free multi-turn environment whose oracle earns 1 and whose wrong guesses get hints', async () => {
    expect(env.description).toMatchObject({ kind: 'multi-turn', agents: ['agent'], rowSchema: null, bots: ['oracle', 'random'] });
    expect((await playWith(env, { agent: 'oracle' }, { seed: 4 })).totalRewards.agent).toBe(1);
    const wrong = await playWith(env, { agent: ['x', 'x', 'x'] }, { seed: 4 });
    expect(wrong.totalRewards.agent).toBe(0);
    expect(wrong.turns).toHaveLength(3);
    expect(wrong.turns[0].info).toMatchObject({ guess: null, right: false });
  });

  test('passes its dry run', async () => {
    const { kind, agents, limits } = template.manifest;
    const report = await dryRun({ source: template.source, manifest: { kind, agents, limits }, episodes: 8 });
    expect(report.ok, JSON.stringify(report.errors)).toBe(true);
  });
});
