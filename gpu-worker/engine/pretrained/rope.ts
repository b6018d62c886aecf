/**
 * Rotary position embeddings as Hugging Face's Llama/Qwen code computes them: inverse frequencies
 * θ^(−2i/d) (optionally rescaled by Llama 3's rule), angles position × frequency, and the
 * "rotate half" pairing (dimension i rotates with i + d/2, not with its neighbour). The tables are
 * computed in JavaScript with every step rounded to f32 (Math.fround), as transformers computes
 * them in f32, so that angles agree to the last bit rather than drifting with the position.
 */
import * as tf from '@tensorflow/tfjs';
import type { DecoderConfig } from './hf-config';

/** The d/2 inverse frequencies of a head of width `headDim`. */
export function inverseFrequencies(c: Pick<DecoderConfig, 'headDim' | 'ropeTheta' | 'ropeScaling'>): Float32Array {
  const half = c.headDim / 2;
  const f = Math.fround;
  const inv = new Float32Array(half);
  for (let i = 0; i < half; i++) inv[i] = f(1 / f(f(c.ropeTheta) ** f((2 * i) / c.headDim)));
  const s = c.ropeScaling;
  if (!s) return inv;
  // Llama 3: long wavelengths (beyond the original context / lowFreqFactor) are divided by
  // `factor`, short ones (below original / highFreqFactor) kept, and the band between blended.
  const lowWavelen = s.originalMaxPositions / s.lowFreqFactor;
  const highWavelen = s.originalMaxPositions / s.highFreqFactor;
  for (let i = 0; i < half; i++) {
    const wavelen = (2 * Math.PI) / inv[i];
    if (wavelen > lowWavelen) inv[i] = f(inv[i] / s.factor);
    else if (wavelen >= highWavelen) {
      const smooth = (s.originalMaxPositions / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      inv[i] = f((1 - smooth) * (inv[i] / s.factor) + smooth * inv[i]);
    }
  }
  return inv;
}

/**
 * cos and sin of every (position, frequency) for position ids [R, T] (one row per sequence, or a
 * single row that all sequences share): [R, T, 1, d/2] each, broadcasting over heads.
 */
export function rotaryTables(inv: Float32Array, positions: number[][]): { cos: tf.Tensor4D; sin: tf.Tensor4D } {
  const half = inv.length;
  const R = positions.length;
  const T = positions[0].length;
  const cos = new Float32Array(R * T * half);
  const sin = new Float32Array(R * T * half);
  for (let r = 0; r < R; r++) {
    for (let t = 0; t < T; t++) {
      const at = (r * T + t) * half;
      for (let i = 0; i < half; i++) {
        const angle = Math.fround(positions[r][t] * inv[i]);
        cos[at + i] = Math.cos(angle);
        sin[at + i] = Math.sin(angle);
      }
    }
  }
  return { cos: tf.tensor4d(cos, [R, T, 1, half]), sin: tf.tensor4d(sin, [R, T, 1, half]) };
}

/** Rotate heads x [B, T, heads, d]: first half x1, second half x2 → (x1·cos − x2·sin, x2·cos + x1·sin). */
export function applyRotary(x: tf.Tensor4D, cos: tf.Tensor4D, sin: tf.Tensor4D): tf.Tensor4D {
  const [B, T, n, d] = x.shape;
  const half = d / 2;
  const x1 = x.slice([0, 0, 0, 0], [B, T, n, half]);
  const x2 = x.slice([0, 0, 0, half], [B, T, n, half]);
  return tf.concat([x1.mul(cos).sub(x2.mul(sin)), x2.mul(cos).add(x1.mul(sin))], 3) as tf.Tensor4D;
}
