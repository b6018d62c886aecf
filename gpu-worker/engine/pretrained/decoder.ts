/**
 * The pretrained decoder of the Llama and Qwen families (Llama 2/3.x, SmolLM2, TinyLlama,
 * Qwen2/2.5, Qwen3), beside the engine's own GPT (../model.ts): token embeddings, pre-norm blocks
 * of RMSNorm → grouped-query attention with rotary positions → RMSNorm → SwiGLU MLP, a final
 * RMSNorm and a tied or untied head. Activations stay 2-D ([batch·time, width]) and every weight
 * product goes through ../ops.ts's 2-D matmuls, so the wasm fast path (XNNPACK, custom gradients)
 * applies as it does to the GPT. One `forward` serves recomputation and KV-cached decoding.
 *
 * Parameters keep their Hugging Face names, but projection weights are stored transposed, [in,
 * out] (HF stores [out, in]), because the fast path multiplies by non-transposed right operands.
 */
import * as tf from '@tensorflow/tfjs';
import { CheckpointError } from '../errors';
import { nativeRotaryAttention } from '../attention';
import { nativeDecoderOpsAvailable, nativeRmsNorm, nativeSwiglu } from '../fused';
import { recordingGradients, useFusedKernels } from '../kernels';
import { nativeKernels } from '../native';
import { type NamedTensor } from '../safetensors';
import { attentionMix, attentionScores, embed, linear2d, matMul2d, frozenEmbed, frozenLinear2d, frozenLinearT2d, loraLinear2d } from '../ops';
import { type Adapter, type ForwardOptions, type ForwardResult, type KvCache, type LanguageModel, adapterTrainables, expandLoraTargets, mergedTensors } from '../model';
import { type DecoderConfig } from './hf-config';
import { readHfFolder } from './hf-folder';
import { applyRotary, inverseFrequencies, rotaryTables } from './rope';

/**
 * The GPT's KV cache (model.ts), one definition: per layer, keys (after rotation) and values
 * [B, T, kvHeads, headDim], and how many positions they hold.
 */
export type DecoderCache = KvCache;

/** Every tensor the checkpoint must hold, with its Hugging Face shape ([out, in] for projections). */
export function expectedTensors(c: DecoderConfig): [string, number[]][] {
  const d = c.hiddenSize;
  const q = c.heads * c.headDim;
  const kv = c.kvHeads * c.headDim;
  const out: [string, number[]][] = [['model.embed_tokens.weight', [c.vocabSize, d]]];
  for (let l = 0; l < c.layers; l++) {
    const p = `model.layers.${l}`;
    out.push(
      [`${p}.input_layernorm.weight`, [d]],
      [`${p}.self_attn.q_proj.weight`, [q, d]],
      [`${p}.self_attn.k_proj.weight`, [kv, d]],
      [`${p}.self_attn.v_proj.weight`, [kv, d]],
      [`${p}.self_attn.o_proj.weight`, [d, q]],
      [`${p}.post_attention_layernorm.weight`, [d]],
      [`${p}.mlp.gate_proj.weight`, [c.intermediateSize, d]],
      [`${p}.mlp.up_proj.weight`, [c.intermediateSize, d]],
      [`${p}.mlp.down_proj.weight`, [d, c.intermediateSize]],
    );
    if (c.qkvBias) out.push([`${p}.self_attn.q_proj.bias`, [q]], [`${p}.self_attn.k_proj.bias`, [kv]], [`${p}.self_attn.v_proj.bias`, [kv]]);
    if (c.oBias) out.push([`${p}.self_attn.o_proj.bias`, [d]]);
    if (c.qkNorm) out.push([`${p}.self_attn.q_norm.weight`, [c.headDim]], [`${p}.self_attn.k_norm.weight`, [c.headDim]]);
  }
  out.push(['model.norm.weight', [d]]);
  if (!c.tiedEmbeddings) out.push(['lm_head.weight', [c.vocabSize, d]]);
  return out;
}

/** The same tensors in the engine's layout: projections (and an untied head) [in, out]. */
function engineShapes(c: DecoderConfig): [string, number[]][] {
  return expectedTensors(c).map(([name, shape]) => [name, isProjection(name, shape) ? [shape[1], shape[0]] : shape]);
}

/** Whether a 2-D tensor is stored transposed in the engine (every one but the token table). */
function isProjection(name: string, shape: readonly number[]): boolean {
  return shape.length === 2 && name !== 'model.embed_tokens.weight' && !name.startsWith('value.');
}

