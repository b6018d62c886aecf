import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { GRPOTrainer } from './grpo';
import { aggregate, clippedPolicyLoss, clippedValueLoss, gae, groupAdvantages, klPenalty, whiten } from './losses';
import { GPT } from './model';
import { PPOTrainer, actionRewards } from './ppo';
import { testBackend } from '../test-support/engine/test-setup';

beforeAll(async () => {
  await testBackend();
});

const arr = (t: tf.Tensor) => Array.from(t.dataSync());

describe('GRPO pieces, by hand', () => {
  it('group advantages: std-normalised, Dr. GRPO, zero-variance groups', () => {
    const returns = [1, 0, 0, 1, 2, 2];
    const groups = ['a', 'a', 'a', 'a', 'b', 'b'];
    const std = groupAdvantages(returns, groups, { normalizeByStd: true, epsilon: 0 });
    // mean 0.5, sample std sqrt(1/3) → ±0.5 / 0.57735 = ±0.866025
    std.advantages.slice(0, 4).forEach((a, i) => expect(a).toBeCloseTo([0.866025, -0.866025, -0.866025, 0.866025][i], 5));
    expect(std.advantages.slice(4)).toEqual([0, 0]);
    expect(std.zeroVariance).toEqual([false, false, false, false, true, true]);
    const dr = groupAdvantages(returns, groups, { normalizeByStd: false, epsilon: 0 });
    expect(dr.advantages).toEqual([0.5, -0.5, -0.5, 0.5, 0, 0]);
  });

  it('clipped surrogate with clip-higher and the three aggregations', () => {
    const logp = tf.tensor1d([Math.log(1.5), Math.log(0.5), Math.log(1.1), Math.log(0.7)]);
    const old = tf.zeros([4]) as tf.Tensor1D;
    const adv = tf.tensor1d([1, 1, -1, -1]);
    const mask = tf.tensor1d([1, 1, 1, 0]);
    const { loss, clipped } = clippedPolicyLoss(logp, old, adv, 0.2, 0.28);
    arr(loss).forEach((v, i) => expect(v).toBeCloseTo([-1.28, -0.5, 1.1, 0.8][i], 5));
    expect(arr(clipped)).toEqual([1, 0, 0, 1]);
    expect(aggregate(loss, mask, 2, 'token-mean', 1).dataSync()[0]).toBeCloseTo(-0.68 / 3, 5);
    expect(aggregate(loss, mask, 2, 'seq-mean-token-mean', 1).dataSync()[0]).toBeCloseTo((-0.89 + 1.1) / 2, 5);
    expect(aggregate(loss, mask, 2, 'seq-sum-norm', 4).dataSync()[0]).toBeCloseTo(-0.68 / 8, 5);
  });

  it('KL estimators k1 and k3', () => {
    const logp = tf.tensor1d([Math.log(1.5), 0]);
    const ref = tf.zeros([2]) as tf.Tensor1D;
    expect(arr(klPenalty(logp, ref, 'k1'))[0]).toBeCloseTo(0.405465, 5);
    const k3 = arr(klPenalty(logp, ref, 'k3'));
    expect(k3[0]).toBeCloseTo(2 / 3 + 0.405465 - 1, 5);
    expect(k3[1]).toBe(0);
  });

  it('GRPO trainer: first-update policy loss equals −token-mean(advantage)', () => {
    const m = new GPT({ vocabSize: 12, contextLength: 8, layers: 1, width: 8, heads: 2 });
    const t = new GRPOTrainer(m, { learningRate: 1e-3 });
    const metrics = t.step([
      { tokens: [1, 5, 6, 7], lossMask: [0, 0, 1, 1], rewards: 1, group: 0 },
      { tokens: [1, 5, 8, 9, 10], lossMask: [0, 0, 1, 1, 1], rewards: 0, group: 0 },
      { tokens: [1, 5, 8, 9], lossMask: [0, 0, 1, 1], rewards: 3, group: 1 },
      { tokens: [1, 5, 8, 9], lossMask: [0, 0, 1, 1], rewards: 3, group: 1 },
    ]);
    // Group 1 is dropped (equal rewards); group 0: A = ±0.5/0.7071 = ±0.7071 on 2 and 3 tokens.
    expect(metrics.policyLoss!).toBeCloseTo(-(2 * 0.707106 - 3 * 0.707106) / 5, 4);
    expect(metrics.clipFraction).toBe(0);
    expect(metrics.rewardMean).toBe(1.75);
    expect(metrics.rewardMax).toBe(3);
    expect(metrics.tokens).toBe(5);
    expect(() => t.step([{ tokens: [1, 5], lossMask: [0, 1], rewards: NaN, group: 0 }])).toThrow(/batch\[0\]\.rewards/);
    expect(() => t.step([{ tokens: [1, 5], lossMask: [0, 1], rewards: 1 }])).toThrow(/batch\[0\]\.group/);
    expect(() => new GRPOTrainer(m, { aggregation: 'sum' as never })).toThrow(/grpo\.aggregation/);
    t.dispose();
    m.dispose();
  });
});

