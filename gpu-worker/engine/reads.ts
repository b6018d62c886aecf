/**
 * Reading tensors back to the CPU, once for synchronous and asynchronous callers.
 *
 * The wasm and cpu backends answer `dataSync()`; WebGPU in Node cannot (tfjs's synchronous read
 * goes through an OffscreenCanvas, which Node lacks, and Dawn completes a buffer mapping only on
 * the event loop). So code that must look at values mid-computation (a loss for the NaN guard, the
 * logits a sampler chooses from) is written once as a generator that yields each tensor it needs
 * and receives its values; `readSync` drives it with `dataSync()`, `readAsync` with `await data()`.
 * `readAsync` works on every backend; the job runner uses it. A yielded tensor stays the
 * generator's to dispose.
 */
import type * as tf from '@tensorflow/tfjs';
import { checkDevice, readError } from './webgpu';

export type Values = Float32Array | Int32Array | Uint8Array;

/** A computation that yields the tensors it needs to read and returns R. */
export type Reads<R> = Generator<tf.Tensor, R, Values>;

export function readSync<R>(g: Reads<R>): R {
  let r = g.next(undefined as never);
  while (!r.done) {
    let values: Values;
    try {
      values = r.value.dataSync() as Values;
    } catch (e) {
      r = g.throw(e);
      continue;
    }
    r = g.next(values);
  }
  return r.value;
}

export async function readAsync<R>(g: Reads<R>): Promise<R> {
  let r = g.next(undefined as never);
  while (!r.done) {
    let values: Values;
    try {
      values = (await r.value.data()) as Values;
      // A lost device or an out-of-memory error surfaces here, before its garbage is used.
      checkDevice();
    } catch (e) {
      r = g.throw(await readError(e));
      continue;
    }
    r = g.next(values);
  }
  return r.value;
}

/** Read `t` and dispose it (`yield* readAndDispose(t)` inside a `Reads` generator). */
export function* readAndDispose(t: tf.Tensor): Reads<Values> {
  try {
    return yield t;
  } finally {
    t.dispose();
  }
}

/**
 * Read `tensors` to the CPU ahead of synchronous code that reads them (checkpoints): tfjs keeps the
 * values of a tensor read with `data()`, and its `dataSync()` then answers on WebGPU too.
 */
export async function prefetch(tensors: Iterable<tf.Tensor>): Promise<void> {
  await Promise.all([...tensors].map((t) => t.data()));
  checkDevice();
}
