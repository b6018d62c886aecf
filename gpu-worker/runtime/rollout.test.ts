import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { validateBatch } from '../engine/batch';
import { CharTokenizer } from '../engine/tokenizer';
import { HfTokenizer } from '../engine/pretrained/hf-tokenizer';
import { loadTemplate } from '../../env-templates/load-template';
import { openInSandbox } from '../../env-templates/test-support/template-harness';
import { type SandboxEnvironment } from './sandbox/sandbox-environment';
import { type Policy } from './policy';
import { ScriptedPolicy } from './scripted-policy';
import { type EpisodeSpec, type RolloutConfig, runRollouts, trainingBatch } from './rollout';

const tok = new CharTokenizer();
const row = { question: 'What is 347 * 862?', answer: 299114 };
// math-tools sees only its latest observation; these tests keep the whole conversation (`full`).
const config: RolloutConfig = { maxTurns: 4, maxTokensPerTurn: 48, maxResponseTokens: 200, temperature: 1, contextLength: 2048, seed: 1, context: 'full' };

const solo = (episodeId: string, extra: Partial<EpisodeSpec> = {}): EpisodeSpec => ({
  episodeId,
  group: 'g0',
  seed: 1,
  taskSeed: 1,
  row,
  players: { agent: { kind: 'policy', policy: 'p', learn: true } },
  ...extra,
});

/** Calls the calculator, then answers with the tool's result. */
const toolUser = () =>
  new ScriptedPolicy(tok, (prompt) => {
    const result = /<tool_result>(\d+)<\/tool_result>[^]*$/.exec(prompt);
    return result ? `<answer>${result[1]}</answer>` : '<tool_call>calculator(347*862)</tool_call> and more text';
  });

let mathTools: SandboxEnvironment;
let gomoku: SandboxEnvironment;
beforeAll(async () => {
  mathTools = await openInSandbox(loadTemplate('math-tools'));
  gomoku = await openInSandbox(loadTemplate('gomoku'));
});
afterAll(async () => {
  await mathTools.dispose();
  await gomoku.dispose();
});

