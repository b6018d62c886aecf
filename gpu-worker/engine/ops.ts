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

/** Rows of `table` selected by integer ids: a one-hot matmul on the fast path, `gather` otherwise. */
export function embed(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  // gather's gradient (UnsortedSegmentSum) has no wasm kernel, whichever matmul path is chosen.
  if (useFastMatmulPath() || tf.getBackend() === 'wasm') {
    return matMul2d(tf.oneHot(ids, table.shape[0]).toFloat() as tf.Tensor2D, table);
  }
  return tf.gather(table, ids) as tf.Tensor2D;
}

/** Layer norm over the last axis. */
export function layerNorm(x: tf.Tensor2D, gain: tf.Tensor1D, bias: tf.Tensor1D, eps = 1e-5): tf.Tensor2D {
  const { mean, variance } = tf.moments(x, -1, true);
  return x.sub(mean).mul(tf.rsqrt(variance.add(eps))).mul(gain).add(bias);
}

const GELU_C = Math.sqrt(2 / Math.PI);

/** GELU, tanh approximation (GPT-2), with a hand-written gradient: fewer kernels on the backward pass. */
export const gelu = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
  const inner = tf.tanh(x.add(x.pow(3).mul(0.044715)).mul(GELU_C));
  save([x, inner]);
  return {
    value: x.mul(inner.add(1)).mul(0.5),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sx, t] = saved;
      // d/dx 0.5 x (1 + t) = 0.5 (1 + t) + 0.5 x (1 - t²) c (1 + 3·0.044715 x²)
      const dt = tf.scalar(1).sub(t.square()).mul(sx.square().mul(3 * 0.044715).add(1)).mul(GELU_C);
      return [dy.mul(t.add(1).add(sx.mul(dt)).mul(0.5))];
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
