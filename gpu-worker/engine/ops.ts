/**
 * The few tensor operations whose form decides speed on wasm (see OFFLINE.md): only 2-D,
 * non-transposed matmuls reach XNNPACK, and `gather` has no gradient kernel there.
 */
import * as tf from '@tensorflow/tfjs';
import { useFastMatmulPath } from './backend';
import {
  LN_EPS,
  fusedLayerNorm,
  fusedTargetLogProbs,
  layerNormForward,
  nativeGelu,
  nativeGeluAvailable,
  nativeGeluBackward,
  nativeDecoderOpsAvailable,
  nativeLinearBackward,
  nativeLoraLinear,
  simdGeluArgument,
  simdGeluAvailable,
  simdGeluBackward,
} from './fused';
import { recordingGradients, saveForGradient, useFusedKernels } from './kernels';
import { rowSums, transpose2d } from './matrix-kernels';
import { nativeKernels, nativeProductsActive } from './native';

/**
 * a·bᵀ and aᵀ·b for the backward passes. The native products (native.ts) read a transposed operand
 * as cheaply as a plain one (packing reads any layout); wasm's own kernel reaches XNNPACK only
 * without transposes, so there an explicit transposed copy comes first.
 */
function matMulBT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  return nativeProductsActive() ? tf.matMul(a, b, false, true) : tf.matMul(a, transpose2d(b));
}

function matMulAT(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  return nativeProductsActive() ? tf.matMul(a, b, true, false) : tf.matMul(transpose2d(a), b);
}

/**
 * a[m,k] × b[k,n] whose gradient also uses only 2-D non-transposed matmuls: the transposes are
 * explicit copies (cheap, memory-bound) instead of the transposed-matmul flags tfjs's own gradient
 * uses (which fall to a scalar loop on wasm).
 */
