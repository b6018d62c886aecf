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
  /** An n×n×n float32 matmul's rate, the best of a few runs after a warm-up, read back each time. */
  matmulGflops: number;
  matmulSize: number;
}

export async function checkBackend(choice?: string, n = 1024): Promise<BackendCheck> {
  const report = await initBackend(choice);
  const a = tf.randomNormal([n, n]);
  const b = tf.randomNormal([n, n]);
  let best = Infinity;
  for (let i = 0; i < 6; i++) {
    const t0 = performance.now();
    const c = tf.matMul(a, b);
    await c.data();
    c.dispose();
    if (i > 0) best = Math.min(best, performance.now() - t0);
  }
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
