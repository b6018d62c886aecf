/**
 * What the profile tools share: every kernel registered on `backend` wrapped to count its calls
 * and time them (wall time, and the fastest call) while `recording` is on. Wrap after a warm-up
 * run, so that kernels registered on first use are included. DETAIL=Name1,Name2 (or all) splits
 * those kernels by their input shapes and attributes.
 */
import * as tf from '@tensorflow/tfjs';

export interface KernelStat {
  n: number;
  ms: number;
  min: number;
}

export function timeKernels(backend: string, detail = (process.env.DETAIL ?? '').split(',')) {
  const stats = new Map<string, KernelStat>();
  const state = { recording: false };
  for (const k of tf.getKernelsForBackend(backend)) {
    const f = k.kernelFunc;
    k.kernelFunc = ((args: Parameters<typeof f>[0]) => {
      if (!state.recording) return f(args);
      const t0 = performance.now();
      const out = f(args);
      const dt = performance.now() - t0;
      const key =
        detail.includes(k.kernelName) || detail.includes('all')
          ? `${k.kernelName} ${Object.values(args.inputs).map((t) => `[${(t as tf.TensorInfo | undefined)?.shape}]`).join(' ')} ${JSON.stringify(args.attrs ?? {}).slice(0, 60)}`
          : k.kernelName;
      const s = stats.get(key) ?? { n: 0, ms: 0, min: Infinity };
      s.n += 1;
      s.ms += dt;
      s.min = Math.min(s.min, dt);
      stats.set(key, s);
      return out;
    }) as typeof f;
  }
  return { stats, state };
}
