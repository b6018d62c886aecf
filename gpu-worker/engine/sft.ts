/**
 * Supervised fine-tuning: masked cross-entropy (loss only on trainable tokens), Adam with warm-up
 * and cosine decay, gradient clipping.
 */
import * as tf from '@tensorflow/tfjs';
import { type Sequence, prepareBatch, validateBatch } from './batch';
import { parseEngineConfig } from './errors';
import { type SFTOptions, sftOptionsSchema } from '../../sdk/training-config';
import { maskedNll } from './losses';
import { type LanguageModel } from './model';
import { targetLogProbs } from './ops';
import { type Reads, readAsync, readSync } from './reads';
import { type StepMetrics, TrainerCore, type TrainerState } from './trainer-core';

/** SFT's options: names, defaults and their sources are in sdk/training-config.ts (sftOptionsSchema). */
export type SFTConfig = SFTOptions;
export const SFT_DEFAULTS: SFTConfig = sftOptionsSchema.parse({});

export function resolveSFTConfig(partial: Partial<SFTConfig> = {}): SFTConfig {
  return parseEngineConfig(sftOptionsSchema, partial, 'sft');
}

export class SFTTrainer {
  readonly config: SFTConfig;
  readonly core: TrainerCore;

  constructor(
    readonly model: LanguageModel,
    config: Partial<SFTConfig> = {},
  ) {
    this.config = resolveSFTConfig(config);
    this.core = new TrainerCore(model, this.config, this.config.seed);
  }

  /** One optimiser step on `batch` (wasm and cpu; `stepAsync` on every backend). */
  step(batch: readonly Sequence[]): StepMetrics {
    return readSync(this.steps(batch));
  }

  /** One optimiser step on `batch`, reading values without blocking (WebGPU needs this). */
  stepAsync(batch: readonly Sequence[]): Promise<StepMetrics> {
    return readAsync(this.steps(batch));
  }

  private *steps(batch: readonly Sequence[]): Reads<StepMetrics> {
    const { contextLength, vocabSize } = this.model;
    validateBatch(batch, { contextLength, vocabSize, needRewards: false });
    const t0 = performance.now();
    const b = prepareBatch(batch, 0);

    const result = yield* this.core.applyLoss(() => {
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
