/**
 * Adapters from the engine (a tfjs LanguageModel in this process) to the runtime's Policy and Trainer. The
 * job runner may instead talk to the engine's child process; both shapes are the same.
 */
import { type LanguageModel } from '../engine/model';
import { Rng } from '../engine/rng';
import { sampleAsync } from '../engine/sampler';
import { type StepMetrics } from '../engine/trainer-core';
import { type Policy, type Sequence, type Tokenizer, type Trainer } from './policy';

export function modelPolicy(model: LanguageModel, tokenizer: Tokenizer): Policy {
  return {
    async generate(prompts, options) {
      const allowed = options.allowed?.map((texts) => (texts ? texts.map((t) => tokenizer.encode(t)) : null));
      return sampleAsync(model, tokenizer, prompts, { maxTokens: options.maxTokens, temperature: options.temperature, stop: options.stop, ...(allowed ? { allowed } : {}) }, new Rng(options.seed));
    },
  };
}

/** Wraps any engine trainer (SFT, GRPO, PPO: `stepAsync(batch) -> StepMetrics`, which runs on every backend). */
export function engineTrainer(trainer: { stepAsync(batch: readonly Sequence[]): Promise<StepMetrics> }): Trainer {
  return {
    async train(batch) {
      const metrics = await trainer.stepAsync(batch);
      const numeric: Record<string, number> = {};
      for (const [key, value] of Object.entries(metrics)) if (typeof value === 'number') numeric[key] = value;
      return numeric;
    },
  };
}
