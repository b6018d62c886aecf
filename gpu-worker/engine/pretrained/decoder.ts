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
import { recordingGradients } from '../kernels';
import { type NamedTensor } from '../safetensors';
import { attentionMix, attentionScores, embed, linear2d, matMul2d } from '../ops';
import { type ForwardOptions, type KvCache } from '../model';
import { type DecoderConfig } from './hf-config';
import { readHfFolder } from './hf-folder';
import { applyRotary, inverseFrequencies, rotaryTables } from './rope';

/** Per-layer keys (after rotation) and values [B, T, kvHeads, headDim], and how many positions they hold. */
/** The GPT's KV cache and forward options (model.ts), one definition: the pretrained decoders take the same. */
export type DecoderCache = KvCache;
/** As the GPT's, without `cacheCapacity` (this decoder's cache grows by concatenation for now). */
export type DecoderForwardOptions = Omit<ForwardOptions, 'cacheCapacity'>;

export interface DecoderForwardResult {
  /** [B·Tn, V], or [B, V] with lastOnly. */
  logits: tf.Tensor2D;
  cache?: DecoderCache;
}

/** Every tensor the checkpoint must hold, with its Hugging Face shape ([out, in] for projections). */
function expectedTensors(c: DecoderConfig): [string, number[]][] {
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

/** Tensors a checkpoint may carry that the forward pass does not read. */
function ignorable(name: string, c: DecoderConfig): boolean {
  // Old Llama checkpoints store the rotary table (we compute it); tied ones sometimes keep a copy of the head.
  return name.endsWith('.rotary_emb.inv_freq') || (c.tiedEmbeddings && name === 'lm_head.weight');
}

let uidCounter = 0;

export class PretrainedDecoder {
  readonly params = new Map<string, tf.Variable>();
  private readonly invFreq: Float32Array;

  /**
   * Weights by Hugging Face name in Hugging Face layout; `where` names the source in errors. A
   * missing tensor, a shape that is not the config's, or a tensor the architecture does not have
   * is refused naming it, before any variable is made.
   */
  constructor(
    readonly config: DecoderConfig,
    tensors: Map<string, NamedTensor>,
    where = '<tensors>',
  ) {
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
    for (const [name, shape] of expected) {
      const t = tensors.get(name)!;
      const value = tf.tidy(() => {
        const raw = tf.tensor(t.data, shape);
        return shape.length === 2 && name !== 'model.embed_tokens.weight' ? raw.transpose() : raw;
      });
      this.params.set(name, tf.variable(value, true, `${name}_${uidCounter++}`));
      value.dispose();
    }
    this.invFreq = inverseFrequencies(config);
  }

  /** Load a Hugging Face folder (config.json + safetensors, single or sharded). */
  static async fromFolder(folder: string): Promise<PretrainedDecoder> {
    const { config, tensors } = await readHfFolder(folder);
    return new PretrainedDecoder(config, tensors, folder);
  }

  p(name: string): tf.Variable {
    const v = this.params.get(name);
    if (!v) throw new Error(`model has no parameter "${name}"`);
    return v;
  }

  /** x [N, in] W (+ b) for the projection `name` (e.g. "model.layers.0.self_attn.q_proj"). */
  private linear(x: tf.Tensor2D, name: string): tf.Tensor2D {
    const w = this.p(`${name}.weight`) as tf.Tensor2D;
    const b = this.params.get(`${name}.bias`);
    return b ? linear2d(x, w, b as tf.Tensor1D) : matMul2d(x, w);
  }

  /** RMSNorm over the last axis of [n, k]: x / √(mean x² + ε) · g. */
  private rmsNorm(x: tf.Tensor2D, name: string): tf.Tensor2D {
    const g = this.p(name);
    return x.mul(tf.rsqrt(x.square().mean(-1, true).add(this.config.rmsNormEps))).mul(g) as tf.Tensor2D;
  }

  /** The output projection [d, V]: the transposed embedding when tied (a new tensor), else the head. */
  headWeights(): tf.Tensor2D {
    return this.config.tiedEmbeddings ? (this.p('model.embed_tokens.weight').transpose() as tf.Tensor2D) : (this.p('lm_head.weight') as tf.Tensor2D);
  }

  /** Forward `tokens` [B, Tn]. Call inside tf.tidy (or dispose the results). */
  forward(tokens: number[][], opts: DecoderForwardOptions = {}): DecoderForwardResult {
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
    // gather is cheap without a gradient; under a tape, ops.ts's embed (gather has no gradient kernel on wasm).
    let x = recordingGradients() ? embed(table, ids) : (tf.gather(table, ids) as tf.Tensor2D);
    const { cos, sin } = rotaryTables(this.invFreq, opts.positions ?? [Array.from({ length: Tn }, (_, i) => past + i)]);
    const bias = attentionBias(B, Tn, past, opts.keyMask);
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
      const att = tf.softmax(attentionScores(qh, repeatKvHeads(kh, H)).add(bias)) as tf.Tensor4D; // [Tn, B, H, Tk]
      const y = attentionMix(att, repeatKvHeads(vh, H)).reshape([N, H * hd]) as tf.Tensor2D;
      x = x.add(this.linear(y, `${p}.self_attn.o_proj`));
      const h2 = this.rmsNorm(x, `${p}.post_attention_layernorm.weight`);
      const gate = this.linear(h2, `${p}.mlp.gate_proj`);
      const up = this.linear(h2, `${p}.mlp.up_proj`);
      x = x.add(this.linear(gate.mul(tf.sigmoid(gate)).mul(up) as tf.Tensor2D, `${p}.mlp.down_proj`));
    }
    let hf = this.rmsNorm(x, 'model.norm.weight');
    const d = c.hiddenSize;
    if (opts.lastOnly && Tn > 1) hf = hf.reshape([B, Tn, d]).slice([0, Tn - 1, 0], [B, 1, d]).reshape([B, d]);
    const logits = matMul2d(hf, opts.head ?? this.headWeights());
    return opts.returnCache ? { logits, cache: { keys, values, length: Tk } } : { logits };
  }

  dispose(): void {
    for (const v of this.params.values()) v.dispose();
    this.params.clear();
  }
}

/**
 * Grouped-query attention: key/value head j serves query heads j·r … j·r + r − 1 (r = H / kvHeads),
 * as transformers' repeat_kv lays them out. A reshape and tile, which have gradients on every backend.
 */
function repeatKvHeads(x: tf.Tensor4D, H: number): tf.Tensor4D {
  const [B, T, Hkv, hd] = x.shape;
  if (Hkv === H) return x;
  // Rank 4, not [B, T, Hkv, 1, hd]: tfjs's tile has no gradient above rank 4.
  return x.reshape([B * T, Hkv, 1, hd]).tile([1, 1, H / Hkv, 1]).reshape([B, T, H, hd]) as tf.Tensor4D;
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