/** Tensors a checkpoint may carry that the forward pass does not read. */
export function ignorable(name: string, c: DecoderConfig): boolean {
  // Old Llama checkpoints store the rotary table (we compute it); tied ones sometimes keep a copy of the head.
  return name.endsWith('.rotary_emb.inv_freq') || (c.tiedEmbeddings && name === 'lm_head.weight');
}

let uidCounter = 0;

/** The projections LoRA can adapt, by their short names, and the groups of them. */
const LORA_TARGETS = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;
const LORA_GROUPS: Record<string, readonly string[]> = { attn: ['q', 'k', 'v', 'o'], mlp: ['gate', 'up', 'down'] };
const PROJECTION: Record<(typeof LORA_TARGETS)[number], string> = {
  q: 'self_attn.q_proj',
  k: 'self_attn.k_proj',
  v: 'self_attn.v_proj',
  o: 'self_attn.o_proj',
  gate: 'mlp.gate_proj',
  up: 'mlp.up_proj',
  down: 'mlp.down_proj',
};

/** The imported model a decoder was loaded from: its checkpoints name it instead of holding its weights. */
export interface BaseModelRef {
  modelId: string;
  contentHash: string;
}

export interface DecoderOptions {
  /** Add a value head (zero-initialised; PPO's critic), as the GPT's `valueHead`. */
  valueHead?: boolean;
  /** The imported model these weights are (kept by frozen copies). */
  base?: BaseModelRef | null;
  /**
   * The longest sequence a run uses, below the model's max_position_embeddings (32k–128k for
   * current models): what rollouts, truncation and memory estimates go by (training.model.contextLength).
   */
  contextLength?: number;
}

export class PretrainedDecoder implements LanguageModel {
  readonly params = new Map<string, tf.Variable>();
  readonly adapters = new Map<string, Adapter>();
  readonly hasValueHead: boolean;
  readonly base: BaseModelRef | null;
  private readonly contextCap: number;
  private readonly invFreq: Float32Array;

  /**
   * Weights by Hugging Face name in the engine's layout (projections [in, out]); a missing tensor
   * or a wrong shape is an error naming it. `fromHfTensors` reads the checkpoint's own layout.
   */
  constructor(
    readonly config: DecoderConfig,
    weights: Map<string, tf.Tensor>,
    opts: DecoderOptions = {},
  ) {
    this.hasValueHead = opts.valueHead ?? false;
    this.base = opts.base ?? null;
    this.contextCap = Math.min(opts.contextLength ?? config.maxPositions, config.maxPositions);
    const shapes = engineShapes(config);
    if (this.hasValueHead) shapes.push(['value.w', [config.hiddenSize, 1]], ['value.b', [1]]);
    for (const [name, shape] of shapes) {
      const w = weights.get(name) ?? (name.startsWith('value.') ? tf.zeros(shape) : undefined);
      if (!w) throw new Error(`weights are missing tensor "${name}"`);
      if (w.shape.join(',') !== shape.join(',')) throw new Error(`tensor "${name}" has shape [${w.shape}] but the config needs [${shape}]`);
      this.params.set(name, tf.variable(w, true, `${name}_${uidCounter++}`));
      if (w !== weights.get(name)) w.dispose();
    }
    this.invFreq = inverseFrequencies(config);
  }

  /**
   * Weights by Hugging Face name in Hugging Face layout; `where` names the source in errors. A
   * missing tensor, a shape that is not the config's, or a tensor the architecture does not have
   * is refused naming it, before any variable is made.
   */
  static fromHfTensors(config: DecoderConfig, tensors: Map<string, NamedTensor>, where = '<tensors>', opts: DecoderOptions = {}): PretrainedDecoder {
    const expected = expectedTensors(config);
    const known = new Set(expected.map(([name]) => name));
    for (const [name, shape] of expected) {
      const t = tensors.get(name);
      if (!t) throw new CheckpointError(where, `tensor "${name}" is missing (${config.family} config with ${config.layers} layers needs it)`);
      if (t.shape.join(',') !== shape.join(',')) {
        throw new CheckpointError(where, `tensor "${name}" has shape [${t.shape}] but the config needs [${shape}]`);
      }
    }
    for (const name of tensors.keys()) {
      if (!known.has(name) && !ignorable(name, config)) {
        throw new CheckpointError(where, `tensor "${name}" is not part of a ${config.family} model with this config`);
      }
    }
    const weights = new Map<string, tf.Tensor>();
    try {
      for (const [name, shape] of expected) {
        const t = tensors.get(name)!;
        weights.set(
          name,
          tf.tidy(() => {
            const raw = tf.tensor(t.data, shape);
            return isProjection(name, shape) ? raw.transpose() : raw;
          }),
        );
      }
      return new PretrainedDecoder(config, weights, opts);
    } finally {
      weights.forEach((t) => t.dispose());
    }
  }

