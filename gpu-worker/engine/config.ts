import { z } from 'zod';
import { countModelParameters, modelOptionsSchema, type ModelOptions } from '../../sdk/training-config';
import { ConfigError, parseEngineConfig } from './errors';

/**
 * The one configuration of the GPT policy: the model options of sdk/training-config.ts (their
 * defaults and sources are documented there), plus what the job runner sets itself.
 */
export interface ModelConfig extends ModelOptions {
  /** Number of token ids; set it from the tokenizer's `vocabSize`. */
  vocabSize: number;
  /** Add a scalar value head on the final hidden state (needed by PPO). Default false. */
  valueHead: boolean;
  /** Seed of the weight initialisation (the run's seed). Default 0. */
  seed: number;
}

export const MODEL_DEFAULTS: Omit<ModelConfig, 'vocabSize'> = { ...modelOptionsSchema.parse({}), valueHead: false, seed: 0 };

const engineModelSchema = z.strictObject({
  ...modelOptionsSchema.shape,
  vocabSize: z.number().int().min(2).max(1 << 24),
  valueHead: z.boolean().default(false),
  seed: z.number().int().min(0).max(2 ** 32 - 1).default(0),
});

/** Fill defaults and validate; throws ConfigError naming the field. */
export function resolveModelConfig(partial: Partial<ModelConfig> & { vocabSize: number }): ModelConfig {
  const c = parseEngineConfig(engineModelSchema, partial, 'model');
  if (c.width % c.heads !== 0) throw new ConfigError('model.heads', `must divide model.width (${c.width} is not divisible by ${c.heads})`);
  return c;
}

/** Parameter count of a model with this config (including embeddings): sdk/training-config.ts's count, which the server's memory estimate uses too. */
export function countParameters(c: ModelConfig): number {
  return countModelParameters(c);
}