describe('PPO pieces, by hand', () => {
  it('GAE with termination and with a truncation bootstrap', () => {
    const term = gae([0, 0, 1], [0.5, 0.6, 0.7], 0, 0.9, 0.8);
    [0.21712, 0.246, 0.3].forEach((a, i) => expect(term.advantages[i]).toBeCloseTo(a, 6));
    [0.71712, 0.846, 1.0].forEach((r, i) => expect(term.returns[i]).toBeCloseTo(r, 6));
    const trunc = gae([0, 0, 1], [0.5, 0.6, 0.7], 2, 0.9, 0.8);
    [1.15024, 1.542, 2.1].forEach((a, i) => expect(trunc.advantages[i]).toBeCloseTo(a, 6));
  });

  it('clipped value loss, whitening, and rewards on environment tokens', () => {
    const v = clippedValueLoss(tf.tensor1d([1.0, 0.6]), tf.tensor1d([0.5, 0.5]), tf.tensor1d([2.0, 0.0]), 0.2);
    // token 0: max((1−2)², (0.7−2)²)/2 = 0.845; token 1: max(0.36, 0.36)/2 = 0.18
    arr(v).forEach((x, i) => expect(x).toBeCloseTo([0.845, 0.18][i], 5));
    const w = whiten([1, 2, 3]);
    expect(w[0]).toBeCloseTo(-1.224745, 5);
    expect(w[1]).toBeCloseTo(0, 6);
    expect(actionRewards({ tokens: [1, 2, 3, 4, 5, 6], lossMask: [0, 1, 1, 0, 0, 1], rewards: [0, 0.5, 0, 2, 0, 1] })).toEqual({
      tokenIndex: [1, 2, 5],
      rewards: [0.5, 2, 1],
    });
  });

  it('PPO trainer: bootstraps on truncation, not on termination', () => {
    const m = new GPT({ vocabSize: 12, contextLength: 8, layers: 1, width: 8, heads: 2, valueHead: true });
    // Every value starts at 0.5 (zero value weights, bias 0.5).
    const bias = tf.fill([1], 0.5);
    m.p('value.b').assign(bias);
    bias.dispose();
    const t = new PPOTrainer(m, { gamma: 1, lambda: 1, whitenAdvantages: false, epochs: 1, valueClip: 0 });
    const metrics = t.step([
      { tokens: [1, 5, 6, 7, 8], lossMask: [0, 0, 1, 1, 1], rewards: 1 },
      { tokens: [1, 5, 6, 7, 8], lossMask: [0, 0, 1, 1, 1], rewards: 1, truncated: true },
    ]);
    // Terminated: A = 1 − 0.5 = 0.5 on 3 actions (returns 1). Truncated: A = 1 + 0.5 − 0.5 = 1 (returns 1.5).
    expect(metrics.policyLoss!).toBeCloseTo(-(3 * 0.5 + 3 * 1) / 6, 4);
    expect(metrics.valueLoss!).toBeCloseTo((0.5 * (3 * 0.25 + 3 * 1)) / 6, 4);
    expect(() => new PPOTrainer(new GPT({ vocabSize: 12 }))).toThrow(/model\.valueHead/);
    t.dispose();
    m.dispose();
  });
});
