/**
 * Causal self-attention over a fused qkv projection for the backends with JavaScript kernels
 * (wasm, cpu): one custom-gradient op for forwards without a KV cache (training, recompute
 * sampling), and `cachedSelfAttention` for forwards that read or return one.
 *
 * On wasm with SIMD, attention masked only by causality (training) runs as SIMD wasm kernels that
 * read qkv and write y and its gradient directly (`simdCausalSelfAttention`, wasm/causal-attention.wat).
 * Otherwise (`fusedSelfAttention`: the cpu backend, padded keys) the two batched products run as
 * depthwise convolutions (XNNPACK on wasm; see ops.ts), which want their operands in particular
 * layouts. Instead of tf.split (wasm's SplitV costs ~5 ms at [2048, 192]) and a chain of
 * transposes and a scale multiply per operand, one JavaScript pass writes q, k and v straight into
 * the layouts the convolutions read, and one pass writes the gradients back into qkv's layout. Layouts, with C = B·H channels (bh = b·H + h):
 *   qkv [B·T, 3d]: q, k, v side by side; head h of each at columns h·hd … (h+1)·hd
 *   "image"  q [T, hd, C]  · "filter" k [hd, C, T]  → scores [T, C, T] (query, channel, key)
 *   "image"  a [T, T, C]   · "filter" v [T, C, hd]  → y      [T, C, hd]
 */
import * as tf from '@tensorflow/tfjs';
import { defineJsKernel, recordingGradients, requireSimdModule, runJsKernel, saveForGradient, simdModule } from './kernels';
import { nativeKernels } from './native';
import { CAUSAL_ATTENTION_WASM } from './wasm/causal-attention.wasm';
import { DECODE_ATTENTION_WASM } from './wasm/decode-attention.wasm';

type Dims = { B: number; T: number; H: number; hd: number; scale: number };

const dimsOf = (a: Record<string, unknown>) => a as unknown as Dims;

/** qkv → scale·q [T, hd, C], k [hd, C, T], v [T, C, hd] (the forward's operand layouts). */
const SPLIT_FORWARD = defineJsKernel({
  name: 'WhetstoneQkvSplitForward',
  outputShapes: (_s, a) => {
    const { B, T, H, hd } = dimsOf(a);
    return [[1, T, hd, B * H], [1, hd, B * H, T], [1, T, B * H, hd]];
  },
  compute([qkv], [q, k, v], _s, a) {
    const { B, T, H, hd, scale } = dimsOf(a);
    const d = H * hd;
    const C = B * H;
    for (let b = 0; b < B; b++) {
      for (let t = 0; t < T; t++) {
        const row = (b * T + t) * 3 * d;
        for (let h = 0; h < H; h++) {
          const bh = b * H + h;
          const col = row + h * hd;
          for (let c = 0; c < hd; c++) {
            q[(t * hd + c) * C + bh] = scale * qkv[col + c];
            k[(c * C + bh) * T + t] = qkv[col + d + c];
            v[(t * C + bh) * hd + c] = qkv[col + 2 * d + c];
          }
        }
      }
    }
  },
});

/** dq, dk, dv [T, C, hd] → d qkv [B·T, 3d] (dq times the score scale). */
const MERGE_GRADIENTS = defineJsKernel({
  name: 'WhetstoneQkvMerge',
  outputShapes: (_s, a) => {
    const { B, T, H, hd } = dimsOf(a);
    return [[B * T, 3 * H * hd]];
  },
  compute([dq, dk, dv], [out], _s, a) {
    const { B, T, H, hd, scale } = dimsOf(a);
    const d = H * hd;
    const C = B * H;
    for (let b = 0; b < B; b++) {
      for (let t = 0; t < T; t++) {
        const row = (b * T + t) * 3 * d;
        for (let h = 0; h < H; h++) {
          const col = row + h * hd;
          const at = (t * C + b * H + h) * hd;
          for (let c = 0; c < hd; c++) {
            out[col + c] = scale * dq[at + c];
            out[col + d + c] = dk[at + c];
            out[col + 2 * d + c] = dv[at + c];
          }
        }
      }
    }
  },
});

/** Depthwise product: image [1, R, K, C] × filter [1, K, C, M] → [R, C, M]. */
function depthwise(image: tf.Tensor, filter: tf.Tensor): tf.Tensor3D {
  const [R, C, M] = [image.shape[1], image.shape[3], filter.shape[3]] as number[];
  return tf.depthwiseConv2d(image as tf.Tensor4D, filter as tf.Tensor4D, 1, 'valid').reshape([R, C, M]);
}

