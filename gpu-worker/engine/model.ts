/**
 * A decoder-only transformer (GPT-2 shape): token and position embeddings, pre-norm blocks with
 * causal multi-head attention and a GELU MLP, a final norm, a tied or untied head and an optional
 * value head. Activations are kept 2-D ([batch·time, width]) so that every weight matmul is a
 * plain 2-D matmul (see ops.ts). One forward function serves training, recompute sampling and
 * KV-cached sampling, so the three agree.
 */
import * as tf from '@tensorflow/tfjs';
import { type ModelConfig, countParameters, resolveModelConfig } from './config';
import { cachedSelfAttention, fusedSelfAttention, simdCausalAttentionAvailable, simdCausalSelfAttention } from './attention';
import { fusedEmbed } from './fused';
import { useFusedKernels } from './kernels';
import { addPositions, attentionMix, attentionScores, embed, gelu, layerNorm, linear2d, matMul2d, residualAdd, tiedHeadLogits } from './ops';
import { ConfigError } from './errors';
import { decodeNatively } from './native-decode';
import { Rng } from './rng';

/** A low-rank adapter on one linear layer: y += scale · (x A) B. */
export interface Adapter {
  a: tf.Variable;
  b: tf.Variable;
  scale: number;
  /** The name of the [in, out] weight parameter it adapts (what merging adds A B to). */
  weight: string;
}

/**
 * Per-layer attention keys and values, only for passing back to `forward`: [batch, time, heads,
 * headSize] on native backends; on wasm/cpu [time, batch, heads, headSize], possibly with room for
 * more positions than `length` (see `ForwardOptions.cacheCapacity` and attention.ts).
 */
export interface KvCache {
  keys: tf.Tensor4D[];
  values: tf.Tensor4D[];
  /** Number of cached positions. */
  length: number;
}

export interface ForwardOptions {
  /** Position id of every input token [B, Tn]; default pastLength + 0..Tn-1 for all rows. */
  positions?: number[][];
  /** 1 for real tokens, 0 for padding, over cached + new keys [B, Tpast + Tn]. Default all 1. */
  keyMask?: number[][];
  /** Attend to these cached keys and values as the prefix. */
  cache?: KvCache;
  /** Return the cache extended with this call's keys and values (caller disposes). */
  returnCache?: boolean;
  /**
   * With `returnCache`, on the backends with JS kernels: allocate a new cache for this many
   * positions, and let one-token calls write into the passed cache in place when it has room. The
   * returned cache may then hold the passed cache's own tensors: dispose only tensors that are not
   * in the returned cache. Other backends ignore it (their cache grows by concatenation).
   */
  cacheCapacity?: number;
  /**
   * The output projection [d, V], when the caller keeps it across calls: a tied head is the
   * transposed token table, otherwise made on every call (a copy, and on wasm a new right operand
   * for XNNPACK to pack). Must equal `headWeights()`.
   */
  head?: tf.Tensor2D;
  /** Only compute logits (and values) for the last position of each row. */
  lastOnly?: boolean;
  /** Apply dropout (training only). */
  training?: boolean;
  /** Seed source for dropout masks. */
  rng?: Rng;
}

export interface ForwardResult {
  /** [B·Tn, V], or [B, V] with lastOnly. */
  logits: tf.Tensor2D;
  /** [B, Tn] (or [B, 1] with lastOnly) when the model has a value head. */
  values?: tf.Tensor2D;
  cache?: KvCache;
}

/**
 * What the sampler, the trainers, LoRA and frozen references need of a policy: the engine's own
 * GPT (below) and the pretrained decoders (pretrained/decoder.ts) are both. Checkpoints are not
 * part of it: each architecture stores its own weights its own way.
 */
