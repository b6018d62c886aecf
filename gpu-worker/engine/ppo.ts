/**
 * PPO with a value head on the policy's trunk. Each trainable token is one action; its state is
 * everything before it. Environment tokens (mask 0) are part of the dynamics, not actions.
 *
 *   δ_t = r_t + γ V(s_{t+1}) − V(s_t),  A_t = Σ (γλ)^k δ_{t+k},  R_t = A_t + V(s_t)
 *   V after the last action: 0 when the episode terminated, the critic's V(s_T) when truncated.
 *   L = mean_tokens( max(−r·Â, −clip(r)·Â) ) + c_v · mean_tokens(clipped value loss) − c_e · entropy
 */
import * as tf from '@tensorflow/tfjs';
import { type Sequence, prepareBatch, selectRows, sequenceReturn, tokenRewards, validateBatch } from './batch';
import { ConfigError, parseEngineConfig } from './errors';
import { aggregate, clippedPolicyLoss, clippedValueLoss, gae, klPenalty, whiten } from './losses';
import { type LanguageModel } from './model';
import { frozenReference } from './reference';
import { rowEntropy, targetLogProbs } from './ops';
import { type Reads, readAsync, readSync } from './reads';
import { type PPOOptions, ppoOptionsSchema } from '../../sdk/training-config';
import { type StepMetrics, TrainerCore, type TrainerState, minibatches, rewardStats } from './trainer-core';

/** PPO's options: names, defaults and their sources are in sdk/training-config.ts (ppoOptionsSchema). */
export type PPOConfig = PPOOptions;
export const PPO_DEFAULTS: PPOConfig = ppoOptionsSchema.parse({});

export function resolvePPOConfig(partial: Partial<PPOConfig> = {}): PPOConfig {
  return parseEngineConfig(ppoOptionsSchema, partial, 'ppo');
}

/**
 * Per-action rewards of one sequence, aligned with the trainable tokens: a reward on an
 * environment token is credited to the action before it (or the first action if none precedes).
 */
export function actionRewards(s: Sequence): { tokenIndex: number[]; rewards: number[] } {
  const r = tokenRewards(s);
  const tokenIndex: number[] = [];
  const rewards: number[] = [];
  let pending = 0;
  for (let j = 0; j < s.tokens.length; j++) {
    if (s.lossMask[j] === 1) {
      tokenIndex.push(j);
      rewards.push(r[j] + pending);
      pending = 0;
    } else if (r[j] !== 0) {
      if (rewards.length > 0) rewards[rewards.length - 1] += r[j];
      else pending += r[j];
    }
  }
  return { tokenIndex, rewards };
}

export class PPOTrainer {
  readonly config: PPOConfig;
  readonly core: TrainerCore;
  readonly reference: LanguageModel | null;
  private readonly ownsReference: boolean;

  /** `reference`: the frozen KL reference (e.g. restored from a checkpoint); default `model` as it is now (frozenReference). */
  constructor(
    readonly model: LanguageModel,
    config: Partial<PPOConfig> = {},
    reference?: LanguageModel,
  ) {
    this.config = resolvePPOConfig(config);
    if (!model.hasValueHead) throw new ConfigError('model.valueHead', 'PPO needs a model created with valueHead: true');
    this.core = new TrainerCore(model, this.config, this.config.seed);
    this.ownsReference = this.config.klCoef > 0 && !reference;
    this.reference = this.config.klCoef > 0 ? (reference ?? frozenReference(model)) : null;
  }

  /** One trainer step on `batch` (wasm and cpu; `stepAsync` on every backend). */
  step(batch: readonly Sequence[]): StepMetrics {
    return readSync(this.steps(batch));
  }

  /** One trainer step on `batch`, reading values without blocking (WebGPU needs this). */
  stepAsync(batch: readonly Sequence[]): Promise<StepMetrics> {
    return readAsync(this.steps(batch));
  }

