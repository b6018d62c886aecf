import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Sequence } from './batch';
import { GRPOTrainer } from './grpo';
import { GPT } from './model';
import { PPOTrainer } from './ppo';
import { Rng } from './rng';
import { sample } from './sampler';
import { SFTTrainer } from './sft';
import { testBackend } from '../test-support/engine/test-setup';
import { allStrings, promptOf, reversalExample } from '../test-support/engine/test-tasks';
import { CharTokenizer } from './tokenizer';

beforeAll(async () => {
  await testBackend();
});

describe('GRPO learning', () => {
  it('raises the reward of a partly trained policy on string reversal', () => {
    const tok = new CharTokenizer('abcde=');
    const strings = allStrings('abcde', 3, 3);
    const model = new GPT({ vocabSize: tok.vocabSize, contextLength: 12, layers: 2, width: 32, heads: 4, seed: 1 });
    const rng = new Rng(1);
    // Partly train with SFT so that some samples are right and some wrong.
    const sft = new SFTTrainer(model, { learningRate: 3e-3, warmupSteps: 10 });
    for (let s = 0; s < 70; s++) sft.step(Array.from({ length: 32 }, () => reversalExample(tok, strings[rng.int(strings.length)])));
    sft.dispose();

    const reward = (s: string, text: string) => (text === [...s].reverse().join('') ? 1 : 0);
    const evaluate = (seed: number) => {
      const out = sample(model, tok, strings.map((s) => promptOf(tok, s)), { temperature: 1, maxTokens: 4, seed });
      return out.reduce((a, r, i) => a + reward(strings[i], r.text), 0) / strings.length;
    };
    const before = evaluate(100);
    const grpo = new GRPOTrainer(model, { learningRate: 2e-3, seed: 2 });
    const tensors = tf.memory().numTensors;
    for (let step = 0; step < 30; step++) {
      const prompts = Array.from({ length: 16 }, () => strings[rng.int(strings.length)]);
      const group = 8;
      const flat = prompts.flatMap((s) => new Array<string>(group).fill(s));
      const outs = sample(model, tok, flat.map((s) => promptOf(tok, s)), { temperature: 1, maxTokens: 4, seed: 1000 + step });
      const batch: Sequence[] = outs.map((r, i) => {
        const prompt = promptOf(tok, flat[i]);
        return {
          tokens: [...prompt, ...r.tokens],
          lossMask: [...prompt.map(() => 0), ...r.tokens.map(() => 1)],
          rewards: reward(flat[i], r.text),
          group: Math.floor(i / group),
        };
      });
      grpo.step(batch);
    }
    expect(tf.memory().numTensors).toBe(tensors);
    const after = evaluate(100);
    expect(before).toBeLessThan(0.8);
    expect(after).toBeGreaterThan(before + 0.15);
    grpo.dispose();
    model.dispose();
  });
});

describe('PPO learning', () => {
  it('learns a two-step bandit (reward on the final token, credit through GAE)', () => {
    const tok = new CharTokenizer('abcde?');
    const model = new GPT({ vocabSize: tok.vocabSize, contextLength: 8, layers: 1, width: 32, heads: 4, valueHead: true, seed: 2 });
    const ppo = new PPOTrainer(model, { learningRate: 3e-3, epochs: 2, seed: 3 });
    const prompt = [tok.bos, ...tok.encode('?')];
    // Reward: 1 for "cd", 0.3 for a correct first letter only, else 0.
    const reward = (text: string) => (text === 'cd' ? 1 : text[0] === 'c' ? 0.3 : 0);
    const meanReward = (seed: number) => {
      const outs = sample(model, tok, new Array(64).fill(prompt), { temperature: 1, maxTokens: 2, stopAtEos: false, seed });
      return outs.reduce((a, r) => a + reward(r.text), 0) / outs.length;
    };
    const before = meanReward(7);
    for (let step = 0; step < 40; step++) {
      const outs = sample(model, tok, new Array(64).fill(prompt), { temperature: 1, maxTokens: 2, stopAtEos: false, seed: step });
      ppo.step(
        outs.map((r) => ({
          tokens: [...prompt, ...r.tokens],
          lossMask: [0, 0, 1, 1],
          rewards: reward(r.text),
        })),
      );
    }
    const after = meanReward(7);
    expect(before).toBeLessThan(0.1);
    expect(after).toBeGreaterThan(0.8);
    ppo.dispose();
    model.dispose();
  });
});
