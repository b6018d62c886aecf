/**
 * What the rollout runtime needs from a model: batched generation over token prompts. The engine's
 * `sample` (and its child-process session) fits this shape; tests use scripted policies. Token
 * and chat conventions are the engine's (`Tokenizer`, BOS + role separator + content + EOS).
 */
import { type Sequence } from '../engine/batch';
import { type SampleOptions, type SampleResult } from '../engine/sampler';
import { type Tokenizer } from '../engine/tokenizer';

export type { SampleResult, Sequence, Tokenizer };

export type GenerateOptions = Pick<SampleOptions, 'maxTokens' | 'temperature' | 'stop'> & {
  seed: number;
  /**
   * Per prompt, the texts the completion must be one of (the environment's legal actions), or null
   * for free text. A policy that cannot constrain its output may ignore it; the environment still
   * judges what it wrote.
   */
  allowed?: (readonly string[] | null)[];
};

export interface Policy {
  /** One completion per prompt: tokens, text and per-token log-probabilities. */
  generate(prompts: number[][], options: GenerateOptions): Promise<SampleResult[]>;
}

/** A trainer for one agent: takes that agent's batch, updates its policy, returns metrics. */
export interface Trainer {
  train(batch: Sequence[]): Promise<Record<string, number>>;
}
