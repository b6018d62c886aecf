/**
 * Loss pieces shared by the trainers, small enough to check by hand (losses.test.ts). Tensor
 * functions work on flattened [B·T] token rows with a 0/1 mask; advantage estimators are plain
 * JavaScript over numbers.
 */
import * as tf from '@tensorflow/tfjs';
import { type GRPOOptions } from '../../sdk/training-config';

// ---------- supervised ----------

/** Mean negative log-likelihood over trainable tokens. `logp` are target log-probabilities. */
export function maskedNll(logp: tf.Tensor1D, mask: tf.Tensor1D): tf.Scalar {
  return logp.mul(mask).sum().div(mask.sum().maximum(1)).neg() as tf.Scalar;
}

// ---------- aggregation ----------

/**
 * How per-token losses become one number:
 * - token-mean: every trainable token in the batch weighs the same (verl's default);
 * - seq-mean-token-mean: mean over sequences of each sequence's token mean (GRPO paper; biased
 *   toward short sequences);
 * - seq-sum-norm: sum over tokens divided by (sequences × a constant), Dr. GRPO's unbiased form.
 */
/** How token losses are averaged; the values and what each means are in sdk/training-config.ts. */
export type Aggregation = GRPOOptions['aggregation'];

export function aggregate(perToken: tf.Tensor1D, mask: tf.Tensor1D, rows: number, mode: Aggregation, normConstant: number): tf.Scalar {
  const masked = perToken.mul(mask);
  if (mode === 'token-mean') return masked.sum().div(mask.sum().maximum(1)) as tf.Scalar;
  if (mode === 'seq-sum-norm') return masked.sum().div(rows * normConstant) as tf.Scalar;
  const perSeqSum = masked.reshape([rows, -1]).sum(1);
  const perSeqCount = mask.reshape([rows, -1]).sum(1);
  const hasTokens = perSeqCount.greater(0).toFloat();
  const perSeqMean = perSeqSum.div(perSeqCount.maximum(1));
  return perSeqMean.sum().div(hasTokens.sum().maximum(1)) as tf.Scalar;
}

// ---------- policy gradient ----------

/**
 * PPO's clipped surrogate per token: max(-r·A, -clip(r, 1-low, 1+high)·A) with r = exp(logp - old).
 * Returns the per-token loss and a 0/1 tensor marking tokens where the clipped branch was taken.
 */
export function clippedPolicyLoss(
  logp: tf.Tensor1D,
  oldLogp: tf.Tensor1D,
  advantages: tf.Tensor1D,
  clipLow: number,
  clipHigh: number,
): { loss: tf.Tensor1D; clipped: tf.Tensor1D; ratio: tf.Tensor1D } {
  const ratio = logp.sub(oldLogp).exp() as tf.Tensor1D;
  const unclipped = ratio.mul(advantages).neg();
  const clippedLoss = ratio.clipByValue(1 - clipLow, 1 + clipHigh).mul(advantages).neg();
  return {
    loss: tf.maximum(unclipped, clippedLoss) as tf.Tensor1D,
    clipped: clippedLoss.greater(unclipped).toFloat() as tf.Tensor1D,
    ratio,
  };
}

/** KL(policy ‖ reference) per token from samples of the policy: k1 = log π − log π_ref, k3 = e^{−k1} + k1 − 1 (unbiased, always ≥ 0). */
export type KlEstimator = GRPOOptions['klEstimator'];

export function klPenalty(logp: tf.Tensor1D, refLogp: tf.Tensor1D, estimator: KlEstimator): tf.Tensor1D {
  const diff = logp.sub(refLogp);
  if (estimator === 'k1') return diff as tf.Tensor1D;
  return diff.neg().exp().add(diff).sub(1) as tf.Tensor1D;
}

// ---------- GRPO advantages ----------

export interface GroupAdvantageOptions {
  /** Divide by the group's standard deviation (GRPO, verl) or only subtract the mean (Dr. GRPO). */
  normalizeByStd: boolean;
  epsilon: number;
}

/**
 * Advantage of each sequence within its group: r − mean(group), divided by the group's sample
 * standard deviation (n − 1, as verl's torch.std) when asked. `zeroVariance` marks groups whose
 * rewards are all equal (their advantages are 0 and they carry no gradient); a group of one is
 * zero-variance.
 */
export function groupAdvantages(
  returns: readonly number[],
  groups: readonly (string | number)[],
  opts: GroupAdvantageOptions,
): { advantages: number[]; zeroVariance: boolean[] } {
  const members = new Map<string | number, number[]>();
  groups.forEach((g, i) => members.set(g, [...(members.get(g) ?? []), i]));
  const advantages = new Array<number>(returns.length).fill(0);
  const zeroVariance = new Array<boolean>(returns.length).fill(false);
  for (const idx of members.values()) {
    const rs = idx.map((i) => returns[i]);
    const mean = rs.reduce((a, b) => a + b, 0) / rs.length;
    const std = rs.length > 1 ? Math.sqrt(rs.reduce((a, r) => a + (r - mean) ** 2, 0) / (rs.length - 1)) : 0;
    const flat = rs.length < 2 || rs.every((r) => r === rs[0]);
    for (const i of idx) {
      zeroVariance[i] = flat;
      advantages[i] = flat ? 0 : opts.normalizeByStd ? (returns[i] - mean) / (std + opts.epsilon) : returns[i] - mean;
    }
  }
  return { advantages, zeroVariance };
}

// ---------- PPO: GAE ----------

/**
 * Generalised advantage estimation over one trajectory of T steps.
 * rewards[t], values[t] = V(s_t); `nextValue` is V(s_T) after the last step: pass the critic's
 * estimate when the episode was truncated (bootstrap) and 0 when it terminated.
 *   δ_t = r_t + γ V(s_{t+1}) − V(s_t),   A_t = δ_t + γλ A_{t+1},   R_t = A_t + V(s_t).
 */
export function gae(
  rewards: readonly number[],
  values: readonly number[],
  nextValue: number,
  gamma: number,
  lambda: number,
): { advantages: number[]; returns: number[] } {
  const T = rewards.length;
  const advantages = new Array<number>(T).fill(0);
  let last = 0;
  for (let t = T - 1; t >= 0; t--) {
    const next = t === T - 1 ? nextValue : values[t + 1];
    const delta = rewards[t] + gamma * next - values[t];
    last = delta + gamma * lambda * last;
    advantages[t] = last;
  }
  return { advantages, returns: advantages.map((a, t) => a + values[t]) };
}

/** Subtract the mean and divide by the standard deviation (population), over the given entries. */
export function whiten(xs: readonly number[], epsilon = 1e-8): number[] {
  const n = xs.length;
  if (n === 0) return [];
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const std = Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / n);
  return xs.map((x) => (x - mean) / (std + epsilon));
}

/** PPO's clipped value loss per token: ½ max((V − R)², (V_old + clip(V − V_old, ±c) − R)²). */
export function clippedValueLoss(values: tf.Tensor1D, oldValues: tf.Tensor1D, returns: tf.Tensor1D, clip: number): tf.Tensor1D {
  const unclipped = values.sub(returns).square();
  if (clip <= 0) return unclipped.mul(0.5) as tf.Tensor1D;
  const clippedV = oldValues.add(values.sub(oldValues).clipByValue(-clip, clip));
  return tf.maximum(unclipped, clippedV.sub(returns).square()).mul(0.5) as tf.Tensor1D;
}