  /** Load a Hugging Face folder (config.json + safetensors, single or sharded). */
  static async fromFolder(folder: string, opts: DecoderOptions = {}): Promise<PretrainedDecoder> {
    const { config, tensors } = await readHfFolder(folder);
    return PretrainedDecoder.fromHfTensors(config, tensors, folder, opts);
  }

  get contextLength(): number {
    return this.contextCap;
  }

  get vocabSize(): number {
    return this.config.vocabSize;
  }

  get tiedHead(): boolean {
    return this.config.tiedEmbeddings;
  }

  get numParameters(): number {
    let n = 0;
    for (const [name, v] of this.params) if (!name.startsWith('value.')) n += v.size;
    return n;
  }

  trainableVariables(): Map<string, tf.Variable> {
    return adapterTrainables(this.params, this.adapters, (name) => name.startsWith('value.'));
  }

  loraLinears(targets: readonly string[]): { linear: string; weight: string }[] {
    return expandLoraTargets(targets, this.config.layers, LORA_TARGETS, LORA_GROUPS, (l, t) => {
      const linear = `model.layers.${l}.${PROJECTION[t as (typeof LORA_TARGETS)[number]]}`;
      return { linear, weight: `${linear}.weight` };
    });
  }

  frozenCopy(): PretrainedDecoder {
    const weights = mergedTensors(this);
    try {
      return new PretrainedDecoder(this.config, weights, { valueHead: this.hasValueHead, base: this.base, contextLength: this.contextCap });
    } finally {
      weights.forEach((t) => t.dispose());
    }
  }

  /**
   * The weights (adapters merged) by Hugging Face name in Hugging Face layout, read to the CPU: what
   * a Hugging Face folder holds. The value head is not part of it.
   */
  async hfTensors(): Promise<Map<string, NamedTensor>> {
    const merged = mergedTensors(this);
    const out = new Map<string, NamedTensor>();
    try {
      for (const [name, t] of merged) {
        if (name.startsWith('value.')) continue;
        const hf = isProjection(name, t.shape) ? tf.transpose(t) : t;
        out.set(name, { shape: hf.shape, data: (await hf.data()) as Float32Array });
        if (hf !== t) hf.dispose();
      }
    } finally {
      merged.forEach((t) => t.dispose());
    }
    return out;
  }

  snapshot(): Map<string, Float32Array> {
    const out = new Map<string, Float32Array>();
    for (const [name, v] of this.params) out.set(name, v.dataSync() as Float32Array);
    return out;
  }

  p(name: string): tf.Variable {
    const v = this.params.get(name);
    if (!v) throw new Error(`model has no parameter "${name}"`);
    return v;
  }

  /** x [N, in] W (+ b) (+ LoRA) for the projection `name` (e.g. "model.layers.0.self_attn.q_proj"). */
  private linear(x: tf.Tensor2D, name: string): tf.Tensor2D {
    const w = this.p(`${name}.weight`) as tf.Tensor2D;
    const b = this.params.get(`${name}.bias`);
    // Under LoRA the base is frozen (trainableVariables): no gradient for w or b.
    const ad = this.adapters.get(name);
    if (ad) return loraLinear2d(x, w, b as tf.Tensor1D | undefined, ad.a as tf.Tensor2D, ad.b as tf.Tensor2D, ad.scale);
    return this.adapters.size > 0 ? frozenLinear2d(x, w, b as tf.Tensor1D | undefined) : b ? linear2d(x, w, b as tf.Tensor1D) : matMul2d(x, w);
  }

