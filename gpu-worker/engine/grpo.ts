/**
 * GRPO: sample G completions per prompt, score them, and push up the log-probability of the
 * better-than-average ones. Advantages come from the group (no critic); the update is PPO's
 * clipped surrogate, optionally with a KL penalty to a frozen reference policy.
 *
 *   A_i = (R_i − mean_group R) / (std_group R + ε)        (or without "/ std": Dr. GRPO)
 *   L   = agg_tokens( max(−r·A, −clip(r, 1−ε_low, 1+ε_high)·A) ) + β · agg_tokens(KL_k1|k3)
 */
import * as tf from '@tensorflow/tfjs';
import { type Sequence, prepareBatch, selectRows, sequenceReturn, validateBatch } from './batch';
import { parseEngineConfig } from './errors';
import { type GRPOOptions, grpoOptionsSchema } from '../../sdk/training-config';
import { aggregate, clippedPolicyLoss, groupAdvantages, klPenalty } from './losses';
import { type LanguageModel } from './model';
import { frozenReference } from './reference';
import { rowEntropy, targetLogProbs } from './ops';
import { type Reads, readAndDispose, readAsync, readSync } from './reads';
import { type StepMetrics, TrainerCore, type TrainerState, minibatches, rewardStats } from './trainer-core';

/** GRPO's options: names, defaults and their sources are in sdk/training-config.ts (grpoOptionsSchema). */
export type GRPOConfig = GRPOOptions;
export const GRPO_DEFAULTS: GRPOConfig = grpoOptionsSchema.parse({});

export function resolveGRPOConfig(partial: Partial<GRPOConfig> = {}): GRPOConfig {
  return parseEngineConfig(grpoOptionsSchema, partial, 'grpo');
}

/** Tokens per forward pass when computing log-probabilities without gradients (memory, not speed). */
const LOGPROB_CHUNK_TOKENS = 16_384;

export class GRPOTrainer {
  readonly config: GRPOConfig;
  readonly core: TrainerCore;
  /** Frozen reference policy for the KL penalty (the starting weights: reference.ts), if klCoef > 0. */
  readonly reference: LanguageModel | null;
  private readonly ownsReference: boolean;

