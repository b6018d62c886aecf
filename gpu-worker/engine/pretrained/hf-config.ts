/**
 * The one typed configuration of a pretrained decoder (Llama family, Qwen2/2.5, Qwen3), read from
 * a Hugging Face checkpoint's `config.json`. Options that change the computation and that the
 * engine does not implement are refused by name rather than ignored, so a model never runs with
 * silently different maths; keys that do not change the forward pass (token ids, dtype, …) pass.
 */
import { z } from 'zod';
import { ConfigError } from '../errors';

export const SUPPORTED_MODEL_TYPES = ['llama', 'qwen2', 'qwen3'] as const;
export type DecoderFamily = (typeof SUPPORTED_MODEL_TYPES)[number];

/** Llama 3's rescaling of the rotary frequencies (transformers' `_compute_llama3_parameters`). */
export interface Llama3RopeScaling {
  type: 'llama3';
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalMaxPositions: number;
}

export interface DecoderConfig {
  family: DecoderFamily;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  layers: number;
  heads: number;
  kvHeads: number;
  /** Width of one attention head; Qwen3 sets it apart from hiddenSize / heads. */
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: Llama3RopeScaling | null;
  maxPositions: number;
  tiedEmbeddings: boolean;
  /** Bias on the q, k and v projections (Qwen2 always; Llama with attention_bias). */
  qkvBias: boolean;
  /** Bias on the output projection (Llama with attention_bias). */
  oBias: boolean;
  /** RMSNorm on every head of q and k before the rotation (Qwen3). */
  qkNorm: boolean;
}

const positiveInt = z.number().int().positive();

const ropeScalingSchema = z
  .object({
    rope_type: z.string().optional(),
    type: z.string().optional(),
    factor: z.number().positive().optional(),
    low_freq_factor: z.number().positive().optional(),
    high_freq_factor: z.number().positive().optional(),
    original_max_position_embeddings: positiveInt.optional(),
    rope_theta: z.number().positive().optional(),
  })
  .loose();

const hfConfigSchema = z
  .object({
    model_type: z.string(),
    vocab_size: positiveInt,
    hidden_size: positiveInt,
    intermediate_size: positiveInt,
    num_hidden_layers: positiveInt,
    num_attention_heads: positiveInt,
    num_key_value_heads: positiveInt.nullish(),
    head_dim: positiveInt.nullish(),
    rms_norm_eps: z.number().positive().default(1e-6),
    rope_theta: z.number().positive().nullish(),
    // transformers ≥ 5 writes rope_theta and rope_scaling together as rope_parameters.
    rope_scaling: ropeScalingSchema.nullish(),
    rope_parameters: ropeScalingSchema.nullish(),
    max_position_embeddings: positiveInt,
    tie_word_embeddings: z.boolean().default(false),
    hidden_act: z.string().default('silu'),
    attention_bias: z.boolean().default(false),
    mlp_bias: z.boolean().default(false),
    use_sliding_window: z.boolean().default(false),
    layer_types: z.array(z.string()).nullish(),
    pretraining_tp: z.number().int().default(1),
  })
  .loose();

/** Parse `config.json`'s object; throws ConfigError naming the field (as `config.json.<key>`). */
export function parseDecoderConfig(json: unknown): DecoderConfig {
  const parsed = hfConfigSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(['config.json', ...issue.path.map(String)].join('.'), issue.message);
  }
  const c = parsed.data;
  const refuse = (field: string, why: string): never => {
    throw new ConfigError(`config.json.${field}`, why);
  };
  if (!(SUPPORTED_MODEL_TYPES as readonly string[]).includes(c.model_type)) {
    refuse('model_type', `"${c.model_type}" is not supported (supported: ${SUPPORTED_MODEL_TYPES.join(', ')})`);
  }
  const family = c.model_type as DecoderFamily;
  if (c.hidden_act !== 'silu') refuse('hidden_act', `"${c.hidden_act}" is not supported (only silu)`);
  if (c.mlp_bias) refuse('mlp_bias', 'true is not supported');
  // Sliding-window attention changes which keys a query sees; every supported checkpoint has it off.
  if (c.use_sliding_window) refuse('use_sliding_window', 'true is not supported');
  const windowed = (c.layer_types ?? []).findIndex((t) => t !== 'full_attention');
  if (windowed >= 0) refuse(`layer_types.${windowed}`, `"${c.layer_types![windowed]}" is not supported (only full_attention)`);
  // pretraining_tp > 1 only slices the matmuls (same result in exact arithmetic) in old
  // transformers; newer ones ignore it, so we do too.
  const heads = c.num_attention_heads;
  const kvHeads = c.num_key_value_heads ?? heads;
  if (heads % kvHeads !== 0) refuse('num_key_value_heads', `${kvHeads} does not divide num_attention_heads ${heads}`);
  const headDim = c.head_dim ?? c.hidden_size / heads;
  if (!Number.isInteger(headDim)) refuse('num_attention_heads', `${heads} does not divide hidden_size ${c.hidden_size}`);
  if (headDim % 2 !== 0) refuse('head_dim', `${headDim} is odd; rotary embeddings rotate pairs`);

  const rope = c.rope_parameters ?? c.rope_scaling ?? null;
  const ropeField = c.rope_parameters ? 'rope_parameters' : 'rope_scaling';
  const ropeTheta = c.rope_theta ?? c.rope_parameters?.rope_theta ?? 10000;
  const ropeType = rope ? (rope.rope_type ?? rope.type ?? 'default') : 'default';
  let ropeScaling: Llama3RopeScaling | null = null;
  if (ropeType === 'llama3') {
    const r = rope!;
    const need = (key: 'factor' | 'low_freq_factor' | 'high_freq_factor' | 'original_max_position_embeddings'): number =>
      r[key] ?? refuse(`${ropeField}.${key}`, 'is required by rope_type "llama3"');
    ropeScaling = {
      type: 'llama3',
      factor: need('factor'),
      lowFreqFactor: need('low_freq_factor'),
      highFreqFactor: need('high_freq_factor'),
      originalMaxPositions: need('original_max_position_embeddings'),
    };
    if (ropeScaling.highFreqFactor <= ropeScaling.lowFreqFactor) {
      refuse(`${ropeField}.high_freq_factor`, 'must be greater than low_freq_factor');
    }
  } else if (ropeType !== 'default') {
    refuse(`${ropeField}.rope_type`, `"${ropeType}" is not supported (supported: default, llama3)`);
  }

  return {
    family,
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    intermediateSize: c.intermediate_size,
    layers: c.num_hidden_layers,
    heads,
    kvHeads,
    headDim,
    rmsNormEps: c.rms_norm_eps,
    ropeTheta,
    ropeScaling,
    maxPositions: c.max_position_embeddings,
    tiedEmbeddings: c.tie_word_embeddings,
    // Qwen2's attention always has q, k, v biases (its config has no switch); Qwen3 and Llama follow attention_bias.
    qkvBias: family === 'qwen2' || c.attention_bias,
    oBias: family !== 'qwen2' && c.attention_bias,
    qkNorm: family === 'qwen3',
  };
}