export interface LanguageModel {
  readonly params: Map<string, tf.Variable>;
  /** LoRA adapters keyed by linear layer name; empty without LoRA. */
  readonly adapters: Map<string, Adapter>;
  /** Most positions one sequence may have (prompt and completion together). */
  readonly contextLength: number;
  readonly vocabSize: number;
  /** Whether `forward` returns values (a value head for PPO). */
  readonly hasValueHead: boolean;
  /** Whether the head is the transposed token table, so `headWeights()` makes a new tensor per call. */
  readonly tiedHead: boolean;
  readonly numParameters: number;
  /** Forward `tokens` [B, Tn]; call inside tf.tidy (or dispose the results). */
  forward(tokens: number[][], opts?: ForwardOptions): ForwardResult;
  /** The output projection [d, V]. */
  headWeights(): tf.Tensor2D;
  /** The variables an optimiser updates: adapters (and a value head) under LoRA, else all. */
  trainableVariables(): Map<string, tf.Variable>;
  /**
   * The linear layers LoRA `targets` name (the model's own target names, or the groups "attn" and
   * "mlp"), each with the name of its [in, out] weight; an unknown target is a ConfigError.
   */
  loraLinears(targets: readonly string[]): { linear: string; weight: string }[];
  /** A copy of the current weights (adapters merged) that no optimiser touches. */
  frozenCopy(): LanguageModel;
  /** Copy of every base parameter's values (for checkpoints and tests). */
  snapshot(): Map<string, Float32Array>;
  dispose(): void;
}

/**
 * The trainable variables of a model with `adapters`: the adapters, plus any value head (new for
 * PPO, with no pretrained weights to preserve); all parameters without LoRA.
 */
export function adapterTrainables(params: Map<string, tf.Variable>, adapters: Map<string, Adapter>, isValueHead: (name: string) => boolean): Map<string, tf.Variable> {
  if (adapters.size === 0) return new Map(params);
  const out = new Map<string, tf.Variable>();
  for (const [name, ad] of adapters) {
    out.set(`lora.${name}.a`, ad.a);
    out.set(`lora.${name}.b`, ad.b);
  }
  for (const [name, v] of params) if (isValueHead(name)) out.set(name, v);
  return out;
}

/** Names of the linear layers that LoRA can target, per block. */
export const LINEAR_TARGETS = ['attn.qkv', 'attn.proj', 'mlp.fc', 'mlp.proj'] as const;
export type LinearTarget = (typeof LINEAR_TARGETS)[number];
const GPT_TARGET_GROUPS: Record<string, readonly LinearTarget[]> = { attn: ['attn.qkv', 'attn.proj'], mlp: ['mlp.fc', 'mlp.proj'] };

/**
 * Target names (single layers or groups) → each layer's full name and weight, for every block;
 * shared by the architectures, which differ only in their names.
 */
export function expandLoraTargets(
  targets: readonly string[],
  layers: number,
  single: readonly string[],
  groups: Record<string, readonly string[]>,
  naming: (layer: number, target: string) => { linear: string; weight: string },
): { linear: string; weight: string }[] {
  const chosen = new Set<string>();
  for (const t of targets) {
    if (groups[t]) groups[t].forEach((x) => chosen.add(x));
    else if (single.includes(t)) chosen.add(t);
    else throw new ConfigError('lora.targets', `unknown target "${t}"; use ${[...Object.keys(groups), ...single].join(', ')}`);
  }
  const out: { linear: string; weight: string }[] = [];
  for (let l = 0; l < layers; l++) for (const t of single) if (chosen.has(t)) out.push(naming(l, t));
  return out;
}

export class GPT implements LanguageModel {
  readonly config: ModelConfig;
  readonly params = new Map<string, tf.Variable>();
  /** LoRA adapters keyed by linear name (e.g. "h.0.attn.qkv"); empty without LoRA. */
  readonly adapters = new Map<string, Adapter>();

  constructor(config: Partial<ModelConfig> & { vocabSize: number }, weights?: Map<string, tf.Tensor>) {
    this.config = resolveModelConfig(config);
    const shapes = parameterShapes(this.config);
    if (weights) {
      for (const [name, shape] of shapes) {
        const w = weights.get(name);
        if (!w) throw new Error(`weights are missing tensor "${name}"`);
        if (w.shape.join(',') !== shape.join(',')) {
          throw new Error(`tensor "${name}" has shape [${w.shape}] but the config needs [${shape}]`);
        }
        this.params.set(name, tf.variable(w, true, `${name}_${uid()}`));
      }
    } else {
      const init = initialWeights(this.config);
      for (const [name, t] of init) this.params.set(name, tf.variable(t, true, `${name}_${uid()}`));
      init.forEach((t) => t.dispose());
    }
  }

  get numParameters(): number {
    return countParameters(this.config);
  }

  get contextLength(): number {
    return this.config.contextLength;
  }

  get vocabSize(): number {
    return this.config.vocabSize;
  }

  get hasValueHead(): boolean {
    return this.config.valueHead;
  }

