/**
 * Adam(W) with warm-up and cosine decay and global-norm gradient clipping. Written out (rather
 * than tf.train.adam) so that its moments and step are plain named tensors a checkpoint can save
 * and restore exactly.
 */
import * as tf from '@tensorflow/tfjs';
import { type SFTOptions } from '../../sdk/training-config';
import { defineJsKernel, hasJsKernels, runJsKernel, sweepingSaves, simdModule } from './kernels';
import { heapViews, nativeKernels } from './native';
import { webgpuAdam } from './webgpu-adam';
import { ADAM_WASM } from './wasm/adam.wasm';

/** The optimiser's options (documented with their defaults in sdk/training-config.ts). */
export type OptimConfig = Pick<
  SFTOptions,
  'learningRate' | 'warmupSteps' | 'totalSteps' | 'minLearningRateRatio' | 'beta1' | 'beta2' | 'epsilon' | 'weightDecay' | 'gradClip'
>;

/** Learning rate at a 0-based optimiser step. */
export function learningRateAt(c: OptimConfig, step: number): number {
  if (step < c.warmupSteps) return (c.learningRate * (step + 1)) / c.warmupSteps;
  if (c.totalSteps <= 0) return c.learningRate;
  const progress = Math.min(1, (step - c.warmupSteps) / Math.max(1, c.totalSteps - c.warmupSteps));
  const min = c.learningRate * c.minLearningRateRatio;
  return min + 0.5 * (c.learningRate - min) * (1 + Math.cos(Math.PI * progress));
}

export class Adam {
  readonly m = new Map<string, tf.Variable>();
  readonly v = new Map<string, tf.Variable>();
  /** Number of updates applied. */
  t = 0;

  constructor(
    readonly vars: Map<string, tf.Variable>,
    readonly config: OptimConfig,
  ) {
    for (const [name, p] of vars) {
      // Zeros of their own (not shared with a tensor left alive), so the native step may update them in place.
      this.m.set(name, tf.tidy(() => tf.variable(tf.zerosLike(p), false)));
      this.v.set(name, tf.tidy(() => tf.variable(tf.zerosLike(p), false)));
    }
  }

  /**
   * Clip and apply `grads` (keyed like `vars`) at learning rate `lr`; returns the gradient norm
   * before clipping. Disposes the gradients.
   */
  update(grads: Map<string, tf.Tensor>, lr: number): number {
    const sq = sumOfSquares([...grads.values()]);
    const gradNorm = Math.sqrt(sq.dataSync()[0]);
    sq.dispose();
    this.apply(grads, lr, gradNorm);
    return gradNorm;
  }

  /**
   * Clip and apply `grads` given their global norm (`sumOfSquares`, read by the caller: one read
   * per step with the loss). Disposes the gradients; applies nothing when the norm is not finite.
   */
  apply(grads: Map<string, tf.Tensor>, lr: number, gradNorm: number): void {
    const c = this.config;
    const fused = hasJsKernels();
    if (!Number.isFinite(gradNorm)) {
      grads.forEach((g) => g.dispose());
      return;
    }
    const scale = c.gradClip > 0 && gradNorm > c.gradClip ? c.gradClip / gradNorm : 1;
    this.t += 1;
    const bc1 = 1 - c.beta1 ** this.t;
    const bc2 = 1 - c.beta2 ** this.t;
    const decays = (name: string, p: tf.Variable) => c.weightDecay > 0 && p.rank === 2 && !name.startsWith('wpe');
    if (this.applyNatively(grads, { scale, lr, bc1, bc2 }, decays)) return;
    tf.tidy(() => {
      for (const [name, p] of this.vars) {
        const g0 = grads.get(name);
        if (!g0) continue;
        const m = this.m.get(name)!;
        const v = this.v.get(name)!;
        if (fused) {
          // One pass per parameter instead of ~14 kernels; the same arithmetic (see ADAM_KERNEL).
          const attrs = { scale, lr, beta1: c.beta1, beta2: c.beta2, bc1, bc2, epsilon: c.epsilon, decay: decays(name, p) ? lr * c.weightDecay : 0 };
          const [np, nm, nv] = runJsKernel(ADAM_KERNEL, [p, g0, m, v], attrs);
          p.assign(np);
          m.assign(nm);
          v.assign(nv);
          continue;
        }
        if (tf.getBackend() === 'webgpu') {
          const attrs = { scale, lr, beta1: c.beta1, beta2: c.beta2, bc1, bc2, epsilon: c.epsilon, decay: decays(name, p) ? lr * c.weightDecay : 0 };
          const [np, nm, nv] = webgpuAdam(p, g0, m, v, attrs);
          p.assign(np);
          m.assign(nm);
          v.assign(nv);
          continue;
        }
        const g = scale === 1 ? g0 : g0.mul(scale);
        m.assign(m.mul(c.beta1).add(g.mul(1 - c.beta1)));
        v.assign(v.mul(c.beta2).add(g.square().mul(1 - c.beta2)));
        let step = m.div(bc1).div(v.div(bc2).sqrt().add(c.epsilon)).mul(lr);
        if (decays(name, p)) step = step.add(p.mul(lr * c.weightDecay));
        p.assign(p.sub(step));
      }
    });
    grads.forEach((g) => g.dispose());
  }

