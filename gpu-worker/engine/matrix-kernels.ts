/**
 * Transposes and row sums for the backward passes of ops.ts: weight gradients transpose
 * activations and output gradients of up to [B·T, 4d], and wide layers' bias gradients sum the
 * rows of the transposed output gradient. On wasm these are SIMD kernels (wasm/transpose.wat: 4×4
 * blocks, ~3× faster than wasm's Transpose; wasm/row-sums.wat: ~5× faster than a matrix-vector
 * product with a ones column); elsewhere, and for sides that are not multiples of 4, plain ops.
 * They record no gradient: for use inside gradient functions.
 */
import * as tf from '@tensorflow/tfjs';
import { defineJsKernel, requireSimdModule, runJsKernel, simdModule } from './kernels';
import { ROW_SUMS_WASM } from './wasm/row-sums.wasm';
import { TRANSPOSE_WASM } from './wasm/transpose.wasm';

interface TransposeWasm {
  transpose(x: number, y: number, rows: number, cols: number): void;
}

interface RowSumsWasm {
  rowSums(x: number, out: number, rows: number, cols: number): void;
}

const TRANSPOSE_2D = defineJsKernel({
  name: 'WhetstoneTranspose2d',
  outputShapes: ([[rows, cols]]) => [[cols, rows]],
  compute([x], [y], [[rows, cols]], _a, heap) {
    requireSimdModule<TransposeWasm>(TRANSPOSE_WASM, heap, 'WhetstoneTranspose2d').transpose(x.byteOffset, y.byteOffset, rows, cols);
  },
});

const ROW_SUMS = defineJsKernel({
  name: 'WhetstoneRowSums',
  outputShapes: ([[rows]]) => [[rows]],
  compute([x], [out], [[rows, cols]], _a, heap) {
    requireSimdModule<RowSumsWasm>(ROW_SUMS_WASM, heap, 'WhetstoneRowSums').rowSums(x.byteOffset, out.byteOffset, rows, cols);
  },
});

/** xᵀ for x [rows, cols]. */
export function transpose2d(x: tf.Tensor2D): tf.Tensor2D {
  const [rows, cols] = x.shape;
  if (rows % 4 === 0 && cols % 4 === 0 && simdModule(TRANSPOSE_WASM)) return runJsKernel(TRANSPOSE_2D, [x])[0] as tf.Tensor2D;
  return tf.transpose(x);
}

/** Σ over the columns of x [rows, cols] → [rows]. */
export function rowSums(x: tf.Tensor2D): tf.Tensor1D {
  const [rows, cols] = x.shape;
  if (cols % 4 === 0 && simdModule(ROW_SUMS_WASM)) return runJsKernel(ROW_SUMS, [x])[0] as tf.Tensor1D;
  return tf.matMul(x, tf.ones([cols, 1]) as tf.Tensor2D).reshape([rows]);
}