  get tiedHead(): boolean {
    return this.config.tiedHead;
  }

  trainableVariables(): Map<string, tf.Variable> {
    return adapterTrainables(this.params, this.adapters, (name) => name.startsWith('value.'));
  }

  loraLinears(targets: readonly string[]): { linear: string; weight: string }[] {
    return expandLoraTargets(targets, this.config.layers, LINEAR_TARGETS, GPT_TARGET_GROUPS, (l, t) => ({ linear: `h.${l}.${t}`, weight: `h.${l}.${t}.w` }));
  }

  frozenCopy(): GPT {
    return frozenCopy(this);
  }

  p(name: string): tf.Variable {
    const v = this.params.get(name);
    if (!v) throw new Error(`model has no parameter "${name}"`);
    return v;
  }

  /** x[N, in] W + b (+ LoRA) for the linear layer `name`. */
  linear(x: tf.Tensor2D, name: string): tf.Tensor2D {
    let y = linear2d(x, this.p(`${name}.w`) as tf.Tensor2D, this.p(`${name}.b`) as tf.Tensor1D);
    const ad = this.adapters.get(name);
    if (ad) y = y.add(matMul2d(matMul2d(x, ad.a as tf.Tensor2D), ad.b as tf.Tensor2D).mul(ad.scale));
    return y;
  }