/**
 * softmax(scale·q kᵀ + bias) v per head, for qkv [B·T, 3d] → [B·T, d]. `bias` is the additive
 * mask in the score layout [T, B|1, 1, T] (a constant: it gets no gradient). Attention masked by
 * causality alone runs as `simdCausalSelfAttention` where that is available (it needs no bias).
 */
export function fusedSelfAttention(qkv: tf.Tensor2D, bias: tf.Tensor4D, B: number, T: number, H: number): tf.Tensor2D {
  const d = qkv.shape[1] / 3;
  const hd = d / H;
  const C = B * H;
  const dims = { B, T, H, hd, scale: 1 / Math.sqrt(hd) };
  const forward = (x: tf.Tensor2D) => {
    const [q, k, v] = runJsKernel(SPLIT_FORWARD, [x], dims);
    const scores = depthwise(q, k).reshape([T, B, H, T]);
    const att = tf.softmax(scores.add(bias)).reshape([T, C, T]);
    const y = depthwise(att.transpose([0, 2, 1]).reshape([1, T, T, C]), v); // [T, C, hd]
    return { value: y.reshape([T, B, H, hd]).transpose([1, 0, 2, 3]).reshape([B * T, d]) as tf.Tensor2D, saved: [q, k, v, att] };
  };
  // Nothing to save when no gradient is recorded (the caller's tidy disposes the intermediates).
  if (!recordingGradients()) return forward(qkv).value;
  const op = tf.customGrad(((x: tf.Tensor2D, save: tf.GradSaveFunc) => {
    const { value, saved } = forward(x);
    save(saved);
    return {
      value,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sq, sk, sv, sa] = saved;
        // The backward's products read q and k as [T, C, hd] filters and v as a [hd, C, T] filter.
        const qb = sq.reshape([T, hd, C]).transpose([0, 2, 1]).reshape([1, T, C, hd]);
        const kb = sk.reshape([hd, C, T]).transpose([2, 1, 0]).reshape([1, T, C, hd]);
        const vb = sv.reshape([T, C, hd]).transpose([2, 1, 0]).reshape([1, hd, C, T]);
        const dy4 = dy.reshape([B, T, H, hd]);
        const dyMix = dy4.transpose([1, 0, 2, 3]).reshape([1, T, C, hd]);
        const dyImage = dy4.transpose([1, 3, 0, 2]).reshape([1, T, hd, C]);
        const dAtt = depthwise(dyImage, vb); // [Tq, C, Tk]
        const dv = depthwise(sa.transpose([2, 0, 1]).reshape([1, T, T, C]), dyMix); // [Tk, C, hd]
        // Softmax backward: dS = a ⊙ (dA − Σ_key a ⊙ dA), [Tq, C, Tk].
        const ds = sa.mul(dAtt.sub(sa.mul(dAtt).sum(-1, true)));
        const dq = depthwise(ds.transpose([0, 2, 1]).reshape([1, T, T, C]), kb);
        const dk = depthwise(ds.transpose([2, 0, 1]).reshape([1, T, T, C]), qb);
        return [runJsKernel(MERGE_GRADIENTS, [dq, dk, dv], dims)[0]];
      },
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D) => tf.Tensor2D;
  return op(qkv);
}

interface CausalAttentionWasm {
  scores(qkv: number, S: number, B: number, T: number, H: number, hd: number, scale: number): void;
  mix(qkv: number, P: number, y: number, B: number, T: number, H: number, hd: number): void;
  backward(qkv: number, P: number, dy: number, dqkv: number, dpRow: number, B: number, T: number, H: number, hd: number, scale: number): void;
}

/**
 * True where `simdCausalSelfAttention` runs: the native kernels (native.ts), or wasm with SIMD and a
 * head size that is a multiple of 4.
 */
export function simdCausalAttentionAvailable(headSize: number): boolean {
  return nativeKernels() !== null || (headSize % 4 === 0 && simdModule(CAUSAL_ATTENTION_WASM) !== null);
}

/** Scores and probabilities are [B·H, T, Tp], rows padded to a multiple of 4 keys (masked). */
const paddedKeys = (T: number) => (T + 3) & ~3;

/** qkv → scale·q kᵀ for keys up to each query, the rest −1e9, [B·H, T, Tp]. */
const CAUSAL_SCORES = defineJsKernel({
  name: 'WhetstoneCausalScores',
  outputShapes: (_s, a) => {
    const { B, T, H } = dimsOf(a);
    return [[B * H, T, paddedKeys(T)]];
  },
  compute([qkv], [S], _s, a, heap) {
    const { B, T, H, hd, scale } = dimsOf(a);
    requireSimdModule<CausalAttentionWasm>(CAUSAL_ATTENTION_WASM, heap, 'WhetstoneCausalScores').scores(qkv.byteOffset, S.byteOffset, B, T, H, hd, scale);
  },
});

/** qkv, probabilities P [B·H, T, Tp] → y [B·T, d]. */
const CAUSAL_MIX = defineJsKernel({
  name: 'WhetstoneCausalMix',
  outputShapes: (_s, a) => {
    const { B, T, H, hd } = dimsOf(a);
    return [[B * T, H * hd]];
  },
  compute([qkv, P], [y], _s, a, heap) {
    const { B, T, H, hd } = dimsOf(a);
    requireSimdModule<CausalAttentionWasm>(CAUSAL_ATTENTION_WASM, heap, 'WhetstoneCausalMix').mix(qkv.byteOffset, P.byteOffset, y.byteOffset, B, T, H, hd);
  },
});

/** qkv, P, dy [B·T, d] → d qkv [B·T, 3d], and a one-row scratch the caller disposes. */
const CAUSAL_BACKWARD = defineJsKernel({
  name: 'WhetstoneCausalBackward',
  outputShapes: (_s, a) => {
    const { B, T, H, hd } = dimsOf(a);
    return [[B * T, 3 * H * hd], [paddedKeys(T)]];
  },
  compute([qkv, P, dy], [dqkv, scratch], _s, a, heap) {
    const { B, T, H, hd, scale } = dimsOf(a);
    requireSimdModule<CausalAttentionWasm>(CAUSAL_ATTENTION_WASM, heap, 'WhetstoneCausalBackward').backward(qkv.byteOffset, P.byteOffset, dy.byteOffset, dqkv.byteOffset, scratch.byteOffset, B, T, H, hd, scale);
  },
});

/** Native (native/src/attention.cc): qkv → P [B·H, T, Tp] and y [B·T, d] in one kernel on the pool's threads. */
const NATIVE_CAUSAL_FORWARD = defineJsKernel({
  name: 'WhetstoneNativeCausalForward',
  outputShapes: (_s, a) => {
    const { B, T, H, hd } = dimsOf(a);
    return [[B * H, T, paddedKeys(T)], [B * T, H * hd]];
  },
  compute([qkv], [P, y], _s, a) {
    const { B, T, H, hd, scale } = dimsOf(a);
    nativeKernels()!.attentionForward(qkv as Float32Array, P, y, B, T, H, hd, paddedKeys(T), scale);
  },
});

/** Native: qkv, P, dy → d qkv [B·T, 3d]. */
const NATIVE_CAUSAL_BACKWARD = defineJsKernel({
  name: 'WhetstoneNativeCausalBackward',
  outputShapes: (_s, a) => {
    const { B, T, H, hd } = dimsOf(a);
    return [[B * T, 3 * H * hd]];
  },
  compute([qkv, P, dy], [dqkv], _s, a) {
    const { B, T, H, hd, scale } = dimsOf(a);
    nativeKernels()!.attentionBackward(qkv as Float32Array, P as Float32Array, dy as Float32Array, dqkv, B, T, H, hd, paddedKeys(T), scale);
  },
});

/**
 * Attention masked only by causality (no padded keys: training), for qkv [B·T, 3d] → [B·T, d]. With
 * the native kernels, one kernel forward (scores, softmax and mix per channel, on threads) and one
 * backward; on wasm's SIMD modules, three kernels forward (scores, wasm's softmax, mix) and one backward, all reading qkv and
 * writing y and d qkv in the projections' layouts: no split, merge, transposes or bias tensor, and
 * only the keys each query sees (the depthwise products compute all T×T and run ~11 GFLOP/s).
 * Only where `simdCausalAttentionAvailable`.
 */
export function simdCausalSelfAttention(qkv: tf.Tensor2D, B: number, T: number, H: number): tf.Tensor2D {
  const hd = qkv.shape[1] / 3 / H;
  const dims = { B, T, H, hd, scale: 1 / Math.sqrt(hd) };
  const native = nativeKernels() !== null;
  const forward = (x: tf.Tensor2D) => {
    if (native) {
      const [P, y] = runJsKernel(NATIVE_CAUSAL_FORWARD, [x], dims);
      return { y: y as tf.Tensor2D, P };
    }
    const P = tf.softmax(runJsKernel(CAUSAL_SCORES, [x], dims)[0]);
    return { y: runJsKernel(CAUSAL_MIX, [x, P], dims)[0] as tf.Tensor2D, P };
  };
  if (!recordingGradients()) return forward(qkv).y;
  const op = tf.customGrad(((x: tf.Tensor2D, save: tf.GradSaveFunc) => {
    const { y, P } = forward(x);
    const saved = saveForGradient(save, [x, P]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, clones: tf.Tensor[]) => {
        const [dqkv, scratch] = runJsKernel(native ? NATIVE_CAUSAL_BACKWARD : CAUSAL_BACKWARD, [...saved(clones), dy], dims);
        scratch?.dispose();
        return [dqkv];
      },
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D) => tf.Tensor2D;
  return op(qkv);
}

type RotaryDims = { B: number; T: number; H: number; Hkv: number; hd: number; R: number; scale: number };

const rotaryDimsOf = (a: Record<string, unknown>) => a as unknown as RotaryDims;

/** Native (native/src/rotary_attention.cc): q, k, v, cos, sin → P [B·H, T, Tp] and y [B·T, H·hd]. */
const NATIVE_ROTARY_FORWARD = defineJsKernel({
  name: 'WhetstoneNativeRotaryForward',
  outputShapes: (_s, a) => {
    const { B, T, H, hd } = rotaryDimsOf(a);
    return [[B * H, T, paddedKeys(T)], [B * T, H * hd]];
  },
  compute([q, k, v, cos, sin], [P, y], _s, a) {
    const { B, T, H, Hkv, hd, R, scale } = rotaryDimsOf(a);
    nativeKernels()!.rotaryAttentionForward(q as Float32Array, k as Float32Array, v as Float32Array, cos as Float32Array, sin as Float32Array, P, y, B, T, H, Hkv, hd, paddedKeys(T), R, scale);
  },
});

/** Native: q, k, v, cos, sin, P, dy → dq, dk, dv (before the rotation). */
const NATIVE_ROTARY_BACKWARD = defineJsKernel({
  name: 'WhetstoneNativeRotaryBackward',
  outputShapes: (_s, a) => {
    const { B, T, H, Hkv, hd } = rotaryDimsOf(a);
    return [[B * T, H * hd], [B * T, Hkv * hd], [B * T, Hkv * hd]];
  },
  compute([q, k, v, cos, sin, P, dy], [dq, dk, dv], _s, a) {
    const { B, T, H, Hkv, hd, R, scale } = rotaryDimsOf(a);
    const f = (x: ArrayLike<number>) => x as Float32Array;
    nativeKernels()!.rotaryAttentionBackward(f(q), f(k), f(v), f(cos), f(sin), f(P), f(dy), dq, dk, dv, B, T, H, Hkv, hd, paddedKeys(T), R, scale);
  },
});

/**
 * Causal grouped-query attention with rotary positions, as the pretrained decoders compute it
 * (pretrained/decoder.ts): q [B·T, H·hd], k and v [B·T, Hkv·hd] straight from their projections
 * (unscaled, unrotated), rotation tables cos and sin [R, T, 1, hd/2] (R = 1 or B) → y [B·T, H·hd].
 * One native kernel forward and one backward, which rotate q and k themselves and read key/value
 * head h / (H / Hkv) for query head h: in place of, per layer, the rotations' slices, products and
 * concatenations, the repeated keys and values, the depthwise products with their transposes, the
 * bias and the softmax, and all of their gradients. Only with the native kernels
 * (`nativeKernels()`), for sequences with no KV cache and no padded keys (training, recompute).
 */
export function nativeRotaryAttention(q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D, cos: tf.Tensor4D, sin: tf.Tensor4D, B: number, T: number, H: number): tf.Tensor2D {
  const hd = q.shape[1] / H;
  const dims: RotaryDims = { B, T, H, Hkv: k.shape[1] / hd, hd, R: cos.shape[0], scale: 1 / Math.sqrt(hd) };
  if (!recordingGradients()) {
    const [P, y] = runJsKernel(NATIVE_ROTARY_FORWARD, [q, k, v, cos, sin], dims);
    P.dispose();
    return y as tf.Tensor2D;
  }
  // The tables are constants (no gradient), so not inputs; but saved, as the tape's forward runs
  // in a tidy that disposes whatever is not saved before the backward.
  const op = tf.customGrad(((qi: tf.Tensor2D, ki: tf.Tensor2D, vi: tf.Tensor2D, save: tf.GradSaveFunc) => {
    const [P, y] = runJsKernel(NATIVE_ROTARY_FORWARD, [qi, ki, vi, cos, sin], dims);
    const saved = saveForGradient(save, [qi, ki, vi, P, cos, sin]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, s: tf.Tensor[]) => {
        const [sq, sk, sv, sP, sCos, sSin] = saved(s);
        return runJsKernel(NATIVE_ROTARY_BACKWARD, [sq, sk, sv, sCos, sSin, sP, dy], dims);
      },
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D) => tf.Tensor2D;
  return op(q, k, v);
}

type DecodeDims = { B: number; H: number; hd: number; past: number; scale: number; inPlace: boolean };

interface DecodeWasm {
  scores(qkv: number, K: number, bias: number, S: number, B: number, H: number, hd: number, Tk: number, biasStride: number, scale: number): void;
  mix(S: number, V: number, y: number, B: number, H: number, hd: number, Tk: number): void;
}

/**
 * First half of one decoding step of attention, for every row and head: appends the new key and
 * value (from qkv [B, 3d]) to the cache — in place when `inPlace` (the caller's preallocated
 * cache has room; the one kernel here that writes into an input, see `cachedSelfAttention`), else
 * into fresh [past + 1, B, H, hd] outputs — and returns the scores scale·q kᵀ + bias as
 * [B·H, Tk]. With the softmax (wasm's own kernel: JavaScript's exp costs more than its dispatch)
 * and `DECODE_MIX` this replaces per layer a split, two concats, two depthwise products (XNNPACK
 * repacks the whole value cache as a filter every step), a bias add and four transposes. On wasm
 * the products are SIMD loops over the backend's heap (wasm/decode-attention.wat); JavaScript
 * loops were no faster than the depthwise products (~2.5 ns per multiply-add).
 */
const DECODE_SCORES = defineJsKernel({
  name: 'WhetstoneDecodeScores',
  outputShapes: (_s, a) => {
    const { B, H, hd, past, inPlace } = a as unknown as DecodeDims;
    const out = [[B * H, past + 1]];
    if (!inPlace) out.push([past + 1, B, H, hd], [past + 1, B, H, hd]);
    return out;
  },
  compute([qkv, kIn, vIn, bias], [S, kOut, vOut], shapes, a, heap) {
    const { B, H, hd, past, scale, inPlace } = a as unknown as DecodeDims;
    const d = H * hd;
    const row = B * d; // one cached position: [B, H, hd]
    const Tk = past + 1;
    const K = (inPlace ? kIn : kOut) as Float32Array;
    const V = (inPlace ? vIn : vOut) as Float32Array;
    if (!inPlace) {
      K.set(kIn.subarray(0, past * row));
      V.set(vIn.subarray(0, past * row));
    }
    const at = past * row;
    for (let b = 0; b < B; b++) {
      const src = b * 3 * d;
      K.set(qkv.subarray(src + d, src + 2 * d), at + b * d);
      V.set(qkv.subarray(src + 2 * d, src + 3 * d), at + b * d);
    }
    const biasRows = shapes[3][1]; // bias [1, B|1, 1, Tk]
    const simd = hd % 4 === 0 ? simdModule<DecodeWasm>(DECODE_ATTENTION_WASM, heap) : null;
    if (simd) {
      simd.scores(qkv.byteOffset, K.byteOffset, bias.byteOffset, S.byteOffset, B, H, hd, Tk, biasRows === 1 ? 0 : Tk, scale);
      return;
    }
    for (let b = 0; b < B; b++) {
      const biasAt = (biasRows === 1 ? 0 : b) * Tk;
      for (let h = 0; h < H; h++) {
        const q = b * 3 * d + h * hd;
        const o = b * d + h * hd;
        for (let t = 0; t < Tk; t++) {
          let dot = 0;
          for (let c = 0; c < hd; c++) dot += qkv[q + c] * K[t * row + o + c];
          S[(b * H + h) * Tk + t] = dot * scale + bias[biasAt + t];
        }
      }
    }
  },
});

/** Second half: probabilities P [B·H, Tk], values [≥Tk, B, H, hd] → y [B, d] = Σ_t P[·, t] v[t]. */
const DECODE_MIX = defineJsKernel({
  name: 'WhetstoneDecodeMix',
  outputShapes: ([, v]) => [[v[1], v[2] * v[3]]],
  compute([P, V], [y], [[C, Tk], [, B, H, hd]], _a, heap) {
    const simd = hd % 4 === 0 ? simdModule<DecodeWasm>(DECODE_ATTENTION_WASM, heap) : null;
    if (simd) {
      simd.mix(P.byteOffset, V.byteOffset, y.byteOffset, B, H, hd, Tk);
      return;
    }
    const row = C * hd;
    const acc = new Float64Array(hd);
    for (let ch = 0; ch < C; ch++) {
      acc.fill(0);
      for (let t = 0; t < Tk; t++) {
        const w = P[ch * Tk + t];
        const v = t * row + ch * hd;
        for (let c = 0; c < hd; c++) acc[c] += w * V[v + c];
      }
      for (let c = 0; c < hd; c++) y[ch * hd + c] = acc[c];
    }
  },
});

/**
 * Attention that reads and extends a KV cache (sampling), on the backends with JS kernels. The
 * cache holds keys and values time-major, [T, B, H, hd] (one position is the rows' k or v side by
 * side, as qkv lays them out), so a decoding step appends one contiguous block.
 *
 * `capacity` (prefill) allocates the returned cache for that many positions, of which the first
 * `length` are valid; a later decoding step given such a cache with `inPlace` writes its key and
 * value into it and returns the same tensors, instead of copying the whole cache every step.
 * Prefill (several new tokens) runs the two products as depthwise convolutions (see ops.ts).
 */
export function cachedSelfAttention(
  qkv: tf.Tensor2D,
  bias: tf.Tensor4D,
  B: number,
  Tn: number,
  H: number,
  cache?: { keys: tf.Tensor4D; values: tf.Tensor4D; length: number },
  opts: { capacity?: number; inPlace?: boolean } = {},
): { y: tf.Tensor2D; keys: tf.Tensor4D; values: tf.Tensor4D } {
  const d = qkv.shape[1] / 3;
  const hd = d / H;
  const C = B * H;
  const past = cache?.length ?? 0;
  if (Tn === 1 && cache) {
    const inPlace = opts.inPlace === true && cache.keys.shape[0] > past;
    const attrs = { B, H, hd, past, scale: 1 / Math.sqrt(hd), inPlace };
    const [scores, newKeys, newValues] = runJsKernel(DECODE_SCORES, [qkv, cache.keys, cache.values, bias], attrs);
    const keys = inPlace ? cache.keys : (newKeys as tf.Tensor4D);
    const values = inPlace ? cache.values : (newValues as tf.Tensor4D);
    const y = runJsKernel(DECODE_MIX, [tf.softmax(scores), values])[0] as tf.Tensor2D;
    return { y, keys, values };
  }
  const [q, k, v] = tf.split(qkv, 3, 1);
  let keys = k.reshape([B, Tn, H, hd]).transpose([1, 0, 2, 3]) as tf.Tensor4D;
  let values = v.reshape([B, Tn, H, hd]).transpose([1, 0, 2, 3]) as tf.Tensor4D;
  if (cache) {
    const valid = (t: tf.Tensor4D) => (t.shape[0] > past ? t.slice([0, 0, 0, 0], [past, B, H, hd]) : t);
    keys = tf.concat([valid(cache.keys), keys], 0);
    values = tf.concat([valid(cache.values), values], 0);
  }
  const Tk = past + Tn;
  const queries = q.mul(1 / Math.sqrt(hd)).reshape([B, Tn, H, hd]).transpose([3, 0, 2, 1]).reshape([1, hd, C, Tn]);
  const keyImage = keys.transpose([0, 3, 1, 2]).reshape([1, Tk, hd, C]);
  const scoresByKey = depthwise(keyImage, queries); // [Tk, C, Tn]
  const att = tf.softmax(scoresByKey.transpose([2, 1, 0]).reshape([Tn, B, H, Tk]).add(bias)).reshape([Tn, C, Tk]);
  const y = depthwise(att.transpose([0, 2, 1]).reshape([1, Tn, Tk, C]), values.reshape([1, Tk, C, hd])); // [Tn, C, hd]
  if (opts.capacity !== undefined && opts.capacity > Tk) {
    // Room for the decoding steps to come, written in place (a fresh tensor: nothing else shares it).
    const room: [number, number][] = [[0, opts.capacity - Tk], [0, 0], [0, 0], [0, 0]];
    keys = keys.pad(room);
    values = values.pad(room);
  }
  return { y: y.reshape([Tn, B, H, hd]).transpose([1, 0, 2, 3]).reshape([B * Tn, d]), keys, values };
}