  private *steps(batch: readonly Sequence[]): Reads<StepMetrics> {
    const c = this.config;
    const { contextLength, vocabSize } = this.model;
    validateBatch(batch, { contextLength, vocabSize, needRewards: true });
    const t0 = performance.now();

    // 1. Old log-probs and values, reading the full sequences so V(after last token) exists.
    const b = prepareBatch(batch, 0, true);
    const { logp: oldLogp, values: oldValues } = yield* this.evaluate(this.model, b.inputs, b.targets);
    const refLogp = this.reference ? (yield* this.evaluate(this.reference, b.inputs, b.targets)).logp : new Float32Array(b.rows * b.cols);

    // 2. GAE per sequence over its actions; bootstrap only when truncated.
    const tokenAdv = new Float32Array(b.rows * b.cols);
    const tokenRet = new Float32Array(b.rows * b.cols);
    const slots: number[] = [];
    const allAdv: number[] = [];
    batch.forEach((s, i) => {
      const { tokenIndex, rewards } = actionRewards(s);
      // The action "token j" is predicted at column j − 1.
      const values = tokenIndex.map((j) => oldValues[i * b.cols + j - 1]);
      const next = s.truncated ? oldValues[i * b.cols + s.tokens.length - 1] : 0;
      const { advantages, returns } = gae(rewards, values, next, c.gamma, c.lambda);
      tokenIndex.forEach((j, k) => {
        const at = i * b.cols + j - 1;
        slots.push(at);
        allAdv.push(advantages[k]);
        tokenRet[at] = returns[k];
      });
    });
    const adv = c.whitenAdvantages ? whiten(allAdv) : allAdv;
    slots.forEach((at, k) => (tokenAdv[at] = adv[k]));

    // 3. Epochs × minibatches of clipped policy and value updates.
    const sums = { loss: 0, policyLoss: 0, valueLoss: 0, kl: 0, entropy: 0, clipFraction: 0, gradNorm: 0, learningRate: 0 };
    let updates = 0;
    for (let epoch = 0; epoch < c.epochs; epoch++) {
      for (const rows of minibatches(b.rows, c.miniBatches, this.core.rng)) {
        const mb = selectRows(b, rows, { adv: tokenAdv, ret: tokenRet, old: oldLogp, oldV: oldValues, ref: refLogp });
        let kept: tf.Tensor[] = [];
        const r = yield* this.core.applyLoss(() => {
          const out = this.model.forward(mb.inputs, { training: true, rng: this.core.rng });
          const logits = out.logits.div(c.temperature) as tf.Tensor2D;
          const mask = tf.tensor1d(mb.mask);
          const logp = targetLogProbs(logits, tf.tensor1d(mb.targets, 'int32'));
          const pg = clippedPolicyLoss(logp, tf.tensor1d(mb.extra.old), tf.tensor1d(mb.extra.adv), c.clipLow, c.clipHigh);
          const policyLoss = aggregate(pg.loss, mask, mb.rows, 'token-mean', 1);
          const vl = clippedValueLoss(out.values!.reshape([-1]) as tf.Tensor1D, tf.tensor1d(mb.extra.oldV), tf.tensor1d(mb.extra.ret), c.valueClip);
          const valueLoss = aggregate(vl, mask, mb.rows, 'token-mean', 1);
          const kl = aggregate(klPenalty(logp, tf.tensor1d(mb.extra.ref), c.klEstimator), mask, mb.rows, 'token-mean', 1);
          const entropy = aggregate(rowEntropy(logits), mask, mb.rows, 'token-mean', 1);
          const clipFraction = pg.clipped.mul(mask).sum().div(mask.sum());
          kept = [policyLoss, valueLoss, kl, entropy, clipFraction].map((t) => tf.keep(t.clone()));
          let loss = policyLoss.add(valueLoss.mul(c.valueCoef));
          if (this.reference) loss = loss.add(kl.mul(c.klCoef));
          if (c.entropyCoef !== 0) loss = loss.sub(entropy.mul(c.entropyCoef));
          return loss as tf.Scalar;
        }, () => kept);
        kept.forEach((t) => t.dispose());
        const [policyLoss, valueLoss, kl, entropy, clipFraction] = r.extras;
        sums.loss += r.loss;
        sums.policyLoss += policyLoss;
        sums.valueLoss += valueLoss;
        sums.kl += kl;
        sums.entropy += entropy;
        sums.clipFraction += clipFraction;
        sums.gradNorm += r.gradNorm;
        sums.learningRate += r.learningRate;
        updates++;
      }
    }
    const m = Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, v / updates])) as typeof sums;
    const ms = performance.now() - t0;
    const metrics: StepMetrics = {
      step: this.core.step,
      loss: m.loss,
      policyLoss: m.policyLoss,
      valueLoss: m.valueLoss,
      kl: this.reference ? m.kl : null,
      entropy: m.entropy,
      clipFraction: m.clipFraction,
      gradNorm: m.gradNorm,
      learningRate: m.learningRate,
      ...rewardStats(batch.map(sequenceReturn)),
      tokensPerSecond: (b.trainableTokens * c.epochs) / (ms / 1000),
      stepTimeMs: ms,
      tokens: b.trainableTokens,
      updates,
    };
    this.core.step += 1;
    return metrics;
  }

  /** Log-probs and values [B·cols] without gradients. */
  private *evaluate(policy: LanguageModel, inputs: number[][], targets: number[]): Reads<{ logp: Float32Array; values: Float32Array }> {
    const [lp, v] = tf.tidy(() => {
      const out = policy.forward(inputs);
      const logp = targetLogProbs(out.logits.div(this.config.temperature) as tf.Tensor2D, tf.tensor1d(targets, 'int32'));
      return [logp, out.values ? out.values.reshape([-1]) : tf.zerosLike(logp)];
    });
    try {
      return { logp: (yield lp) as Float32Array, values: (yield v) as Float32Array };
    } finally {
      lp.dispose();
      v.dispose();
    }
  }

  exportState(): TrainerState {
    return this.core.exportState('ppo', this.config);
  }

  importState(state: TrainerState): void {
    this.core.importState(state);
  }

  dispose(): void {
    this.core.dispose();
    if (this.reference && this.ownsReference) this.reference.dispose();
  }
}
