/**
 * Supervised fine-tuning: masked cross-entropy (loss only on trainable tokens), Adam with warm-up
 * and cosine decay, gradient clipping.
 */
import * as tf from '@tensorflow/tfjs';
import { type Sequence, prepareBatch, validateBatch } from './batch';
import { ConfigError, requireInt } from './errors';
import { maskedNll } from './losses';
import { type GPT } from './model';
import { targetLogProbs } from './ops';
import { type OptimConfig, validateOptimConfig } from './optim';
import { type StepMetrics, TrainerCore, type TrainerState } from './trainer-core';

export interface SFTConfig extends OptimConfig {
  /** Seed of shuffling and dropout. */
  seed: number;
}

const SFT_DEFAULTS: SFTConfig = {
  // 1e-3 with a short warm-up trains the small (0.1 M parameter) models of this engine fastest;
  // lower it (1e-4 … 1e-5) to fine-tune a larger pretrained policy.
  learningRate: 1e-3,
  warmupSteps: 20,
  totalSteps: 0,
  minLearningRateRatio: 0.1,
  beta1: 0.9,
  // 0.99 rather than 0.999: small batches and short runs (nanoGPT's choice for small models).
  beta2: 0.99,
  epsilon: 1e-8,
  weightDecay: 0,
  gradClip: 1,
  seed: 0,
};

function resolveSFTConfig(partial: Partial<SFTConfig> = {}): SFTConfig {
  const c = { ...SFT_DEFAULTS, ...partial };
  for (const key of Object.keys(partial)) if (!(key in SFT_DEFAULTS)) throw new ConfigError(`sft.${key}`, 'unknown field');
  validateOptimConfig(c, 'sft');
  requireInt('sft.seed', c.seed, 0, 2 ** 32 - 1);
  return c;
}

export class SFTTrainer {
  readonly config: SFTConfig;
  readonly core: TrainerCore;

  constructor(
    readonly model: GPT,
    config: Partial<SFTConfig> = {},
  ) {
    this.config = resolveSFTConfig(config);
    this.core = new TrainerCore(model, this.config, this.config.seed);
  }

  /** One optimiser step on `batch`. */
  step(batch: readonly Sequence[]): StepMetrics {
    const { contextLength, vocabSize } = this.model.config;
    validateBatch(batch, { contextLength, vocabSize, needRewards: false });
    const t0 = performance.now();
    const b = prepareBatch(batch, 0);

    const result = this.core.applyLoss(() => {
      const logits = this.model.forward(b.inputs, { training: true, rng: this.core.rng }).logits;
      const logp = targetLogProbs(logits, tf.tensor1d(b.targets, 'int32'));
      // Mean negative log-likelihood over the trainable tokens only.
      return maskedNll(logp, tf.tensor1d(b.mask));
    });

    const ms = performance.now() - t0;
    const metrics: StepMetrics = {
      step: this.core.step,
      loss: result.loss,
      policyLoss: null,
      valueLoss: null,
      kl: null,
      // Not computed for SFT: it would cost a second pass over the logits.
      entropy: null,
      clipFraction: null,
      gradNorm: result.gradNorm,
      learningRate: result.learningRate,
      rewardMean: null,
      rewardStd: null,
      rewardMin: null,
      rewardMax: null,
      tokensPerSecond: b.trainableTokens / (ms / 1000),
      stepTimeMs: ms,
      tokens: b.trainableTokens,
      updates: 1,
    };
    this.core.step += 1;
    return metrics;
  }

  exportState(): TrainerState {
    return this.core.exportState('sft', this.config);
  }

  importState(state: TrainerState): void {
    this.core.importState(state);
  }

  dispose(): void {
    this.core.dispose();
  }
}