  /**
   * Every parameter's update in one native call, in place, on the pool's threads (the native
   * kernels' path): instead of a kernel, three new tensors and three assignments per parameter.
   * Only where each parameter and moment owns its memory (a tensor sharing it would change too);
   * false, having done nothing, otherwise. Disposes the gradients when it applies them.
   */
  private applyNatively(grads: Map<string, tf.Tensor>, s: { scale: number; lr: number; bc1: number; bc2: number }, decays: (name: string, p: tf.Variable) => boolean): boolean {
    const native = nativeKernels();
    if (!native) return false;
    const c = this.config;
    const names = [...this.vars.keys()].filter((name) => grads.has(name));
    const ps = names.map((name) => this.vars.get(name)!);
    const ms = names.map((name) => this.m.get(name)!);
    const vs = names.map((name) => this.v.get(name)!);
    const backend = tf.backend();
    if (![...ps, ...ms, ...vs].every((t) => t.dtype === 'float32' && backend.refCount(t.dataId) === 1)) return false;
    const decay = Float64Array.from(names, (name, i) => (decays(name, ps[i]) ? s.lr * c.weightDecay : 0));
    const hyper = Float64Array.of(s.scale, s.lr, c.beta1, c.beta2, s.bc1, s.bc2, c.epsilon);
    const gs = names.map((name) => grads.get(name)!);
    native.adam(heapViews(ps), heapViews(gs), heapViews(ms), heapViews(vs), decay, hyper);
    grads.forEach((g) => g.dispose());
    return true;
  }

  dispose(): void {
    for (const t of [...this.m.values(), ...this.v.values()]) t.dispose();
  }
}

/**
 * Gradients of `loss` with respect to `vars`, keyed by our parameter names. `loss` runs inside a
 * tidy; tensors it keeps with tf.keep survive for the caller to read and dispose.
 */
export function gradients(
  loss: () => tf.Scalar,
  vars: Map<string, tf.Variable>,
): { value: tf.Scalar; grads: Map<string, tf.Tensor> } {
  const list = [...vars.values()];
  // The fused ops save their tensors without copies during this computation (kernels.ts).
  const { value, grads } = sweepingSaves(() => tf.variableGrads(loss, list));
  const byName = new Map<string, tf.Tensor>();
  for (const [name, v] of vars) {
    const g = grads[v.name];
    if (g) byName.set(name, g);
  }
  return { value, grads: byName };
}

/**
 * Σ g² over every gradient → [1]: one JavaScript pass in double precision where the tensors live
 * in this process (wasm, cpu), tensor ops on the others (WebGPU, tfjs-node).
 */
export function sumOfSquares(grads: tf.Tensor[]): tf.Tensor1D {
  if (hasJsKernels()) return runJsKernel(SUM_SQUARES_KERNEL, grads)[0] as tf.Tensor1D;
  // Added in turn, not by addN: WebGPU's AddN binds every input at once, past the adapter's limit.
  return tf.tidy(() => grads.map((g) => g.square().sum()).reduce((a, b) => a.add(b)).reshape([1]));
}

/** Σ g² over all inputs, accumulated in double precision → [1]. */
const SUM_SQUARES_KERNEL = defineJsKernel({
  name: 'WhetstoneSumSquares',
  outputShapes: () => [[1]],
  compute(inputs, [out]) {
    // Natively on the pool's threads where the native kernels are active (the same double sum, in
    // blocks).
    const native = nativeKernels();
    if (native) {
      out[0] = native.sumSquares(inputs as Float32Array[]);
      return;
    }
    let sum = 0;
    for (const g of inputs) for (let i = 0; i < g.length; i++) sum += g[i] * g[i];
    out[0] = sum;
  },
});


interface AdamWasm {
  adam(p: number, g: number, m: number, v: number, po: number, mo: number, vo: number, n: number,
    scale: number, lr: number, beta1: number, beta2: number, bc1: number, bc2: number, epsilon: number, decay: number): void;
}

/**
 * Adam(W) for one parameter: inputs p, g, m, v → outputs p', m', v'. The same formula as the
 * tensor path: g ← scale·g; m' = β1 m + (1−β1) g; v' = β2 v + (1−β2) g²;
 * p' = p − lr·(m'/bc1)/(√(v'/bc2) + ε) − decay·p (decay = lr·weightDecay, or 0).
 * On wasm a SIMD loop (wasm/adam.wat) does all but the last size mod 4 elements.
 */
const ADAM_KERNEL = defineJsKernel({
  name: 'WhetstoneAdam',
  outputShapes: (shapes) => [shapes[0], shapes[0], shapes[0]],
  compute([p, g, m, v], [po, mo, vo], _shapes, a, heap) {
    const { scale, lr, beta1, beta2, bc1, bc2, epsilon, decay } = a as Record<string, number>;
    const simd = simdModule<AdamWasm>(ADAM_WASM, heap);
    const start = simd ? p.length & ~3 : 0;
    if (simd) {
      simd.adam(p.byteOffset, g.byteOffset, m.byteOffset, v.byteOffset, po.byteOffset, mo.byteOffset, vo.byteOffset, start,
        scale, lr, beta1, beta2, bc1, bc2, epsilon, decay);
    }
    for (let i = start; i < p.length; i++) {
      const gi = g[i] * scale;
      const mi = beta1 * m[i] + (1 - beta1) * gi;
      const vi = beta2 * v[i] + (1 - beta2) * gi * gi;
      mo[i] = mi;
      vo[i] = vi;
      po[i] = p[i] - (lr * (mi / bc1)) / (Math.sqrt(vi / bc2) + epsilon) - decay * p[i];
    }
  },
});
