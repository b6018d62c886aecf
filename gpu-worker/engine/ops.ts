/**
 * The few tensor operations whose form decides speed on wasm (see OFFLINE.md): only 2-D,
 * non-transposed matmuls reach XNNPACK, and `gather` has no gradient kernel there.
 */
import * as tf from '@tensorflow/tfjs';
import { useFastMatmulPath } from './backend';

/**
 * a[m,k] × b[k,n] whose gradient also uses only 2-D non-transposed matmuls: the transposes are
 * explicit copies (cheap, memory-bound) instead of the transposed-matmul flags tfjs's own gradient
 * uses (which fall to a scalar loop on wasm).
 */
const matMul2dFast = tf.customGrad(((a: tf.Tensor2D, b: tf.Tensor2D, save: tf.GradSaveFunc) => {
  save([a, b]);
  return {
    value: tf.matMul(a, b),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sa, sb] = saved as tf.Tensor2D[];
      return [tf.matMul(dy as tf.Tensor2D, tf.transpose(sb)), tf.matMul(tf.transpose(sa), dy as tf.Tensor2D)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor2D;

/** 2-D matmul on the path that is fast for the current backend. */
export function matMul2d(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  return useFastMatmulPath() ? matMul2dFast(a, b) : tf.matMul(a, b);
}

/**
 * Batched matmul [G, M, K] × [G, K, N] → [G, M, N] (or × [G, N, K]ᵀ with `transposeB`), as a
 * depthwise convolution: wasm's BatchMatMul falls to a scalar loop (~2 GFLOP/s) for anything but
 * one 2-D product, while DepthwiseConv2dNative runs through XNNPACK. Each of the G groups is a
 * channel; A is the image [M rows, K columns], B the per-channel filter [1 × K] with N outputs.
 * The gradients are the same primitive again (the wasm backend has no depthwise backprop kernels).
 */
function bmmConv(a: tf.Tensor3D, b: tf.Tensor3D, transposeB: boolean): tf.Tensor3D {
  const [G, M, K] = a.shape;
  const N = transposeB ? b.shape[1] : b.shape[2];
  const image = a.transpose([1, 2, 0]).reshape([1, M, K, G]) as tf.Tensor4D;
  const filter = (transposeB ? b.transpose([2, 0, 1]) : b.transpose([1, 0, 2])).reshape([1, K, G, N]) as tf.Tensor4D;
  const out = tf.depthwiseConv2d(image, filter, 1, 'valid');
  return out.reshape([M, G, N]).transpose([1, 0, 2]) as tf.Tensor3D;
}

const bmmNN = tf.customGrad(((a: tf.Tensor3D, b: tf.Tensor3D, save: tf.GradSaveFunc) => {
  save([a, b]);
  return {
    value: bmmConv(a, b, false),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sa, sb] = saved as tf.Tensor3D[];
      // dA = dC Bᵀ, dB = Aᵀ dC
      return [bmmConv(dy as tf.Tensor3D, sb, true), bmmConv(sa.transpose([0, 2, 1]), dy as tf.Tensor3D, false)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (a: tf.Tensor3D, b: tf.Tensor3D) => tf.Tensor3D;

const bmmNT = tf.customGrad(((a: tf.Tensor3D, b: tf.Tensor3D, save: tf.GradSaveFunc) => {
  save([a, b]);
  return {
    value: bmmConv(a, b, true),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sa, sb] = saved as tf.Tensor3D[];
      // C = A Bᵀ: dA = dC B, dB = dCᵀ A
      return [bmmConv(dy as tf.Tensor3D, sb, false), bmmConv((dy as tf.Tensor3D).transpose([0, 2, 1]), sa, false)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (a: tf.Tensor3D, b: tf.Tensor3D) => tf.Tensor3D;

/** Batched matmul for attention, on the path that is fast for the current backend. */
export function batchMatMul(a: tf.Tensor3D, b: tf.Tensor3D, transposeB = false): tf.Tensor3D {
  if (!useFastMatmulPath()) return tf.matMul(a, b, false, transposeB);
  return transposeB ? bmmNT(a, b) : bmmNN(a, b);
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
const layerNormFused = tf.customGrad(((x: tf.Tensor, gain: tf.Tensor, bias: tf.Tensor, save: tf.GradSaveFunc) => {
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
      return [dx, dy.mul(sxhat).sum(0), dy.sum(0)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D, g: tf.Tensor1D, b: tf.Tensor1D) => tf.Tensor2D;

const LN_EPS = 1e-5;

/** Layer norm over the last axis of [n, d]. */
export function layerNorm(x: tf.Tensor2D, gain: tf.Tensor1D, bias: tf.Tensor1D): tf.Tensor2D {
  return layerNormFused(x, gain, bias);
}

const GELU_C = Math.sqrt(2 / Math.PI);
const GELU_A = 0.044715;

/**
 * GELU, tanh approximation (GPT-2), computed as x·σ(2u) with u = c(x + a x³): identical to
 * ½x(1 + tanh u), but wasm's Sigmoid kernel is ~6× faster than its Tanh, and x·x·x is ~10× faster
 * than Pow. The gradient is written by hand to keep the backward pass to a few kernels:
 *   d/dx = s + x·s(1 − s)·2c(1 + 3a x²),  s = σ(2u).
 */
export const gelu = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
  const x2 = x.square();
  const s = tf.sigmoid(x2.mul(2 * GELU_C * GELU_A).add(2 * GELU_C).mul(x));
  save([x, x2, s]);
  return {
    value: x.mul(s),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sx, sx2, ss] = saved;
      const du = sx2.mul(6 * GELU_C * GELU_A).add(2 * GELU_C);
      return [dy.mul(ss.mul(tf.scalar(1).sub(ss)).mul(du).mul(sx).add(ss))];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D) => tf.Tensor2D;

/** log-softmax over the last axis of 2-D logits. */
export function logSoftmax2d(logits: tf.Tensor2D): tf.Tensor2D {
  return tf.logSoftmax(logits) as tf.Tensor2D;
}

/**
 * Log-probability of each target under 2-D logits [n, V] → [n]. Uses a one-hot product rather
 * than gather so that the gradient exists on wasm.
 */
export function targetLogProbs(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  const logp = logSoftmax2d(logits);
  return logp.mul(tf.oneHot(targets, logits.shape[1]).toFloat()).sum(-1) as tf.Tensor1D;
}

/** Entropy of each row of 2-D logits → [n]. */
export function rowEntropy(logits: tf.Tensor2D): tf.Tensor1D {
  const logp = logSoftmax2d(logits);
  return logp.exp().mul(logp).sum(-1).neg() as tf.Tensor1D;
}