const matMul2dFast = tf.customGrad(((a: tf.Tensor2D, b: tf.Tensor2D, save: tf.GradSaveFunc) => {
  const saved = saveForGradient(save, [a, b]);
  return {
    value: tf.matMul(a, b),
    gradFunc: (dy: tf.Tensor, clones: tf.Tensor[]) => {
      const [sa, sb] = saved(clones) as tf.Tensor2D[];
      return [matMulBT(dy as tf.Tensor2D, sb), weightGrad(sa, dy as tf.Tensor2D)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor2D;

/**
 * xᵀ·dy for x [n, in], dy [n, out]. XNNPACK packs a matmul's right operand before multiplying,
 * and here it is new every step (no cached packing), so pack the narrower one: (dyᵀ·x)ᵀ when
 * out > in (measured at n = 1984, in 64, out 256: 3.0 instead of 3.7 ms).
 */
function weightGrad(x: tf.Tensor2D, dy: tf.Tensor2D): tf.Tensor2D {
  if (dy.shape[1] > x.shape[1] && !nativeProductsActive()) return transpose2d(tf.matMul(transpose2d(dy), x)) as tf.Tensor2D;
  return matMulAT(x, dy);
}

/**
 * Sum over the rows of [n, m] → [m] as a ones-vector matmul: wasm's Sum over axis 0 transposes
 * first and costs ~1.5 ms at [2048, 256], the matmul ~0.05 ms. Bias and norm gradients use it.
 */
function columnSum(m: tf.Tensor2D): tf.Tensor1D {
  return tf.matMul(tf.ones([1, m.shape[0]]) as tf.Tensor2D, m).reshape([m.shape[1]]);
}

/** x[n, in] W[in, out] + b[out] with the fast-path gradient (bias gradient by columnSum). */
const linearFast = tf.customGrad(((x: tf.Tensor2D, w: tf.Tensor2D, b: tf.Tensor1D, save: tf.GradSaveFunc) => {
  const saved = saveForGradient(save, [x, w]);
  return {
    // One kernel for the product and the bias (XNNPACK adds it in its output pass).
    value: tf.fused.matMul({ a: x, b: w, bias: b }),
    gradFunc: (dy: tf.Tensor, clones: tf.Tensor[]) => {
      const [sx, sw] = saved(clones) as tf.Tensor2D[];
      const g = dy as tf.Tensor2D;
      if (nativeKernels()) return nativeLinearBackward(g, sx, sw);
      const dx = matMulBT(g, sw);
      if (g.shape[1] <= sx.shape[1] || nativeProductsActive()) return [dx, weightGrad(sx, g), columnSum(g)];
      // Wide outputs (qkv, mlp.fc): both weight and bias gradients from one transposed dy, the bias
      // as the row sums of gᵀ (columnSum would pack all of g as a matmul operand).
      const gT = transpose2d(g);
      return [dx, transpose2d(tf.matMul(gT, sx)), rowSums(gT)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D, w: tf.Tensor2D, b: tf.Tensor1D) => tf.Tensor2D;

/** An affine layer on the path that is fast for the current backend. */
export function linear2d(x: tf.Tensor2D, w: tf.Tensor2D, b: tf.Tensor1D): tf.Tensor2D {
  if (!useFastMatmulPath()) return tf.matMul(x, w).add(b) as tf.Tensor2D;
  return recordingGradients() ? linearFast(x, w, b) : (tf.fused.matMul({ a: x, b: w, bias: b }) as tf.Tensor2D);
}

/** rows [B·T, d] + table [T, d] broadcast over B; the table's gradient is a column sum. */
const addPerPosition = tf.customGrad(((rows: tf.Tensor2D, table: tf.Tensor2D, save: tf.GradSaveFunc) => {
  const [T, d] = table.shape;
  const B = rows.shape[0] / T;
  save([]);
  return {
    value: rows.reshape([B, T, d]).add(table).reshape([B * T, d]),
    // The rows pass dy through; a clone, because the tape disposes dy after this call.
    gradFunc: (dy: tf.Tensor) => [dy.clone(), columnSum(dy.reshape([B, T * d]) as tf.Tensor2D).reshape([T, d])],
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (rows: tf.Tensor2D, table: tf.Tensor2D) => tf.Tensor2D;

/**
 * x + r for two tensors of one shape. tfjs's Add saves both inputs for its gradient, to read their
 * shapes (a copy of each on wasm: two [B·T, d] copies per residual connection); here nothing is saved
 * and the gradient passes dy to both (as views of it: Reshape shares the data).
 */
const addSameShape = tf.customGrad(((x: tf.Tensor, r: tf.Tensor, save: tf.GradSaveFunc) => {
  save([]);
  return { value: tf.add(x, r), gradFunc: (dy: tf.Tensor) => [dy.reshape(x.shape), dy.reshape(r.shape)] };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as <T extends tf.Tensor>(x: T, r: T) => T;

/** A residual connection, x + r (same shapes). */
export function residualAdd<T extends tf.Tensor>(x: T, r: T): T {
  return recordingGradients() && useFusedKernels() ? addSameShape(x, r) : (x.add(r) as T);
}

/**
 * x · tableᵀ for a head tied to the token table [V, d], the table read transposed by the native
 * products (as it lies) in the product and both gradients: d x = dy · table, d table = dyᵀ · x.
 * Spares the transposed copy of the table and its gradient's transpose back (two kernels a step).
 */
const tiedHeadProduct = tf.customGrad(((x: tf.Tensor2D, table: tf.Tensor2D, save: tf.GradSaveFunc) => {
  const saved = saveForGradient(save, [x, table]);
  return {
    value: tf.matMul(x, table, false, true),
    gradFunc: (dy: tf.Tensor, clones: tf.Tensor[]) => {
      const [sx, st] = saved(clones) as tf.Tensor2D[];
      return [tf.matMul(dy as tf.Tensor2D, st), tf.matMul(dy as tf.Tensor2D, sx, true, false)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D, table: tf.Tensor2D) => tf.Tensor2D;

/** Logits x · tableᵀ of a head tied to the token table [V, d]. */
export function tiedHeadLogits(x: tf.Tensor2D, table: tf.Tensor2D): tf.Tensor2D {
  if (nativeProductsActive()) return recordingGradients() ? tiedHeadProduct(x, table) : tf.matMul(x, table, false, true);
  return matMul2d(x, table.transpose() as tf.Tensor2D);
}

/** Add position embeddings [T, d] to every sequence of rows [B·T, d]. */
export function addPositions(rows: tf.Tensor2D, table: tf.Tensor2D): tf.Tensor2D {
  if (useFastMatmulPath()) return addPerPosition(rows, table);
  const [T, d] = table.shape;
  return rows.reshape([-1, T, d]).add(table).reshape([-1, d]) as tf.Tensor2D;
}

/** 2-D matmul on the path that is fast for the current backend. */
export function matMul2d(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  return useFastMatmulPath() && recordingGradients() ? matMul2dFast(a, b) : tf.matMul(a, b);
}

/**
 * x[m,k] × w[k,n] (+ b[n]) for weights that do not train (a frozen base under LoRA): the gradient
 * goes to `x` only, dy·wᵀ. The fast path's matMul2dFast and linearFast compute every gradient (a
 * custom gradient returns them all) and save both operands, which tfjs copies; here nothing is
 * saved and no weight or bias gradient is made, which per projection spares a product as large as
 * its forward and copies of the weight and of its input. `wT` gives wᵀ for the backward (default:
 * w read transposed); w and what `wT` reads must outlive the backward, as variables do. The value is
 * the same kernel's as linear2d's and matMul2d's, to the bit.
 */
export function frozenLinear2d(x: tf.Tensor2D, w: tf.Tensor2D, b?: tf.Tensor1D, wT?: () => tf.Tensor2D): tf.Tensor2D {
  if (!(useFastMatmulPath() && recordingGradients())) return b ? linear2d(x, w, b) : matMul2d(x, w);
  const product = tf.customGrad(((input: tf.Tensor2D, save: tf.GradSaveFunc) => {
    save([]);
    return {
      value: b ? tf.fused.matMul({ a: input, b: w, bias: b }) : tf.matMul(input, w),
      gradFunc: (dy: tf.Tensor) => [wT ? tf.matMul(dy as tf.Tensor2D, wT()) : matMulBT(dy as tf.Tensor2D, w)],
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (input: tf.Tensor2D) => tf.Tensor2D;
  return product(x);
}

/**
 * x W (+ b) + s·(x A) B: a frozen projection W (b) with its LoRA adapter A [in, r], B [r, out] of
 * scale s, as one custom-gradient op. The forward is the same products as the unfused form
 * (frozenLinear2d, then matMul2d twice and a scale), to the bit. Fused, the tape saves (copies: tfjs
 * clones what a gradient saves) x and x A once, where the unfused ops saved x, A, x A, B and the
 * scaled product [n, out] (the scale's multiply saves its inputs), and the backward is five
 * products: dx = dy Wᵀ + (s dy Bᵀ) Aᵀ, dA = xᵀ (s dy Bᵀ), dB = (x A)ᵀ (s dy); no weight gradient.
 * Where the native kernels run, fused.ts's nativeLoraLinear does all of it in one call each way
 * (a SmolLM2-135M LoRA step: 894 → 678 ms with the saves below made copy-free, one run, profile-pretrained.ts).
 */
export function loraLinear2d(x: tf.Tensor2D, w: tf.Tensor2D, b: tf.Tensor1D | undefined, a: tf.Tensor2D, bm: tf.Tensor2D, scale: number): tf.Tensor2D {
  // One native call each way where the native kernels run (its rounding differs from the products'
  // below: s·(x A) times B, not (x A) B times s).
  if (useFusedKernels() && nativeDecoderOpsAvailable()) return nativeLoraLinear(x, w, b, a, bm, scale);
  if (!(useFastMatmulPath() && recordingGradients())) return frozenLinear2d(x, w, b).add(matMul2d(matMul2d(x, a), bm).mul(scale));
  const op = tf.customGrad(((input: tf.Tensor2D, A: tf.Tensor2D, Bm: tf.Tensor2D, save: tf.GradSaveFunc) => {
    const xa = tf.matMul(input, A);
    save([input, xa, A, Bm]);
    const base = b ? tf.fused.matMul({ a: input, b: w, bias: b }) : tf.matMul(input, w);
    return {
      value: base.add(tf.matMul(xa, Bm).mul(scale)),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [sx, sxa, sA, sB] = saved as tf.Tensor2D[];
        const g = dy.mul(scale) as tf.Tensor2D;
        const gB = matMulBT(g, sB); // s dy Bᵀ [n, r]
        return [matMulBT(dy as tf.Tensor2D, w).add(matMulBT(gB, sA)), matMulAT(sx, gB), matMulAT(sxa, g)];
      },
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D, a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor2D;
  return op(x, a, bm);
}

/**
 * Rows of a frozen table (a pretrained model's token embeddings under LoRA) by integer ids. Taped,
 * tf.gather saves its inputs for a gradient, and tfjs copies what it saves: the whole table (113 MB
 * for SmolLM2-135M) every training step. Here nothing is saved and the ids' gradient is zero (ids
 * have none, as gather's own gradient says); the table, read by the closure, gets no gradient and
 * must outlive the backward, as a variable does.
 */
export function frozenEmbed(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  if (!recordingGradients()) return tf.gather(table, ids) as tf.Tensor2D;
  const op = tf.customGrad(((i: tf.Tensor1D, save: tf.GradSaveFunc) => {
    save([]);
    return { value: tf.gather(table, i), gradFunc: () => [tf.zeros(ids.shape, 'int32')] };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (i: tf.Tensor1D) => tf.Tensor2D;
  return op(ids);
}

/**
 * x[m,k] × wTᵀ for a frozen weight held transposed, wT [n, k] (the tied head: the token table
 * [V, d]); the gradient goes to `x` only, dy·wT. With the native products the transposed operand is
 * read as it lies (packing reads any layout, to the same packed panels, so the same bits), which
 * spares materialising wTᵀ: for SmolLM2-135M's table a 113 MB transpose every training step
 * (0.39 of a 2.9 s step under load). Elsewhere wTᵀ is made explicitly, as XNNPACK wants.
 */
export function frozenLinearT2d(x: tf.Tensor2D, wT: tf.Tensor2D): tf.Tensor2D {
  if (!nativeProductsActive()) return frozenLinear2d(x, wT.transpose() as tf.Tensor2D, undefined, () => wT);
  if (!recordingGradients()) return tf.matMul(x, wT, false, true);
  const product = tf.customGrad(((input: tf.Tensor2D, save: tf.GradSaveFunc) => {
    save([]);
    return { value: tf.matMul(input, wT, false, true), gradFunc: (dy: tf.Tensor) => [tf.matMul(dy as tf.Tensor2D, wT)] };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (input: tf.Tensor2D) => tf.Tensor2D;
  return product(x);
}

/*
 * Attention's two batched products, on [B, T, H, hd] heads as the qkv projection lays them out:
 *   scores[i, b, h, j] = Σ_c q[b, i, h, c] · k[b, j, h, c]     → [Tq, B, H, Tk]
 *   mix[b, i, h, c]    = Σ_j a[i, b, h, j] · v[b, j, h, c]     → [B, Tq, H, hd]
 * On the fast path each is one depthwise convolution: wasm's BatchMatMul falls to a scalar loop
 * (~2 GFLOP/s) for anything but one 2-D product, while DepthwiseConv2dNative runs through XNNPACK.
 * Every (b, h) pair is a channel; the "image" holds one operand, the per-channel filter the other.
 * The [Tq, B, H, Tk] score layout needs no transpose on the way out, and softmax runs over its last
 * axis. The gradients of each product are the other product again (the wasm backend has no
 * depthwise backprop kernels):
 *   d q = mix(dS, k),  d k = mix(dSᵀ, q),  d a = scores(dY, v),  d v = mix(aᵀ, dY),  ᵀ = [3,1,2,0].
 */
function scoresConv(q: tf.Tensor4D, k: tf.Tensor4D): tf.Tensor4D {
  const [B, Tq, H, hd] = q.shape;
  const Tk = k.shape[1];
  const image = q.transpose([1, 3, 0, 2]).reshape([1, Tq, hd, B * H]) as tf.Tensor4D;
  const filter = k.transpose([3, 0, 2, 1]).reshape([1, hd, B * H, Tk]) as tf.Tensor4D;
  return tf.depthwiseConv2d(image, filter, 1, 'valid').reshape([Tq, B, H, Tk]);
}

function mixConv(a: tf.Tensor4D, v: tf.Tensor4D): tf.Tensor4D {
  const [Tq, B, H, Tk] = a.shape;
  const hd = v.shape[3];
  const image = a.transpose([0, 3, 1, 2]).reshape([1, Tq, Tk, B * H]) as tf.Tensor4D;
  const filter = v.transpose([1, 0, 2, 3]).reshape([1, Tk, B * H, hd]) as tf.Tensor4D;
  return tf.depthwiseConv2d(image, filter, 1, 'valid').reshape([Tq, B, H, hd]).transpose([1, 0, 2, 3]);
}

const swapQueryKey = (t: tf.Tensor) => t.transpose([3, 1, 2, 0]) as tf.Tensor4D;

const scoresFast = tf.customGrad(((q: tf.Tensor4D, k: tf.Tensor4D, save: tf.GradSaveFunc) => {
  save([q, k]);
  return {
    value: scoresConv(q, k),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sq, sk] = saved as tf.Tensor4D[];
      return [mixConv(dy as tf.Tensor4D, sk), mixConv(swapQueryKey(dy), sq)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (q: tf.Tensor4D, k: tf.Tensor4D) => tf.Tensor4D;

const mixFast = tf.customGrad(((a: tf.Tensor4D, v: tf.Tensor4D, save: tf.GradSaveFunc) => {
  save([a, v]);
  return {
    value: mixConv(a, v),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sa, sv] = saved as tf.Tensor4D[];
      return [scoresConv(dy as tf.Tensor4D, sv), mixConv(swapQueryKey(sa), dy as tf.Tensor4D)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (a: tf.Tensor4D, v: tf.Tensor4D) => tf.Tensor4D;

/** Attention scores [Tq, B, H, Tk] of queries [B, Tq, H, hd] against keys [B, Tk, H, hd]. */
export function attentionScores(q: tf.Tensor4D, k: tf.Tensor4D): tf.Tensor4D {
  if (useFastMatmulPath()) return scoresFast(q, k);
  const s = tf.matMul(q.transpose([0, 2, 1, 3]), k.transpose([0, 2, 1, 3]), false, true); // [B, H, Tq, Tk]
  return s.transpose([2, 0, 1, 3]);
}

/** Attention output [B, Tq, H, hd]: weights [Tq, B, H, Tk] applied to values [B, Tk, H, hd]. */
export function attentionMix(a: tf.Tensor4D, v: tf.Tensor4D): tf.Tensor4D {
  if (useFastMatmulPath()) return mixFast(a, v);
  const y = tf.matMul(a.transpose([1, 2, 0, 3]), v.transpose([0, 2, 1, 3])); // [B, H, Tq, hd]
  return y.transpose([0, 2, 1, 3]);
}

/** Rows of `table` selected by integer ids: a one-hot matmul on the fast path, `gather` otherwise. */
export function embed(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  // gather's gradient (UnsortedSegmentSum) has no wasm kernel, whichever matmul path is chosen.
  if (useFastMatmulPath() || tf.getBackend() === 'wasm') {
    return matMul2d(tf.oneHot(ids, table.shape[0]).toFloat() as tf.Tensor2D, table);
  }
  return tf.gather(table, ids) as tf.Tensor2D;
}

/**
 * Layer norm over the last axis of [n, d], with a hand-written gradient: tfjs's autodiff through
 * `moments` emits about twice as many kernels, and on wasm each kernel costs about a millisecond.
 */
const layerNormOps = tf.customGrad(((x: tf.Tensor, gain: tf.Tensor, bias: tf.Tensor, save: tf.GradSaveFunc) => {
  const xc = x.sub(x.mean(-1, true));
  const rstd = tf.rsqrt(xc.square().mean(-1, true).add(LN_EPS));
  const xhat = xc.mul(rstd);
  save([xhat, rstd, gain]);
  return {
    value: xhat.mul(gain).add(bias),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sxhat, srstd, sgain] = saved;
      const dxhat = dy.mul(sgain);
      const dx = dxhat.sub(dxhat.mean(-1, true)).sub(sxhat.mul(dxhat.mul(sxhat).mean(-1, true))).mul(srstd);
      return [dx, columnSum(dy.mul(sxhat) as tf.Tensor2D), columnSum(dy as tf.Tensor2D)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D, g: tf.Tensor1D, b: tf.Tensor1D) => tf.Tensor2D;

/** Layer norm over the last axis of [n, d]. */
export function layerNorm(x: tf.Tensor2D, gain: tf.Tensor1D, bias: tf.Tensor1D): tf.Tensor2D {
  if (!useFusedKernels()) return layerNormOps(x, gain, bias);
  return recordingGradients() ? fusedLayerNorm(x, gain, bias) : layerNormForward(x, gain, bias);
}

const GELU_C = Math.sqrt(2 / Math.PI);
const GELU_A = 0.044715;

/** Whether GELU's elementwise parts run as SIMD passes (fused.ts: wasm with SIMD) or plain ops. */
const simdGelu = (x: tf.Tensor) => useFusedKernels() && simdGeluAvailable(x.size);

/** s = σ(2u), u = c(x + a x³). */
function geluSigmoid(x: tf.Tensor, simd: boolean): tf.Tensor {
  return tf.sigmoid(simd ? simdGeluArgument(x) : x.square().mul(2 * GELU_C * GELU_A).add(2 * GELU_C).mul(x));
}

/** GELU (see `geluOp`); without a gradient tape its forward runs alone (no customGrad wrapper). */
export function gelu(x: tf.Tensor2D): tf.Tensor2D {
  if (useFusedKernels() && nativeGeluAvailable()) {
    if (!recordingGradients()) {
      const [y, s] = nativeGelu(x);
      s.dispose();
      return y as tf.Tensor2D;
    }
    return nativeGeluOp(x);
  }
  return recordingGradients() ? geluOp(x) : (x.mul(geluSigmoid(x, simdGelu(x))) as tf.Tensor2D);
}

/** GELU on the native kernels: one pass forward (value and σ(2u)), one backward. */
const nativeGeluOp = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
  const [y, s] = nativeGelu(x);
  const saved = saveForGradient(save, [x, s]);
  return {
    value: y,
    gradFunc: (dy: tf.Tensor, clones: tf.Tensor[]) => {
      const [sx, ss] = saved(clones);
      return [nativeGeluBackward(dy, sx, ss)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D) => tf.Tensor2D;

/**
 * GELU, tanh approximation (GPT-2), computed as x·σ(2u) with u = c(x + a x³): identical to
 * ½x(1 + tanh u), but wasm's Sigmoid kernel is ~6× faster than its Tanh, and x·x·x is ~10× faster
 * than Pow. The gradient is written by hand to keep the backward pass to a few kernels:
 *   d/dx = s + x·s(1 − s)·2c(1 + 3a x²),  s = σ(2u).
 * On wasm with SIMD, 2u and the gradient are one SIMD pass each (fused.ts, wasm/gelu.wat).
 */
const geluOp = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
  const simd = simdGelu(x);
  const s = geluSigmoid(x, simd);
  // x² is recomputed in the backward pass: squaring is cheaper than saving (copying) it.
  save([x, s]);
  return {
    value: x.mul(s),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sx, ss] = saved;
      if (simd) return [simdGeluBackward(dy, sx, ss)];
      const du = sx.square().mul(6 * GELU_C * GELU_A).add(2 * GELU_C);
      return [dy.mul(ss.mul(tf.scalar(1).sub(ss)).mul(du).mul(sx).add(ss))];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D) => tf.Tensor2D;

/** log-softmax over the last axis of 2-D logits. */
function logSoftmax2d(logits: tf.Tensor2D): tf.Tensor2D {
  return tf.logSoftmax(logits) as tf.Tensor2D;
}

/**
 * Log-probability of each target under 2-D logits [n, V] → [n]. Uses a one-hot product rather
 * than gather so that the gradient exists on wasm.
 */
export function targetLogProbs(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  if (useFusedKernels()) return fusedTargetLogProbs(logits, targets);
  const logp = logSoftmax2d(logits);
  return logp.mul(tf.oneHot(targets, logits.shape[1]).toFloat()).sum(-1) as tf.Tensor1D;
}

/** Entropy of each row of 2-D logits → [n]. */
export function rowEntropy(logits: tf.Tensor2D): tf.Tensor1D {
  const logp = logSoftmax2d(logits);
  return logp.exp().mul(logp).sum(-1).neg() as tf.Tensor1D;
}
