/**
 * What `npm run worker -- --check` (and `whetstone doctor`) prints: the backend the worker would
 * use (the adapter on WebGPU; on wasm the kernel path, its threads and the CPU features it uses),
 * why the backends before it were skipped, and a measured matmul rate on it.
 */
import * as tf from '@tensorflow/tfjs';
import { type BackendReport, initBackend } from './backend';
import { type NativeStatus, nativeStatus } from './native';
import { adapterName } from './webgpu';

interface BackendCheck {
  backend: BackendReport['backend'];
  adapter: string | null;
  devices: BackendReport['devices'];
  skipped: string[];
  /** On wasm: which kernels run the products (native.ts), in words, and the native path's details. */
  kernels: string | null;
  native: NativeStatus | null;
  threads: number;
  /** An n×n×n float32 matmul's rate, the best of a few runs after a warm-up (`bestProductMs`). */
  matmulGflops: number;
  matmulSize: number;
}

export async function checkBackend(choice?: string, n = 1024): Promise<BackendCheck> {
  const report = await initBackend(choice);
  const a = tf.randomNormal([n, n]) as tf.Tensor2D;
  const b = tf.randomNormal([n, n]) as tf.Tensor2D;
  const best = await bestProductMs(a, b, 5);
  tf.dispose([a, b]);
  return {
    backend: report.backend,
    adapter: report.adapter ? adapterName(report.adapter) : null,
    devices: report.devices,
    skipped: report.skipped,
    kernels: report.kernels ?? null,
    native: report.backend === 'wasm' ? nativeStatus() : null,
    threads: report.threads,
    matmulGflops: Number(((2 * n ** 3) / (best * 1e6)).toFixed(2)),
    matmulSize: n,
  };
}

/**
 * The best wall time in ms of the product a·b over `runs` runs after a warm-up: the product alone,
 * as PyTorch's reference times `a @ b` (bench/torch_reference.py). On an asynchronous backend
 * (WebGPU) each run ends by reading one element of the result, which waits for its work without
 * timing a copy of the whole result out of the backend: a fresh 4 MiB array costs 13 ms of page
 * faults on these virtual machines (1,024 first touches at ~12 µs), more than the 1024³ product
 * itself. The CPU backends compute within the call, so there the call alone is timed: slicing out
 * one element cost 1.5–3 ms of a 1024³ product's 8–11 (29 Nov, Intel Xeon).
 */
export async function bestProductMs(a: tf.Tensor2D, b: tf.Tensor2D, runs: number, warmup = 2): Promise<number> {
  const synchronous = ['wasm', 'cpu'].includes(tf.getBackend());
  let best = Infinity;
  for (let i = 0; i < warmup + runs; i++) {
    const t0 = performance.now();
    const c = tf.matMul(a, b);
    const first = synchronous ? null : tf.tidy(() => c.reshape([-1]).slice(0, 1));
    if (first) await first.data();
    const ms = performance.now() - t0;
    tf.dispose(first ? [c, first] : [c]);
    if (i >= warmup) best = Math.min(best, ms);
  }
  return best;
}