  /** Forward `tokens` [B, Tn]. Must be called inside tf.tidy (or dispose the results). */
  forward(tokens: number[][] | tf.Tensor2D, opts: ForwardOptions = {}): ForwardResult {
    // A sampler's decoding step, as one native call where the native kernels are active.
    const native = Array.isArray(tokens) ? decodeNatively(this, tokens, opts) : null;
    if (native) return native;
    const c = this.config;
    const tok = Array.isArray(tokens) ? tf.tensor2d(tokens, undefined, 'int32') : tokens;
    const [B, Tn] = tok.shape;
    const past = opts.cache?.length ?? 0;
    const Tk = past + Tn;
    if (Tk > c.contextLength) {
      throw new Error(`sequence of ${Tk} tokens exceeds model.contextLength ${c.contextLength}`);
    }
    const d = c.width;
    const H = c.heads;
    const hd = d / H;
    const N = B * Tn;

    let x: tf.Tensor2D;
    if (useFusedKernels()) {
      const positions = opts.positions
        ? opts.positions.flat()
        : Array.from({ length: N }, (_, i) => past + (i % Tn));
      x = fusedEmbed(this.p('wte') as tf.Tensor2D, this.p('wpe') as tf.Tensor2D, tok.reshape([N]) as tf.Tensor1D, tf.tensor1d(positions, 'int32'));
    } else if (opts.positions) {
      x = embed(this.p('wte') as tf.Tensor2D, tok.reshape([N]) as tf.Tensor1D);
      const pos = tf.tensor1d(opts.positions.flat(), 'int32');
      x = x.add(embed(this.p('wpe') as tf.Tensor2D, pos)) as tf.Tensor2D;
    } else {
      x = embed(this.p('wte') as tf.Tensor2D, tok.reshape([N]) as tf.Tensor1D);
      x = addPositions(x, this.p('wpe').slice([past, 0], [Tn, d]) as tf.Tensor2D);
    }
    x = this.dropout(x, opts);

    const scale = 1 / Math.sqrt(hd);
    // Without a cache to read or return, attention runs as one fused op where JS kernels exist;
    // masked by causality alone (training), as SIMD kernels on wasm, which need no bias tensor.
    const fusedAttention = !opts.cache && !opts.returnCache && useFusedKernels();
    const simdCausal = fusedAttention && opts.keyMask === undefined && simdCausalAttentionAvailable(hd);
    // The additive mask, built on first use (in this forward's scope) by the paths that read it.
    let bias: tf.Tensor4D | undefined;
    const maskBias = () => (bias ??= attentionBias(B, Tn, past, opts.keyMask));
    const newKeys: tf.Tensor4D[] = [];
    const newValues: tf.Tensor4D[] = [];
    for (let l = 0; l < c.layers; l++) {
      const pre = `h.${l}`;
      const h = layerNorm(x, this.p(`${pre}.ln1.g`) as tf.Tensor1D, this.p(`${pre}.ln1.b`) as tf.Tensor1D);
      const qkv = this.linear(h, `${pre}.attn.qkv`);
      let y: tf.Tensor2D;
      if (simdCausal) {
        y = simdCausalSelfAttention(qkv, B, Tn, H);
      } else if (fusedAttention) {
        y = fusedSelfAttention(qkv, maskBias(), B, Tn, H);
      } else if (useFusedKernels()) {
        const prev = opts.cache ? { keys: opts.cache.keys[l], values: opts.cache.values[l], length: past } : undefined;
        const capacity = opts.returnCache ? opts.cacheCapacity : undefined;
        const r = cachedSelfAttention(qkv, maskBias(), B, Tn, H, prev, { capacity, inPlace: capacity !== undefined });
        y = r.y;
        if (opts.returnCache) {
          newKeys.push(r.keys);
          newValues.push(r.values);
        }
      } else {
        const [q, k, v] = tf.split(qkv, 3, 1);
        // Heads stay in the projection's [B, T, H, hd] layout; ops.ts multiplies them without transposes.
        let kh = k.reshape([B, Tn, H, hd]) as tf.Tensor4D;
        let vh = v.reshape([B, Tn, H, hd]) as tf.Tensor4D;
        if (opts.cache) {
          kh = tf.concat([opts.cache.keys[l], kh], 1);
          vh = tf.concat([opts.cache.values[l], vh], 1);
        }
        if (opts.returnCache) {
          newKeys.push(kh);
          newValues.push(vh);
        }
        const qh = q.mul(scale).reshape([B, Tn, H, hd]) as tf.Tensor4D;
        const att = tf.softmax(attentionScores(qh, kh).add(maskBias())) as tf.Tensor4D; // [Tn, B, H, Tk]
        y = attentionMix(att, vh).reshape([N, d]) as tf.Tensor2D;
      }
      x = residualAdd(x, this.dropout(this.linear(y, `${pre}.attn.proj`), opts));
      const h2 = layerNorm(x, this.p(`${pre}.ln2.g`) as tf.Tensor1D, this.p(`${pre}.ln2.b`) as tf.Tensor1D);
      const m = this.linear(gelu(this.linear(h2, `${pre}.mlp.fc`)), `${pre}.mlp.proj`);
      x = residualAdd(x, this.dropout(m, opts));
    }
    let hf = layerNorm(x, this.p('lnf.g') as tf.Tensor1D, this.p('lnf.b') as tf.Tensor1D);
    if (opts.lastOnly && Tn > 1) {
      hf = hf.reshape([B, Tn, d]).slice([0, Tn - 1, 0], [B, 1, d]).reshape([B, d]);
    }
    // A tied head reads the token table as it lies where it can (no transposed copy per forward).
    const logits = opts.head ? matMul2d(hf, opts.head) : c.tiedHead ? tiedHeadLogits(hf, this.p('wte') as tf.Tensor2D) : matMul2d(hf, this.headWeights());
    const result: ForwardResult = { logits };
    if (c.valueHead) {
      const rows = opts.lastOnly ? 1 : Tn;
      result.values = linear2d(hf, this.p('value.w') as tf.Tensor2D, this.p('value.b') as tf.Tensor1D).reshape([B, rows]) as tf.Tensor2D;
    }
    if (opts.returnCache) result.cache = { keys: newKeys, values: newValues, length: Tk };
    return result;
  }

  /** The output projection [d, V]: the transposed token table when tied (a new tensor), else `head.w`. */
  headWeights(): tf.Tensor2D {
    return this.config.tiedHead ? (tf.transpose(this.p('wte')) as tf.Tensor2D) : (this.p('head.w') as tf.Tensor2D);
  }

  private dropout(x: tf.Tensor2D, opts: ForwardOptions): tf.Tensor2D {
    if (!opts.training || this.config.dropout === 0) return x;
    const seed = opts.rng ? opts.rng.nextUint32() : undefined;
    return tf.dropout(x, this.config.dropout, undefined, seed) as tf.Tensor2D;
  }

  /** Copy of every base parameter's values (for checkpoints and tests). */
  snapshot(): Map<string, Float32Array> {
    const out = new Map<string, Float32Array>();
    for (const [name, v] of this.params) out.set(name, v.dataSync() as Float32Array);
    return out;
  }

  dispose(): void {
    for (const v of this.params.values()) v.dispose();
    for (const ad of this.adapters.values()) {
      ad.a.dispose();
      ad.b.dispose();
    }
    this.params.clear();
    this.adapters.clear();
  }
}

