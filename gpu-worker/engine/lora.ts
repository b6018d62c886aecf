/**
 * LoRA: low-rank adapters on the linear layers of a frozen base model, y = x W + (alpha/r)·(x A) B.
 * B starts at zero so the adapted model starts equal to the base. Trainers update only the
 * adapters (LanguageModel.trainableVariables), and `mergedTensors` folds them into W for export.
 * Any LanguageModel takes adapters: it names its linear layers (`loraLinears`) and adds an
 * adapter's product wherever it multiplies by an adapted weight.
 */
import * as tf from '@tensorflow/tfjs';
import { ConfigError, requireInt, requireNumber } from './errors';
import { type Adapter, type LanguageModel, mergedTensors } from './model';
import { Rng } from './rng';

export interface LoraConfig {
  /** Rank r of each adapter. Default 8. */
  rank: number;
  /** Scale numerator: the update is multiplied by alpha / rank. Default 16 (2 × rank, a common choice). */
  alpha: number;
  /**
   * Linear layers to adapt: "attn" and "mlp" (every attention or MLP projection) or the model's
   * single names (the GPT's attn.qkv, attn.proj, mlp.fc, mlp.proj; a pretrained decoder's q, k, v,
   * o, gate, up, down). Default ["attn", "mlp"].
   */
  targets: string[];
  /** Seed of A's initialisation. Default 0. */
  seed: number;
}

const LORA_DEFAULTS: LoraConfig = { rank: 8, alpha: 16, targets: ['attn', 'mlp'], seed: 0 };

function resolveLoraConfig(partial: Partial<LoraConfig> = {}): LoraConfig {
  const c = { ...LORA_DEFAULTS, ...partial };
  requireInt('lora.rank', c.rank, 1, 4096);
  requireNumber('lora.alpha', c.alpha, 0);
  if (!Array.isArray(c.targets) || c.targets.length === 0) throw new ConfigError('lora.targets', 'must name at least one target');
  requireInt('lora.seed', c.seed, 0, 2 ** 32 - 1);
  return c;
}

/** The config each model's adapters were attached with (checkpoints record it). */
const attached = new WeakMap<LanguageModel, LoraConfig>();

/** The LoRA config of `model`'s adapters, or null without adapters. */
export function loraConfigOf(model: LanguageModel): LoraConfig | null {
  return model.adapters.size > 0 ? (attached.get(model) ?? null) : null;
}

/**
 * Attach adapters to `model` (which must have none). `weights` (keyed "lora.<linear>.a|b")
 * restores saved adapters; otherwise A is random and B zero.
 */
export function attachLora(model: LanguageModel, partial: Partial<LoraConfig> = {}, weights?: Map<string, Float32Array>): LoraConfig {
  const c = resolveLoraConfig(partial);
  if (model.adapters.size > 0) throw new ConfigError('lora', 'the model already has adapters');
  const rng = new Rng(c.seed);
  for (const { linear: name, weight } of model.loraLinears(c.targets)) {
    const [fanIn, fanOut] = model.params.get(weight)!.shape;
    const r = Math.min(c.rank, fanIn, fanOut);
    let a: Float32Array;
    let b: Float32Array;
    if (weights) {
      const wa = weights.get(`lora.${name}.a`);
      const wb = weights.get(`lora.${name}.b`);
      if (!wa || !wb) throw new Error(`adapter weights are missing "lora.${name}.a" or ".b"`);
      if (wa.length !== fanIn * r || wb.length !== r * fanOut) throw new Error(`adapter "${name}" does not match rank ${r}`);
      a = wa;
      b = wb;
    } else {
      a = new Float32Array(fanIn * r);
      for (let i = 0; i < a.length; i++) a[i] = rng.normal() / Math.sqrt(fanIn);
      b = new Float32Array(r * fanOut);
    }
    model.adapters.set(name, {
      a: tf.variable(tf.tensor2d(a, [fanIn, r]), true),
      b: tf.variable(tf.tensor2d(b, [r, fanOut]), true),
      scale: c.alpha / c.rank,
      weight,
    });
  }
  attached.set(model, c);
  return c;
}

/**
 * Attaches frozen copies of another model's `adapters` (on the same linear layers) to `model`,
 * recorded with `lora` as their config. A copy shares its source's data until either is assigned.
 */
export function attachAdapterCopies(model: LanguageModel, lora: LoraConfig, adapters: ReadonlyMap<string, Adapter>): void {
  if (model.adapters.size > 0) throw new ConfigError('lora', 'the model already has adapters');
  for (const [name, ad] of adapters) model.adapters.set(name, { a: tf.variable(ad.a, false), b: tf.variable(ad.b, false), scale: ad.scale, weight: ad.weight });
  attached.set(model, lora);
}

/** Adapter tensors keyed "lora.<linear>.a|b". */
export function adapterWeights(model: LanguageModel): Map<string, { shape: number[]; data: Float32Array }> {
  const out = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const [name, ad] of model.adapters) {
    out.set(`lora.${name}.a`, { shape: ad.a.shape, data: ad.a.dataSync() as Float32Array });
    out.set(`lora.${name}.b`, { shape: ad.b.shape, data: ad.b.dataSync() as Float32Array });
  }
  return out;
}

/** Fold the adapters into the base weights in place and remove them. */
export function mergeLora(model: LanguageModel): void {
  for (const [name, t] of mergedTensors(model)) {
    model.params.get(name)!.assign(t);
    t.dispose();
  }
  for (const ad of model.adapters.values()) {
    ad.a.dispose();
    ad.b.dispose();
  }
  model.adapters.clear();
}