  /** `reference`: the frozen KL reference (e.g. restored from a checkpoint); default `model` as it is now (frozenReference). */
  constructor(
    readonly model: LanguageModel,
    config: Partial<GRPOConfig> = {},
    reference?: LanguageModel,
  ) {
    this.config = resolveGRPOConfig(config);
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
    validateBatch(batch, { contextLength, vocabSize, needRewards: true, needGroups: true });
    const t0 = performance.now();

    // 1. Group-relative advantages, one per sequence.
    const returns = batch.map(sequenceReturn);
    const { advantages, zeroVariance } = groupAdvantages(returns, batch.map((s) => s.group!), {
      normalizeByStd: c.normalizeByStd,
      epsilon: c.advantageEpsilon,
    });
    const keep = batch.map((_, i) => i).filter((i) => !(c.dropZeroVarianceGroups && zeroVariance[i]));
    const stats = rewardStats(returns);
    if (keep.length === 0) return this.finish(t0, stats, null, 0, 0);

    // 2. Spread each sequence's advantage over its trainable tokens; log-probs before any update.
    const b = prepareBatch(keep.map((i) => batch[i]), 0);
    const tokenAdv = new Float32Array(b.rows * b.cols);
    keep.forEach((i, r) => tokenAdv.fill(advantages[i], r * b.cols, (r + 1) * b.cols));
    const oldLogp = yield* this.logProbs(this.model, b.inputs, b.targets);
    const refLogp = this.reference ? yield* this.logProbs(this.reference, b.inputs, b.targets) : new Float32Array(b.rows * b.cols);

    // 3. Epochs × minibatches of clipped policy-gradient updates.
    const normConstant = c.normConstant > 0 ? c.normConstant : contextLength;
    const sums = { loss: 0, policyLoss: 0, kl: 0, entropy: 0, clipFraction: 0, gradNorm: 0, learningRate: 0 };
    let updates = 0;
    for (let epoch = 0; epoch < c.epochs; epoch++) {
      for (const rows of minibatches(b.rows, c.miniBatches, this.core.rng)) {
        const mb = selectRows(b, rows, { adv: tokenAdv, old: oldLogp, ref: refLogp });
        let kept: tf.Tensor[] = [];
        const r = yield* this.core.applyLoss(() => {
          const logits = this.model.forward(mb.inputs, { training: true, rng: this.core.rng }).logits.div(c.temperature) as tf.Tensor2D;
          const mask = tf.tensor1d(mb.mask);
          const logp = targetLogProbs(logits, tf.tensor1d(mb.targets, 'int32'));
          const pg = clippedPolicyLoss(logp, tf.tensor1d(mb.extra.old), tf.tensor1d(mb.extra.adv), c.clipLow, c.clipHigh);
          const policyLoss = aggregate(pg.loss, mask, mb.rows, c.aggregation, normConstant);
          const kl = aggregate(klPenalty(logp, tf.tensor1d(mb.extra.ref), c.klEstimator), mask, mb.rows, c.aggregation, normConstant);
          const entropy = aggregate(rowEntropy(logits), mask, mb.rows, c.aggregation, normConstant);
          const clipFraction = pg.clipped.mul(mask).sum().div(mask.sum());
          kept = [policyLoss, kl, entropy, clipFraction].map((t) => tf.keep(t.clone()));
          let loss = policyLoss;
          if (this.reference) loss = loss.add(kl.mul(c.klCoef));
          if (c.entropyCoef !== 0) loss = loss.sub(entropy.mul(c.entropyCoef));
          return loss;
        }, () => kept);
        kept.forEach((t) => t.dispose());
        const [policyLoss, kl, entropy, clipFraction] = r.extras;
        sums.loss += r.loss;
        sums.policyLoss += policyLoss;
        sums.kl += kl;
        sums.entropy += entropy;
        sums.clipFraction += clipFraction;
        sums.gradNorm += r.gradNorm;
        sums.learningRate += r.learningRate;
        updates++;
      }
    }
    const mean = Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, v / updates])) as typeof sums;
    return this.finish(t0, stats, mean, b.trainableTokens * c.epochs, updates, b.trainableTokens);
  }

  /**
   * Per-token log-probabilities [B·cols] under `policy`, without gradients. In chunks of rows: a
   * multi-turn batch (a Gomoku step: hundreds of turn sequences) in one forward pass needs more
   * than the wasm backend's 4 GiB for its attention scores.
   */
  private *logProbs(policy: LanguageModel, inputs: number[][], targets: number[]): Reads<Float32Array> {
    const cols = inputs[0]?.length ?? 0;
    const out = new Float32Array(inputs.length * cols);
    const rowsPerChunk = Math.max(1, Math.floor(LOGPROB_CHUNK_TOKENS / Math.max(1, cols)));
    for (let start = 0; start < inputs.length; start += rowsPerChunk) {
      const end = Math.min(inputs.length, start + rowsPerChunk);
      const t = tf.tidy(() =>
        targetLogProbs(
          policy.forward(inputs.slice(start, end)).logits.div(this.config.temperature) as tf.Tensor2D,
          tf.tensor1d(targets.slice(start * cols, end * cols), 'int32'),
        ),
      );
      out.set((yield* readAndDispose(t)) as Float32Array, start * cols);
    }
    return out;
  }

  private finish(
    t0: number,
    stats: ReturnType<typeof rewardStats>,
    m: { loss: number; policyLoss: number; kl: number; entropy: number; clipFraction: number; gradNorm: number; learningRate: number } | null,
    processed: number,
    updates: number,
    tokens = 0,
  ): StepMetrics {
    const ms = performance.now() - t0;
    const metrics: StepMetrics = {
      step: this.core.step,
      loss: m?.loss ?? 0,
      // null when every group was dropped and no update was made (updates: 0).
      policyLoss: m ? m.policyLoss : null,
      valueLoss: null,
      kl: m ? m.kl : null,
      entropy: m ? m.entropy : null,
      clipFraction: m ? m.clipFraction : null,
      gradNorm: m?.gradNorm ?? 0,
      learningRate: m?.learningRate ?? this.core.learningRate(),
      ...stats,
      tokensPerSecond: processed / (ms / 1000),
      stepTimeMs: ms,
      tokens,
      updates,
    };
    this.core.step += 1;
    return metrics;
  }

  exportState(): TrainerState {
    return this.core.exportState('grpo', this.config);
  }

  importState(state: TrainerState): void {
    this.core.importState(state);
  }

  dispose(): void {
    this.core.dispose();
    if (this.reference && this.ownsReference) this.reference.dispose();
  }
}