// mergedTensors and frozenCopy read only the model's own parameters and adapters. They live here,
// not in lora.ts or a trainer, so that checkpoints and every trainer share them without an import
// circle (lora.ts imports this module).

/**
 * Base weights with every adapter folded in, W + scale · A B, as new tensors on the device (the
 * caller disposes them). The model is not changed.
 */
export function mergedTensors(model: LanguageModel): Map<string, tf.Tensor> {
  const byWeight = new Map([...model.adapters.values()].map((ad) => [ad.weight, ad]));
  const out = new Map<string, tf.Tensor>();
  for (const [name, v] of model.params) {
    const ad = byWeight.get(name);
    out.set(name, ad ? tf.tidy(() => v.add(tf.matMul(ad.a, ad.b).mul(ad.scale))) : v.clone());
  }
  return out;
}

/** A copy of the policy's current weights (LoRA merged) that no optimiser touches. */
export function frozenCopy(model: GPT): GPT {
  const weights = mergedTensors(model);
  const copy = new GPT(model.config, weights);
  weights.forEach((t) => t.dispose());
  return copy;
}

let uidCounter = 0;
function uid(): number {
  return uidCounter++;
}

/** Additive attention bias [Tn, B|1, 1, Tk] (the score layout): causal, plus padding keys masked out. */
function attentionBias(B: number, Tn: number, past: number, keyMask?: number[][]): tf.Tensor4D {
  const Tk = past + Tn;
  const rows = keyMask ? B : 1;
  const data = new Float32Array(Tn * rows * Tk);
  for (let i = 0; i < Tn; i++) {
    for (let b = 0; b < rows; b++) {
      for (let j = 0; j < Tk; j++) {
        const masked = j > past + i || (keyMask !== undefined && keyMask[b][j] === 0);
        data[(i * rows + b) * Tk + j] = masked ? -1e9 : 0;
      }
    }
  }
  return tf.tensor4d(data, [Tn, rows, 1, Tk]);
}

/** Name → shape of every base parameter, in a fixed order. */
function parameterShapes(c: ModelConfig): [string, number[]][] {
  const d = c.width;
  const hid = c.mlpRatio * d;
  const out: [string, number[]][] = [
    ['wte', [c.vocabSize, d]],
    ['wpe', [c.contextLength, d]],
  ];
  for (let l = 0; l < c.layers; l++) {
    const p = `h.${l}`;
    out.push(
      [`${p}.ln1.g`, [d]],
      [`${p}.ln1.b`, [d]],
      [`${p}.attn.qkv.w`, [d, 3 * d]],
      [`${p}.attn.qkv.b`, [3 * d]],
      [`${p}.attn.proj.w`, [d, d]],
      [`${p}.attn.proj.b`, [d]],
      [`${p}.ln2.g`, [d]],
      [`${p}.ln2.b`, [d]],
      [`${p}.mlp.fc.w`, [d, hid]],
      [`${p}.mlp.fc.b`, [hid]],
      [`${p}.mlp.proj.w`, [hid, d]],
      [`${p}.mlp.proj.b`, [d]],
    );
  }
  out.push(['lnf.g', [d]], ['lnf.b', [d]]);
  if (!c.tiedHead) out.push(['head.w', [d, c.vocabSize]]);
  if (c.valueHead) out.push(['value.w', [d, 1]], ['value.b', [1]]);
  return out;
}

/**
 * GPT-2 initialisation from our own seeded generator (so weights depend only on the seed, not on
 * the backend): normal(0, 0.02), residual projections scaled by 1/√(2·layers), norms at 1/0,
 * biases at 0, the value head at 0 so initial values are 0.
 */
function initialWeights(c: ModelConfig): Map<string, tf.Tensor> {
  const rng = new Rng(c.seed);
  const out = new Map<string, tf.Tensor>();
  for (const [name, shape] of parameterShapes(c)) {
    const size = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    if (name.endsWith('.g')) data.fill(1);
    else if (name.endsWith('.b') || name.startsWith('value.')) data.fill(0);
    else {
      const std = name.endsWith('proj.w') ? 0.02 / Math.sqrt(2 * c.layers) : 0.02;
      for (let i = 0; i < size; i++) data[i] = rng.normal() * std;
    }
    out.set(name, tf.tensor(data, shape));
  }
  return out;
}