describe('rollout state machine', () => {
  test('tool call, tool result, answer: exactly the policy tokens are trainable', async () => {
    const policy = toolUser();
    const [r] = await runRollouts(mathTools, tok, { p: policy }, [solo('m1')], config);
    expect(r.endReason).toBe('terminated');
    expect(r.state).toBe('TERMINATED');
    const traj = r.agents.agent;
    expect(traj.turns).toBe(2);
    expect(traj.sequences).toHaveLength(1);
    const [seq] = traj.sequences;

    // The policy's generations, in order: the stop string ended the first one (no EOS).
    const first = tok.encode('<tool_call>calculator(347*862)</tool_call>');
    const second = [...tok.encode('<answer>299114</answer>'), tok.eos];
    const trainable = seq.tokens.filter((_, i) => seq.lossMask[i] === 1);
    expect(trainable).toEqual([...first, ...second]);
    expect(policy.calls[0].options.stop).toContain('</tool_call>');

    // Everything else is the runtime's: system prompt, observation, the inserted EOS, the tool result.
    const text = tok.decode(seq.tokens, { keepSpecial: true });
    expect(text).toBe(
      '<bos><|system|>Multiply.<eos><|user|>347*862<eos><|assistant|><tool_call>calculator(347*862)</tool_call><eos><|tool|><tool_result>299114</tool_result><eos><|assistant|><answer>299114</answer><eos>',
    );
    const insertedEos = first.length + seq.tokens.findIndex((_, i) => seq.lossMask[i] === 1);
    expect(seq.tokens[insertedEos]).toBe(tok.eos);
    expect(seq.lossMask[insertedEos]).toBe(0);

    // The reward sits on the last trainable token.
    const rewards = seq.rewards as number[];
    expect(rewards.reduce((a, b) => a + b, 0)).toBe(1);
    expect(rewards.lastIndexOf(1)).toBe(seq.lossMask.lastIndexOf(1));
    expect(traj.turnRewards).toEqual([0, 1]);
    expect(r.moves.map((m) => m.tool?.name ?? null)).toEqual(['calculator', null]);
    expect(trainingBatch([r], 'agent')).toEqual([seq]);
  });

  test('through a pretrained model\'s chat template: the sampled ids kept as sampled, exactly they and the end of turn trainable', async () => {
    const chatml = HfTokenizer.fromFolder(`${import.meta.dirname}/../engine/pretrained/fixtures/tokenizer-chatml`);
    // The policy spells its text one byte token at a time, which is not how the tokenizer would
    // encode it (its merges join bytes): re-tokenizing the text would change what is trained.
    const spelled = (text: string) => Array.from(text, (ch) => chatml.encode(ch)[0]);
    const written: number[][] = [];
    const policy: Policy = {
      async generate(prompts) {
        return prompts.map((prompt) => {
          const result = /<tool_result>(\d+)<\/tool_result>/.exec(chatml.decode(prompt));
          const tokens = result ? [...spelled(`<answer>${result[1]}</answer>`), chatml.eos] : spelled('<tool_call>calculator(347*862)</tool_call>');
          written.push(tokens);
          return { tokens, text: chatml.decode(tokens), logprobs: tokens.map(() => -0.25), finishReason: result ? 'eos' : 'stop' };
        });
      },
    };
    const [r] = await runRollouts(mathTools, chatml, { p: policy }, [solo('c1')], config);
    expect(r.endReason).toBe('terminated');
    const [seq] = r.agents.agent.sequences;
    expect(written).toHaveLength(2);
    expect(written[0]).not.toEqual(chatml.encode('<tool_call>calculator(347*862)</tool_call>'));
    const trainable = seq.tokens.filter((_, i) => seq.lossMask[i] === 1);
    expect(trainable).toEqual([...written[0], ...written[1]]);
    // Hand-checked: Qwen2.5's ChatML, the runtime closing the turn the stop string ended (not trainable).
    expect(chatml.decode(seq.tokens, { keepSpecial: true })).toBe(
      '<|im_start|>system\nMultiply.<|im_end|>\n<|im_start|>user\n347*862<|im_end|>\n<|im_start|>assistant\n' +
        '<tool_call>calculator(347*862)</tool_call><|im_end|>\n<|im_start|>tool\n<tool_result>299114</tool_result><|im_end|>\n' +
        '<|im_start|>assistant\n<answer>299114</answer><|im_end|>',
    );
    const closing = seq.tokens.findIndex((_, i) => seq.lossMask[i] === 1) + written[0].length;
    expect([seq.tokens[closing], seq.lossMask[closing]]).toEqual([chatml.eos, 0]);
    expect(seq.lossMask.at(-1)).toBe(1);
    expect(r.agents.agent.logprobs[0].filter((_, i) => seq.lossMask[i] === 1).every((l) => l === -0.25)).toBe(true);
  });

  test('episodes in GENERATING are sampled together, one call per round', async () => {
    const policy = toolUser();
    const specs = Array.from({ length: 6 }, (_, i) => solo(`b${i}`, { group: `g${i % 2}` }));
    const rollouts = await runRollouts(mathTools, tok, { p: policy }, specs, config);
    expect(policy.calls.map((c) => c.prompts.length)).toEqual([6, 6]);
    expect(rollouts.map((r) => r.episodeId)).toEqual(specs.map((s) => s.episodeId));
    expect(rollouts.every((r) => r.agents.agent.totalReward === 1)).toBe(true);
    expect(trainingBatch(rollouts, 'agent').map((s) => s.group)).toEqual(['g0', 'g1', 'g0', 'g1', 'g0', 'g1']);
  });

  test.each([
    ['turns', { maxTurns: 2 }, 'thinking', 'max-turns', 2],
    ['total tokens', { maxResponseTokens: 20 }, 'thinking about it', 'max-tokens', 2],
    ['context', { contextLength: 100 }, 'thinking about it', 'context', 1],
  ] as [string, Partial<RolloutConfig>, string, string, number][])('cut by %s', async (_name, limits, reply, reason, turns) => {
    const policy = new ScriptedPolicy(tok, () => reply);
    const [r] = await runRollouts(mathTools, tok, { p: policy }, [solo(`cut-${reason}`)], { ...config, ...limits });
    expect(r.endReason).toBe(reason);
    expect(r.agents.agent.turns).toBe(turns);
    expect(r.agents.agent.sequences[0].truncated).toBe(true);
    expect(r.agents.agent.responseTokens).toBeLessThanOrEqual(limits.maxResponseTokens ?? config.maxResponseTokens);
  });

  test('an episode that outgrows the context ends as truncated and trains on what fits, at every context length', async () => {
    const policy = new ScriptedPolicy(tok, () => 'thinking about it');
    for (let contextLength = 40; contextLength <= 220; contextLength += 12) {
      const [r] = await runRollouts(mathTools, tok, { p: policy }, [solo(`fit-${contextLength}`)], { ...config, maxTurns: 20, maxResponseTokens: 2000, contextLength });
      expect(r.endReason, `context ${contextLength}`).toBe('context');
      const batch = trainingBatch([r], 'agent');
      expect(batch).toHaveLength(1);
      // The batch the trainer validates: every sequence within the context, with trainable tokens.
      validateBatch(batch, { contextLength, vocabSize: tok.vocabSize, needRewards: false, needGroups: false });
      expect(batch[0].lossMask.some((m) => m === 1)).toBe(true);
    }
  });

  test('a turn longer than maxTokensPerTurn is cut, and its tokens stay trainable', async () => {
    const policy = new ScriptedPolicy(tok, () => 'x'.repeat(100));
    const [r] = await runRollouts(mathTools, tok, { p: policy }, [solo('long')], { ...config, maxTurns: 1 });
    const seq = r.agents.agent.sequences[0];
    expect(seq.lossMask.filter((m) => m === 1)).toHaveLength(48);
  });

  test('an environment error ends the episode and keeps it out of training', async () => {
    const policy = toolUser();
    const [r] = await runRollouts(mathTools, tok, { p: policy }, [solo('bad', { row: { question: 'no answer field' } })], config);
    expect(r.endReason).toBe('error');
    expect(r.error?.message).toMatch(/row.answer: missing/);
    expect(trainingBatch([r], 'agent')).toEqual([]);
  });

  test('latest context against a bot: one sequence per move, returns-to-go, zero-sum, full match record', async () => {
    const policy = new ScriptedPolicy(tok, (prompt) => {
      // Play the first empty cell of the board in the prompt.
      const lines = prompt.split('<|user|>').pop()!.split('\n').slice(1, 10);
      for (let r = 0; r < 9; r++) {
        const cells = lines[r].trim().split(/\s+/).slice(1);
        const c = cells.indexOf('.');
        if (c >= 0) return `<move>${r + 1},${c + 1}</move>`;
      }
      return 'no move';
    });
    const spec: EpisodeSpec = {
      episodeId: 'gm1',
      group: 'g',
      seed: 3,
      taskSeed: 3,
      players: { black: { kind: 'policy', policy: 'p', learn: true }, white: { kind: 'bot', bot: 'scripted' } },
    };
    const [r] = await runRollouts(gomoku, tok, { p: policy }, [spec], { ...config, context: undefined, maxTurns: 41, maxTokensPerTurn: 16, maxResponseTokens: 1000 });
    expect(r.endReason).toBe('terminated');
    const black = r.agents.black;
    expect(black.sequences).toHaveLength(black.turns);
    // Each move's prompt is the system prompt and the latest board only.
    for (const seq of black.sequences) expect(tok.decode(seq.tokens, { keepSpecial: true }).split('<|user|>')).toHaveLength(2);
    expect(black.sequences.map((s) => s.rewards)).toEqual(black.sequences.map(() => black.totalReward));
    expect(black.totalReward + r.agents.white.totalReward).toBe(0);
    expect(r.agents.white.sequences).toEqual([]);
    expect(r.moves.map((m) => m.agent)).toEqual(r.moves.map((_, i) => (i % 2 === 0 ? 'black' : 'white')));
    expect(r.moves.filter((m) => m.byBot).every((m) => m.agent === 'white')).toBe(true);
    expect(['black', 'white']).toContain(r.finalInfo.result);
  });
});
