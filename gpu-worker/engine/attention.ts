/**
 * Causal self-attention over a fused qkv projection for the backends with JavaScript kernels
 * (wasm, cpu): one custom-gradient op for forwards without a KV cache (training, recompute
 * sampling), and `cachedSelfAttention` for forwards that read or return one.
 *
 * The two batched products run as depthwise convolutions (XNNPACK on wasm; see ops.ts), which
 * want their operands in particular layouts. Instead of tf.split (wasm's SplitV costs ~5 ms at
 * [2048, 192]) and a chain of transposes and a scale multiply per operand, one JavaScript pass
 * writes q, k and v straight into the layouts the convolutions read, and one pass writes the
 * gradients back into qkv's layout. Layouts, with C = B·H channels (bh = b·H + h):
 *   qkv [B·T, 3d]: q, k, v side by side; head h of each at columns h·hd … (h+1)·hd
 *   "image"  q [T, hd, C]  · "filter" k [hd, C, T]  → scores [T, C, T] (query, channel, key)
 *   "image"  a [T, T, C]   · "filter" v [T, C, hd]  → y      [T, C, hd]
 */
import * as tf from '@tensorflow/tfjs';
import { defineJsKernel, runJsKernel } from './kernels';

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
 * mask in the score layout [T, B|1, 1, T] (a constant: it gets no gradient).
 */
export function fusedSelfAttention(qkv: tf.Tensor2D, bias: tf.Tensor4D, B: number, T: number, H: number): tf.Tensor2D {
  const d = qkv.shape[1] / 3;
  const hd = d / H;
  const C = B * H;
  const dims = { B, T, H, hd, scale: 1 / Math.sqrt(hd) };
  const op = tf.customGrad(((x: tf.Tensor2D, save: tf.GradSaveFunc) => {
    const [q, k, v] = runJsKernel(SPLIT_FORWARD, [x], dims);
    const scores = depthwise(q, k).reshape([T, B, H, T]);
    const att = tf.softmax(scores.add(bias)).reshape([T, C, T]);
    const y = depthwise(att.transpose([0, 2, 1]).reshape([1, T, T, C]), v); // [T, C, hd]
    save([q, k, v, att]);
    return {
      value: y.reshape([T, B, H, hd]).transpose([1, 0, 2, 3]).reshape([B * T, d]),
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

/**
 * Attention that reads and extends a KV cache (sampling), on the backends with JS kernels. The
 * cache is kept in the layouts the depthwise products read — keys [Tk, hd, B, H] (the scores'
 * image), values [Tk, B, H, hd] (the mix's filter) — so a decoding step appends along the first
 * axis (a contiguous copy) and never transposes the whole cache, which the [B, T, H, hd] layout
 * needs at every step. Scores come out key-major, [Tk, C, Tq].
 */
export function cachedSelfAttention(
  qkv: tf.Tensor2D,
  bias: tf.Tensor4D,
  B: number,
  Tn: number,
  H: number,
  cache?: { keys: tf.Tensor4D; values: tf.Tensor4D },
): { y: tf.Tensor2D; keys: tf.Tensor4D; values: tf.Tensor4D } {
  const d = qkv.shape[1] / 3;
  const hd = d / H;
  const C = B * H;
  let keys: tf.Tensor4D;
  let values: tf.Tensor4D;
  let queries: tf.Tensor;
  if (Tn === 1) {
    // One new token per row (decoding): the training split's layouts coincide with the cache's
    // (q [hd, C], k [hd, C], v [C, hd]), so one JS pass replaces a split, a scale and three transposes.
    const [qs, ks, vs] = runJsKernel(SPLIT_FORWARD, [qkv], { B, T: 1, H, hd, scale: 1 / Math.sqrt(hd) });
    queries = qs.reshape([1, hd, C, 1]);
    keys = ks.reshape([1, hd, B, H]);
    values = vs.reshape([1, B, H, hd]);
  } else {
    const [q, k, v] = tf.split(qkv, 3, 1);
    keys = k.reshape([B, Tn, H, hd]).transpose([1, 3, 0, 2]) as tf.Tensor4D;
    values = v.reshape([B, Tn, H, hd]).transpose([1, 0, 2, 3]) as tf.Tensor4D;
    queries = q.mul(1 / Math.sqrt(hd)).reshape([B, Tn, H, hd]).transpose([3, 0, 2, 1]).reshape([1, hd, C, Tn]);
  }
  if (cache) {
    keys = tf.concat([cache.keys, keys], 0);
    values = tf.concat([cache.values, values], 0);
  }
  const Tk = keys.shape[0];
  const scoresByKey = depthwise(keys.reshape([1, Tk, hd, C]), queries); // [Tk, C, Tn]
  const att = tf.softmax(scoresByKey.transpose([2, 1, 0]).reshape([Tn, B, H, Tk]).add(bias)).reshape([Tn, C, Tk]);
  const y = depthwise(att.transpose([0, 2, 1]).reshape([1, Tn, Tk, C]), values.reshape([1, Tk, C, hd])); // [Tn, C, hd]
  return { y: y.reshape([Tn, B, H, hd]).transpose([1, 0, 2, 3]).reshape([B * Tn, d]), keys, values };
}
