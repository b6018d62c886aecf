/** Measuring helpers shared by the engine benchmarks. */
import * as tf from '@tensorflow/tfjs';
import { type ModelConfig } from '../gpu-worker/engine/config';
import { bestProductMs } from '../gpu-worker/engine/doctor';

/** Print one benchmark figure as one JSON line (the only thing benchmarks write to stdout). */
export function emit(name: string, value: number, unit: string, details: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ name, value: Number(value.toPrecision(4)), unit, ...details })}\n`);
}

/**
 * Median wall time in ms of `fn` over `runs` runs after `warmup` runs. `fn` ends by reading a
 * result (asynchronously: WebGPU has no synchronous read), so the time includes the device's work.
 */
export async function timeMs(fn: () => Promise<unknown>, runs: number, warmup = 2): Promise<number> {
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/** Shapes typical of small transformers (the roof for the engine's MFU). */
export const MATMUL_SHAPES = [
  [2048, 64, 256],
  [2048, 256, 64],
  [2048, 128, 512],
  [2048, 512, 128],
  [64, 2048, 64],
  [1024, 512, 512],
];

/** Best 2-D matmul rate over a few shapes typical of small transformers, in GFLOP/s. */
export async function bestMatmulGflops(shapes: number[][] = MATMUL_SHAPES): Promise<{ gflops: number; shape: number[] }> {
  let best = { gflops: 0, shape: [0, 0, 0] };
  for (const [m, k, n] of shapes) {
    const a = tf.randomNormal([m, k]) as tf.Tensor2D;
    const b = tf.randomNormal([k, n]) as tf.Tensor2D;
    const ms = await bestProductMs(a, b, 15);
    const gflops = (2 * m * k * n) / (ms * 1e6);
    if (gflops > best.gflops) best = { gflops, shape: [m, k, n] };
    a.dispose();
    b.dispose();
  }
  return best;
}

/**
 * Model FLOPs per trained token (forward + backward), PaLM's convention: 6 × matmul parameters
 * (blocks and the output head; the one-hot embedding matmul is an implementation detail, not model
 * work) + 12 · layers · width · context for attention scores and mixing.
 */
export function trainFlopsPerToken(c: Pick<ModelConfig, 'layers' | 'width' | 'vocabSize' | 'contextLength' | 'mlpRatio'>): number {
  const d = c.width;
  const matmulParams = c.layers * (4 * d * d + 2 * c.mlpRatio * d * d) + d * c.vocabSize;
  return 6 * matmulParams + 12 * c.layers * d * c.contextLength;
}
