import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadTemplate, templateRows } from '../load-template';
import { openInSandbox, playWith } from '../test-support/template-harness';
import { evaluate } from './calculator';
import { generateToolMathDataset } from './generate-dataset';
import { type SandboxEnvironment } from '../../gpu-worker/runtime/sandbox/sandbox-environment';
import { dryRun } from '../../gpu-worker/runtime/dry-run';

const template = loadTemplate('math-tools');
const row = { question: 'What is 347 * 862?', answer: 299114 };
let env: SandboxEnvironment;
beforeAll(async () => {
  env = await openInSandbox(template);
});
afterAll(() => env.dispose());

describe('calculator', () => {
  test.each([
    ['347*862', 299114],
    ['2 + 3 * 4', 14],
    ['(2+3)*4', 20],
    ['-3 - -2', -1],
    ['7/2', 3.5],
  ])('%s = %d', (expression, value) => expect(evaluate(expression)).toBe(value));

  test.each([['1/0', /division by zero/], ['2 +', /ended early/], ['2 ** 3', /unexpected "\*"/], ['alert(1)', /unexpected "a"/]])('%s is refused', (expression, message) => {
    expect(() => evaluate(expression)).toThrow(message);
  });
});

describe('math-tools template', () => {
  test('declares its calculator tool; the prompt is compact: no tool paragraph, the question as 347*862, latest context', async () => {
    expect(env.description.tools.map((t) => t.name)).toEqual(['calculator']);
    expect(env.description.toolPrompt).toBe('');
    expect(env.description.context).toBe('latest');
    const t = await playWith(env, { agent: 'tool-user' }, { row });
    expect(t.systemPrompts.agent).toBe('Multiply.');
    expect(t.turns[0].observation).toBe('347*862');
    // The SDK's paragraph, for an environment that keeps the default (toolPrompt 'full').
    const full = await openInSandbox(template, { 'full.ts': "import env from './env';\nexport default { ...env, toolPrompt: 'full' };\n" }, 'full.ts');
    try {
      expect(full.description.toolPrompt).toContain('<tool_call>calculator(arguments)</tool_call>');
    } finally {
      await full.dispose();
    }
  });

  test('call, read the result, answer: reward 1 in two turns', async () => {
    const t = await playWith(env, { agent: 'tool-user' }, { row });
    expect(t.turns.map((x) => x.action)).toEqual(['<tool_call>calculator(347*862)</tool_call>', '<answer>299114</answer>']);
    expect(t.turns[1].observation).toBe('<tool_result>299114</tool_result>');
    expect(t.turns[0].tool).toEqual({ name: 'calculator', ok: true });
    expect(t.totalRewards.agent).toBe(1);
    expect(t.finalInfo).toMatchObject({ correct: true, calls: 1 });
  });

  test('a bad call is reported to the agent, who may try again', async () => {
    const t = await playWith(env, { agent: ['<tool_call>calculator(347/0)</tool_call>', '<tool_call>calc(1)</tool_call>', '299114'] }, { row });
    expect(t.turns[1].observation).toBe('<tool_result>error: division by zero</tool_result>');
    expect(t.turns[2].observation).toMatch(/^<tool_result>error: unknown tool "calc"/);
    expect(t.endReason).toBe('terminated');
    expect(t.totalRewards.agent).toBe(1);
  });

  test('without an answer the episode is cut at maxTurns', async () => {
    const t = await playWith(env, { agent: ['hmm', 'let me think', 'ok', 'so'] }, { row, maxTurns: template.manifest.limits.maxTurns });
    expect(t.endReason).toBe('max-turns');
    expect(t.turns[1].observation).toMatch(/<answer>N<\/answer>/);
    expect(t.totalRewards.agent).toBe(0);
  });

  test('dataset matches its generator; dry runs with bots and random text have no errors', async () => {
    const rows = templateRows(template, 'heldOut', env.description.rowSchema!);
    expect(rows).toEqual(generateToolMathDataset().heldOut);
    const good = await dryRun({ source: template.source, manifest: template.manifest, rows, episodes: 10 });
    expect(good.ok).toBe(true);
    expect(good.warnings).toEqual([]);
    expect(good.rewards.agent.mean).toBe(1);
    expect(good.lengths.mean).toBe(2);
    // A turn too short for the bot's call (the template's limit was once 32): the dry run names the bot and the count.
    const short = await dryRun({ source: template.source, manifest: { ...template.manifest, limits: { ...template.manifest.limits, maxTokensPerTurn: 32 } }, rows, episodes: 4 });
    expect(short.warnings).toEqual([
      'bot "tool-user" (playing agent) wrote an action of 42 tokens, more than limits.maxTokensPerTurn (32): a policy that imitates it is cut off before the end; raise maxTokensPerTurn to at least 42',
    ]);
    const random = await dryRun({ source: template.source, manifest: template.manifest, rows, episodes: 20, policy: 'random' });
    expect(random.errors).toEqual([]);
    expect(random.endReasons.error).toBe(0);
  });
});