  /** RMSNorm over the last axis of [n, k]: x / √(mean x² + ε) · g. */
  private rmsNorm(x: tf.Tensor2D, name: string): tf.Tensor2D {
    const g = this.p(name);
    if (useFusedKernels() && nativeDecoderOpsAvailable()) return nativeRmsNorm(x, g as tf.Tensor1D, this.config.rmsNormEps);
    return x.mul(tf.rsqrt(x.square().mean(-1, true).add(this.config.rmsNormEps))).mul(g) as tf.Tensor2D;
  }

  /** The output projection [d, V]: the transposed embedding when tied (a new tensor), else the head. */
  headWeights(): tf.Tensor2D {
    return this.config.tiedEmbeddings ? (this.p('model.embed_tokens.weight').transpose() as tf.Tensor2D) : (this.p('lm_head.weight') as tf.Tensor2D);
  }

  /** Forward `tokens` [B, Tn]. Call inside tf.tidy (or dispose the results). */
  forward(tokens: number[][], opts: ForwardOptions = {}): ForwardResult {
    // (Not read: `cacheCapacity`, as this cache grows by concatenation; `training` and `rng`, as
    // these models have no dropout.)
    const c = this.config;
    const B = tokens.length;
    const Tn = tokens[0]?.length ?? 0;
    if (B === 0 || Tn === 0 || tokens.some((row) => row.length !== Tn)) throw new Error('tokens must be a non-empty rectangular [batch, time] array');
    const past = opts.cache?.length ?? 0;
    const Tk = past + Tn;
    if (Tk > c.maxPositions) throw new Error(`sequence of ${Tk} tokens exceeds max_position_embeddings ${c.maxPositions}`);
    for (const row of tokens) {
      for (const id of row) if (!Number.isInteger(id) || id < 0 || id >= c.vocabSize) throw new Error(`token id ${id} is outside the vocabulary [0, ${c.vocabSize})`);
    }
    if (opts.positions && (opts.positions.length !== B || opts.positions.some((row) => row.length !== Tn))) throw new Error(`positions must be [${B}, ${Tn}] like the tokens`);
    if (opts.keyMask && (opts.keyMask.length !== B || opts.keyMask.some((row) => row.length !== Tk))) throw new Error(`keyMask must be [${B}, ${Tk}] (cached + new positions)`);
    const N = B * Tn;
    const { heads: H, kvHeads: Hkv, headDim: hd } = c;
    const ids = tf.tensor1d(tokens.flat(), 'int32');
    const table = this.p('model.embed_tokens.weight') as tf.Tensor2D;
    // gather is cheap without a gradient; ops.ts's embed (a one-hot product: gather has no gradient
    // kernel on wasm) only when the table itself trains. Under LoRA it does not (frozenEmbed: the
    // tape keeps no copy of it).
    let x = recordingGradients() && this.adapters.size === 0 ? embed(table, ids) : frozenEmbed(table, ids);
    const { cos, sin } = rotaryTables(this.invFreq, opts.positions ?? [Array.from({ length: Tn }, (_, i) => past + i)]);
    let bias: tf.Tensor4D | undefined;
    // Training and recomputation (no cache to read or return, no padded keys) run attention as one
    // native kernel each way, rotation included, where the native kernels are active.
    const nativeAttention = useFusedKernels() && nativeKernels() !== null && !opts.cache && !opts.returnCache && !opts.keyMask && hd % 2 === 0;
    const scale = 1 / Math.sqrt(hd);
    const keys: tf.Tensor4D[] = [];
    const values: tf.Tensor4D[] = [];
    for (let l = 0; l < c.layers; l++) {
      const p = `model.layers.${l}`;
      const h = this.rmsNorm(x, `${p}.input_layernorm.weight`);
      let q = this.linear(h, `${p}.self_attn.q_proj`);
      let k = this.linear(h, `${p}.self_attn.k_proj`);
      const v = this.linear(h, `${p}.self_attn.v_proj`);
      if (c.qkNorm) {
        // Qwen3 normalises every head of q and k on its own, before the rotation.
        q = this.rmsNorm(q.reshape([N * H, hd]), `${p}.self_attn.q_norm.weight`);
        k = this.rmsNorm(k.reshape([N * Hkv, hd]), `${p}.self_attn.k_norm.weight`);
      }
      let y: tf.Tensor2D;
      if (nativeAttention) y = nativeRotaryAttention(q.reshape([N, H * hd]), k.reshape([N, Hkv * hd]), v, cos, sin, B, Tn, H);
      else {
        let kh = applyRotary(k.reshape([B, Tn, Hkv, hd]), cos, sin);
        let vh = v.reshape([B, Tn, Hkv, hd]) as tf.Tensor4D;
        if (opts.cache) {
          kh = tf.concat([opts.cache.keys[l], kh], 1);
          vh = tf.concat([opts.cache.values[l], vh], 1);
        }
        if (opts.returnCache) {
          keys.push(kh);
          values.push(vh);
        }
        const qh = applyRotary(q.mul(scale).reshape([B, Tn, H, hd]), cos, sin);
        bias ??= attentionBias(B, Tn, past, opts.keyMask);
        const att = tf.softmax(attentionScores(qh, repeatKvHeads(kh, H)).add(bias)) as tf.Tensor4D; // [Tn, B, H, Tk]
        y = attentionMix(att, repeatKvHeads(vh, H)).reshape([N, H * hd]) as tf.Tensor2D;
      }
      x = x.add(this.linear(y, `${p}.self_attn.o_proj`));
      const h2 = this.rmsNorm(x, `${p}.post_attention_layernorm.weight`);
      const gate = this.linear(h2, `${p}.mlp.gate_proj`);
      const up = this.linear(h2, `${p}.mlp.up_proj`);
      const act = useFusedKernels() && nativeDecoderOpsAvailable() ? nativeSwiglu(gate, up) : (gate.mul(tf.sigmoid(gate)).mul(up) as tf.Tensor2D);
      x = x.add(this.linear(act, `${p}.mlp.down_proj`));
    }
    let hf = this.rmsNorm(x, 'model.norm.weight');
    const d = c.hiddenSize;
    if (opts.lastOnly && Tn > 1) hf = hf.reshape([B, Tn, d]).slice([0, Tn - 1, 0], [B, 1, d]).reshape([B, d]);
    let logits: tf.Tensor2D;
    if (opts.head) logits = matMul2d(hf, opts.head);
    else if (this.adapters.size === 0) logits = matMul2d(hf, this.headWeights());
    // A frozen head (under LoRA): a tied one is the token table read transposed, its backward a product with the table itself.
    else if (c.tiedEmbeddings) logits = frozenLinearT2d(hf, this.p('model.embed_tokens.weight') as tf.Tensor2D);
    else logits = frozenLinear2d(hf, this.p('lm_head.weight') as tf.Tensor2D);
    const result: ForwardResult = { logits };
    if (this.hasValueHead) {
      const rows = opts.lastOnly ? 1 : Tn;
      result.values = linear2d(hf, this.p('value.w') as tf.Tensor2D, this.p('value.b') as tf.Tensor1D).reshape([B, rows]) as tf.Tensor2D;
    }
    if (opts.returnCache) result.cache = { keys, values, length: Tk };
    return result;
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

/**
 * Grouped-query attention: key/value head j serves query heads j·r … j·r + r − 1 (r = H / kvHeads),
 * as transformers' repeat_kv lays them out. A reshape and a concatenation of r copies, which have
 * gradients on every backend; not `tile`, whose wasm kernel is a scalar loop (~20 ms for a
 * [16, 17, 3, 64] cache: 1.2 of a 1.4 s decoding step of a SmolLM2-135M-shaped model).
 */
function repeatKvHeads(x: tf.Tensor4D, H: number): tf.Tensor4D {
  const [B, T, Hkv, hd] = x.shape;
  if (Hkv === H) return x;
  const one = x.reshape([B * T, Hkv, 1, hd]);
  return tf.concat(new Array<tf.Tensor>(H / Hkv).fill(one), 2).reshape([B, T, H, hd]) as tf.Tensor4D;
}

/**
 * Additive attention bias in the score layout [Tn, B|1, 1, Tk]: query i (the cache's past + i-th
 * key) sees keys up to itself, less the padding keys of its row.
 */
function attentionBias(B: number, Tn: number, past: number, keyMask?: number[][]): tf.Tensor4D {
  const Tk = past + Tn;
  const rows = keyMask ? B : 1;
  const data = new Float32Array(Tn * rows * Tk);
  for (let i = 0; i < Tn; i++) {
    for (let b = 0; b < rows; b++) {
      for (let j = 0; j < Tk; j++) {
        const masked = j > past + i || (keyMask !== undefined && keyMask[b][j] === 0);
        if (masked) data[(i * rows + b) * Tk + j] = -1e9;
      }
    }
  }
  return tf.tensor4d(data, [Tn, rows, 1, Tk]);
}
