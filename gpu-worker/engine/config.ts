import { ConfigError, requireInt, requireNumber } from './errors';

/** The one configuration of the GPT policy. Every field except vocabSize has a default. */
export interface ModelConfig {
  /** Number of token ids; set it from the tokenizer's `vocabSize`. */
  vocabSize: number;
  /** Longest sequence (prompt + completion) the model sees; also the number of positions. Default 64. */
  contextLength: number;
  /** Transformer blocks. Default 2 (what a 2-core machine trains in minutes, see OFFLINE.md). */
  layers: number;
  /** Residual width d. Default 64. */
  width: number;
  /** Attention heads; must divide width. Default 4 (head size 16). */
  heads: number;
  /** MLP hidden size is mlpRatio × width. Default 4, as in GPT-2. */
  mlpRatio: number;
  /** Dropout on embeddings, attention output and MLP output during training. Default 0: small RL runs are data-rich and dropout makes the policy that samples differ from the one trained. */
  dropout: number;
  /** Share the token embedding with the output head (GPT-2 style). Default true: fewer parameters, same quality at this size. */
  tiedHead: boolean;
  /** Add a scalar value head on the final hidden state (needed by PPO). Default false. */
  valueHead: boolean;
  /** Seed of the weight initialisation. Default 0. */
  seed: number;
}

const MODEL_DEFAULTS: Omit<ModelConfig, 'vocabSize'> = {
  contextLength: 64,
  layers: 2,
  width: 64,
  heads: 4,
  mlpRatio: 4,
  dropout: 0,
  tiedHead: true,
  valueHead: false,
  seed: 0,
};

/** Fill defaults and validate; throws ConfigError naming the field. */
export function resolveModelConfig(partial: Partial<ModelConfig> & { vocabSize: number }): ModelConfig {
  const known = new Set(['vocabSize', ...Object.keys(MODEL_DEFAULTS)]);
  for (const key of Object.keys(partial)) {
    if (!known.has(key)) throw new ConfigError(`model.${key}`, 'unknown field');
  }
  const c: ModelConfig = { ...MODEL_DEFAULTS, ...partial };
  requireInt('model.vocabSize', c.vocabSize, 2);
  requireInt('model.contextLength', c.contextLength, 2, 1 << 16);
  requireInt('model.layers', c.layers, 1, 256);
  requireInt('model.width', c.width, 1);
  requireInt('model.heads', c.heads, 1);
  if (c.width % c.heads !== 0) {
    throw new ConfigError('model.heads', `must divide model.width (${c.width} is not divisible by ${c.heads})`);
  }
  requireInt('model.mlpRatio', c.mlpRatio, 1, 64);
  requireNumber('model.dropout', c.dropout, 0, 0.999);
  if (typeof c.tiedHead !== 'boolean') throw new ConfigError('model.tiedHead', 'must be a boolean');
  if (typeof c.valueHead !== 'boolean') throw new ConfigError('model.valueHead', 'must be a boolean');
  requireInt('model.seed', c.seed, 0, 2 ** 32 - 1);
  return c;
}

/** Parameter count of a model with this config (including embeddings). */
export function countParameters(c: ModelConfig): number {
  const d = c.width;
  const h = c.mlpRatio * d;
  const perLayer = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * h + h) + (h * d + d);
  return (
    c.vocabSize * d + c.contextLength * d + c.layers * perLayer + 2 * d + (c.tiedHead ? 0 : d * c.vocabSize) + (c.valueHead ? d + 1 : 0)
  );
}
