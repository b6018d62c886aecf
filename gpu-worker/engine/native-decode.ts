/**
 * A KV-cached decoding step of the GPT as one native call (native/src/decode.cc): embedding, every
 * layer with the new key and value written into the preallocated cache in place, the final norm
 * and the head, for every row at once, instead of ~55 tfjs kernels and their JavaScript. The
 * sampler's decoding steps take it through `GPT.forward` where it applies (see `decodeNatively`);
 * the result equals the tfjs path's within float rounding (native.test.ts).
 */
import * as tf from '@tensorflow/tfjs';
import { LN_EPS } from './fused';
import { defineJsKernel, runJsKernel, useFusedKernels } from './kernels';
import { nativeKernels } from './native';

/** What this needs of a GPT (model.ts, which calls it: typed here structurally, not imported). */
interface DecodableModel {
  config: { width: number; heads: number; vocabSize: number; mlpRatio: number; contextLength: number; layers: number; valueHead: boolean };
  adapters: { size: number };
  p(name: string): tf.Tensor;
  headWeights(): tf.Tensor2D;
}

interface Cache {
  keys: tf.Tensor4D[];
  values: tf.Tensor4D[];
  length: number;
}

/** The options of `GPT.forward` that a decoding step reads. */
interface StepOptions {
  positions?: number[][];
  keyMask?: number[][];
  cache?: Cache;
  returnCache?: boolean;
  cacheCapacity?: number;
  head?: tf.Tensor2D;
  training?: boolean;
}

type Dims = { B: number; d: number; H: number; V: number; hid: number; past: number; ctx: number; capacity: number; layers: number };

const PER_LAYER = ['ln1.g', 'ln1.b', 'attn.qkv.w', 'attn.qkv.b', 'attn.proj.w', 'attn.proj.b', 'ln2.g', 'ln2.b', 'mlp.fc.w', 'mlp.fc.b', 'mlp.proj.w', 'mlp.proj.b'];

/** Inputs: tokens, positions (int32 [B]), key mask [B, Tk], 5 + 12·layers weights, 2·layers caches. */
const NATIVE_DECODE = defineJsKernel({
  name: 'WhetstoneNativeDecodeStep',
  outputShapes: (_s, a) => {
    const { B, V } = a as unknown as Dims;
    return [[B, V]];
  },
  compute(inputs, [logits], _s, a) {
    const dims = a as unknown as Dims;
    const weightCount = 5 + 12 * dims.layers;
    nativeKernels()!.decodeStep(
      inputs[0] as Int32Array,
      inputs[1] as Int32Array,
      inputs[2] as Float32Array,
      inputs.slice(3, 3 + weightCount) as Float32Array[],
      // The caches are written in place (position `past`): the one input this kernel changes.
      inputs.slice(3 + weightCount) as Float32Array[],
      logits,
      [dims.B, dims.d, dims.H, dims.V, dims.hid, dims.past, dims.ctx, dims.capacity, dims.layers],
      LN_EPS,
    );
  },
});

/**
 * The forward of one new token per row over a cache with room for it, natively; null where this
 * does not apply (no native kernels, LoRA adapters or a value head, dropout, a cache without room)
 * and `GPT.forward` runs its tfjs path.
 */
export function decodeNatively(model: DecodableModel, tokens: number[][], opts: StepOptions): { logits: tf.Tensor2D; cache: Cache } | null {
  const c = model.config;
  const cache = opts.cache;
  // In place only where the caller allows it (cacheCapacity), as the tfjs path.
  if (!cache || !opts.returnCache || opts.cacheCapacity === undefined || opts.training || c.valueHead || model.adapters.size > 0) return null;
  if (!useFusedKernels() || nativeKernels() === null) return null;
  const B = tokens.length;
  const past = cache.length;
  const capacity = cache.keys[0].shape[0];
  if (tokens.some((row) => row.length !== 1) || past >= capacity || cache.keys[0].shape[1] !== B) return null;
  const Tk = past + 1;
  const dims: Dims = { B, d: c.width, H: c.heads, V: c.vocabSize, hid: c.mlpRatio * c.width, past, ctx: c.contextLength, capacity, layers: c.layers };
  const logits = tf.tidy(() => {
    const head = opts.head ?? model.headWeights();
    const weights: tf.Tensor[] = [model.p('wte'), model.p('wpe'), model.p('lnf.g'), model.p('lnf.b'), head];
    for (let l = 0; l < c.layers; l++) for (const name of PER_LAYER) weights.push(model.p(`h.${l}.${name}`));
    const caches = cache.keys.flatMap((k, l) => [k, cache.values[l]]);
    // Filled flat: nested arrays would be flattened by tfjs again, every step.
    const mask = new Float32Array(B * Tk).fill(1);
    if (opts.keyMask) opts.keyMask.forEach((row, b) => { for (let j = 0; j < Tk; j++) mask[b * Tk + j] = row[j]; });
    const inputs = [
      tf.tensor1d(Int32Array.from(tokens, (row) => row[0]), 'int32'),
      tf.tensor1d(Int32Array.from(tokens, (_, b) => opts.positions?.[b][0] ?? past), 'int32'),
      tf.tensor2d(mask, [B, Tk]),
      ...weights,
      ...caches,
    ];
    return runJsKernel(NATIVE_DECODE, inputs, dims as unknown as Record<string, unknown>)[0] as tf.Tensor2D;
  });
  return { logits, cache: { keys: cache.keys, values: cache.values, length: Tk } };
}
