/**
 * Layer norm, the target log-probability and the token+position embedding as custom-gradient ops
 * whose work is done by kernels of our own (kernels.ts): on wasm SIMD loops over the backend's
 * heap (wasm/*.wat), one pass where there were ~6–20 kernels; on cpu the JavaScript loops below.
 * GELU's elementwise parts are SIMD passes too, on wasm only (ops.ts's GELU op runs them).
 * Exponentials stay with wasm's XNNPACK kernels (Softmax, Sigmoid): V8's Math.exp costs ~10× and
 * a SIMD polynomial written here ~3× as much per element.
 * ops.ts chooses these on the fast path and plain ops elsewhere.
 */
import * as tf from '@tensorflow/tfjs';
import { defineJsKernel, recordingGradients, requireSimdModule, runJsKernel, saveForGradient, simdModule } from './kernels';
import { nativeKernels } from './native';
import { EMBED_WASM } from './wasm/embed.wasm';
import { GELU_WASM } from './wasm/gelu.wasm';
import { LAYER_NORM_WASM } from './wasm/layer-norm.wasm';
import { TARGET_LOGP_WASM } from './wasm/target-logp.wasm';

export const LN_EPS = 1e-5;

interface LayerNormWasm {
  forward(x: number, gain: number, bias: number, y: number, stats: number, n: number, d: number, eps: number): void;
  backward(dy: number, x: number, stats: number, gain: number, dx: number, dgain: number, dbias: number, n: number, d: number): void;
}

/** x [n, d], gain [d], bias [d] → y [n, d], stats [n, 2] (mean, 1/σ per row). */
const LAYER_NORM = defineJsKernel({
  name: 'WhetstoneLayerNorm',
  outputShapes: ([x]) => [x, [x[0], 2]],
  compute([x, g, b], [y, stats], [[n, d]], _a, heap) {
    // The native kernels (on the pool's threads) where they are active; else on wasm a SIMD loop
    // (wasm/layer-norm.wat, ~10× faster than the JavaScript below).
    const native = nativeKernels();
    if (native) {
      native.layerNormForward(x as Float32Array, g as Float32Array, b as Float32Array, y, stats, n, d, LN_EPS);
      return;
    }
    const simd = d % 4 === 0 ? simdModule<LayerNormWasm>(LAYER_NORM_WASM, heap) : null;
    if (simd) {
      simd.forward(x.byteOffset, g.byteOffset, b.byteOffset, y.byteOffset, stats.byteOffset, n, d, LN_EPS);
      return;
    }
    for (let r = 0; r < n; r++) {
      const o = r * d;
      // One pass for both moments: in double precision, E[x²] − mean² loses nothing that matters
      // for float32 inputs, and it saves a pass over the row (measured 20% faster).
      let sum = 0;
      let sum2 = 0;
      for (let j = 0; j < d; j++) {
        const v = x[o + j];
        sum += v;
        sum2 += v * v;
      }
      const mean = sum / d;
      const rstd = 1 / Math.sqrt(Math.max(0, sum2 / d - mean * mean) + LN_EPS);
      const shift = -mean * rstd;
      for (let j = 0; j < d; j++) y[o + j] = (x[o + j] * rstd + shift) * g[j] + b[j];
      stats[2 * r] = mean;
      stats[2 * r + 1] = rstd;
    }
  },
});

/**
 * dy, x, stats, gain → dx, d gain, d bias. With x̂ = (x − μ)/σ and g = dy ⊙ gain:
 * dx = (g − mean(g) − x̂ · mean(g ⊙ x̂)) / σ, d gain = Σ_rows dy ⊙ x̂, d bias = Σ_rows dy.
 */
const LAYER_NORM_BACKWARD = defineJsKernel({
  name: 'WhetstoneLayerNormBackward',
  outputShapes: ([dy]) => [dy, [dy[1]], [dy[1]]],
  compute([dy, x, stats, gain], [dx, dgain, dbias], [[n, d]], _a, heap) {
    const native = nativeKernels();
    if (native) {
      native.layerNormBackward(dy as Float32Array, x as Float32Array, stats as Float32Array, gain as Float32Array, dx, dgain, dbias, n, d);
      return;
    }
    const simd = d % 4 === 0 ? simdModule<LayerNormWasm>(LAYER_NORM_WASM, heap) : null;
    if (simd) {
      simd.backward(dy.byteOffset, x.byteOffset, stats.byteOffset, gain.byteOffset, dx.byteOffset, dgain.byteOffset, dbias.byteOffset, n, d);
      return;
    }
    // Column sums in double-precision locals (measured 20% faster than accumulating in the
    // float32 outputs, and more accurate).
    const sumGain = new Float64Array(d);
    const sumBias = new Float64Array(d);
    for (let r = 0; r < n; r++) {
      const o = r * d;
      const mean = stats[2 * r];
      const rstd = stats[2 * r + 1];
      let sg = 0;
      let sgx = 0;
      for (let j = 0; j < d; j++) {
        const dyj = dy[o + j];
        const xhat = (x[o + j] - mean) * rstd;
        const gj = dyj * gain[j];
        sg += gj;
        sgx += gj * xhat;
        sumGain[j] += dyj * xhat;
        sumBias[j] += dyj;
      }
      const shift = (-sg / d) * rstd;
      const slope = (sgx / d) * rstd;
      for (let j = 0; j < d; j++) dx[o + j] = dy[o + j] * gain[j] * rstd + shift - (x[o + j] - mean) * rstd * slope;
    }
    for (let j = 0; j < d; j++) {
      dgain[j] = sumGain[j];
      dbias[j] = sumBias[j];
    }
  },
});

/** Layer norm over the last axis of [n, d] in one pass forward and one backward. */
export const fusedLayerNorm = tf.customGrad(((x: tf.Tensor, gain: tf.Tensor, bias: tf.Tensor, save: tf.GradSaveFunc) => {
  const [y, stats] = runJsKernel(LAYER_NORM, [x, gain, bias]);
  const saved = saveForGradient(save, [x, stats, gain]);
  return {
    value: y,
    gradFunc: (dy: tf.Tensor, clones: tf.Tensor[]) => runJsKernel(LAYER_NORM_BACKWARD, [dy, ...saved(clones)]),
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D, g: tf.Tensor1D, b: tf.Tensor1D) => tf.Tensor2D;

/** Layer norm's forward alone (no gradient recorded): the statistics are dropped at once. */
export function layerNormForward(x: tf.Tensor2D, gain: tf.Tensor1D, bias: tf.Tensor1D): tf.Tensor2D {
  const [y, stats] = runJsKernel(LAYER_NORM, [x, gain, bias]);
  stats.dispose();
  return y as tf.Tensor2D;
}

/** Native RMSNorm (native/src/elementwise.cc): x, gain → y and rstd [n] (1/√(mean x² + ε) per row). */
const RMS_NORM = defineJsKernel({
  name: 'WhetstoneNativeRmsNorm',
  outputShapes: ([x]) => [x, [x[0]]],
  compute([x, gain], [y, rstd], [[n, d]], a) {
    nativeKernels()!.rmsNormForward(x as Float32Array, gain as Float32Array, y, rstd, n, d, (a as { eps: number }).eps);
  },
});

/** dy, x, rstd, gain → dx, d gain (x̂ = x · rstd: dx = rstd · (dy·gain − x̂ · mean(dy·gain·x̂)), d gain = Σ_rows dy·x̂). */
const RMS_NORM_BACKWARD = defineJsKernel({
  name: 'WhetstoneNativeRmsNormBackward',
  outputShapes: ([dy, , , gain]) => [dy, gain],
  compute([dy, x, rstd, gain], [dx, dgain], [[n, d]]) {
    nativeKernels()!.rmsNormBackward(dy as Float32Array, x as Float32Array, rstd as Float32Array, gain as Float32Array, dx, dgain, n, d);
  },
});

/** True where `nativeRmsNorm`, `nativeSwiglu` and `nativeLoraLinear` run: the native kernels are active. */
export function nativeDecoderOpsAvailable(): boolean {
  return nativeKernels() !== null;
}

/**
 * RMSNorm over the last axis of [n, d] (the pretrained decoders), one native pass forward and one
 * backward, in place of ~6 kernels forward and ~12 backward, each saving (copying) its inputs for
 * tfjs's autodiff. Only where `nativeDecoderOpsAvailable()`.
 */
export function nativeRmsNorm(x: tf.Tensor2D, gain: tf.Tensor1D, eps: number): tf.Tensor2D {
  if (!recordingGradients()) {
    const [y, rstd] = runJsKernel(RMS_NORM, [x, gain], { eps });
    rstd.dispose();
    return y as tf.Tensor2D;
  }
  const op = tf.customGrad(((xi: tf.Tensor, g: tf.Tensor, save: tf.GradSaveFunc) => {
    const [y, rstd] = runJsKernel(RMS_NORM, [xi, g], { eps });
    const saved = saveForGradient(save, [xi, rstd, g]);
    return { value: y, gradFunc: (dy: tf.Tensor, s: tf.Tensor[]) => runJsKernel(RMS_NORM_BACKWARD, [dy, ...saved(s)]) };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D, g: tf.Tensor1D) => tf.Tensor2D;
  return op(x, gain);
}

/** Native SwiGLU product: gate, up → silu(gate) · up. */
const SWIGLU = defineJsKernel({
  name: 'WhetstoneNativeSwiglu',
  outputShapes: ([gate]) => [gate],
  compute([gate, up], [z]) {
    nativeKernels()!.swigluForward(gate as Float32Array, up as Float32Array, z);
  },
});

/** dz, gate, up → d gate, d up. */
const SWIGLU_BACKWARD = defineJsKernel({
  name: 'WhetstoneNativeSwigluBackward',
  outputShapes: ([dz]) => [dz, dz],
  compute([dz, gate, up], [dgate, dup]) {
    nativeKernels()!.swigluBackward(dz as Float32Array, gate as Float32Array, up as Float32Array, dgate, dup);
  },
});

/**
 * silu(gate) · up (SwiGLU's product, silu(g) = g·σ(g)) as one native pass each way, in place of a
 * sigmoid and two products forward and their gradients (~8 kernels) backward. Only where
 * `nativeDecoderOpsAvailable()`.
 */
export function nativeSwiglu(gate: tf.Tensor2D, up: tf.Tensor2D): tf.Tensor2D {
  if (!recordingGradients()) return runJsKernel(SWIGLU, [gate, up])[0] as tf.Tensor2D;
  const op = tf.customGrad(((g: tf.Tensor, u: tf.Tensor, save: tf.GradSaveFunc) => {
    const saved = saveForGradient(save, [g, u]);
    return { value: runJsKernel(SWIGLU, [g, u])[0], gradFunc: (dz: tf.Tensor, s: tf.Tensor[]) => runJsKernel(SWIGLU_BACKWARD, [dz, ...saved(s)]) };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (g: tf.Tensor2D, u: tf.Tensor2D) => tf.Tensor2D;
  return op(gate, up);
}

/** x, w, a, b (, bias) → y = x·w (+ bias) + scale·(x·a)·b, and x·a (saved for the backward). */
const LORA_LINEAR = defineJsKernel({
  name: 'WhetstoneNativeLoraLinear',
  outputShapes: ([x, w, a]) => [
    [x[0], w[1]],
    [x[0], a[1]],
  ],
  compute([x, w, a, b, bias], [y, xa], [[n, inDim], [, outDim], [, r]], { scale }) {
    nativeKernels()!.loraLinearForward(x as Float32Array, w as Float32Array, (bias as Float32Array | undefined) ?? null, a as Float32Array, b as Float32Array, scale as number, y, xa, n, inDim, outDim, r);
  },
});

/** dy, x, x·a, w, a, b → dx, da, db (w and its bias are frozen: no gradient). */
const LORA_LINEAR_BACKWARD = defineJsKernel({
  name: 'WhetstoneNativeLoraLinearBackward',
  outputShapes: ([, x, , , a, b]) => [x, a, b],
  compute([dy, x, xa, w, a, b], [dx, da, db], [, [n, inDim], , , [, r], [, outDim]], { scale }) {
    nativeKernels()!.loraLinearBackward(dy as Float32Array, x as Float32Array, xa as Float32Array, w as Float32Array, a as Float32Array, b as Float32Array, scale as number, dx, da, db, n, inDim, outDim, r);
  },
});

/**
 * A frozen projection w (bias) with its LoRA adapter a [in, r], b [r, out] of scale s,
 * x·w (+ bias) + s·(x·a)·b, as one native call each way (native/src/lora.cc), in place of eight
 * products, two scales and two sums per projection, each a kernel dispatch. The tape keeps x and
 * x·a without copying them (saveForGradient). Only where `nativeDecoderOpsAvailable()`; w and the
 * bias must outlive the backward, as variables do.
 */
export function nativeLoraLinear(x: tf.Tensor2D, w: tf.Tensor2D, bias: tf.Tensor1D | undefined, a: tf.Tensor2D, b: tf.Tensor2D, scale: number): tf.Tensor2D {
  const forward = (input: tf.Tensor, A: tf.Tensor, B: tf.Tensor) => runJsKernel(LORA_LINEAR, bias ? [input, w, A, B, bias] : [input, w, A, B], { scale });
  if (!recordingGradients()) {
    const [y, xa] = forward(x, a, b);
    xa.dispose();
    return y as tf.Tensor2D;
  }
  const op = tf.customGrad(((input: tf.Tensor, A: tf.Tensor, B: tf.Tensor, save: tf.GradSaveFunc) => {
    const [y, xa] = forward(input, A, B);
    const saved = saveForGradient(save, [input, xa, A, B]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, s: tf.Tensor[]) => {
        const [sx, sxa, sA, sB] = saved(s);
        return runJsKernel(LORA_LINEAR_BACKWARD, [dy, sx, sxa, w, sA, sB], { scale });
      },
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D, a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor2D;
  return op(x, a, b);
}

interface GeluWasm {
  argument(x: number, out: number, n: number): void;
  backward(dy: number, x: number, s: number, dx: number, n: number): void;
}

/** True where the GELU kernels below run: the wasm backend with SIMD, and a size that is a multiple of 4. */
export function simdGeluAvailable(size: number): boolean {
  return size % 4 === 0 && simdModule(GELU_WASM) !== null;
}

/** x → 2u = 2c(x + a x³), the argument of GELU's sigmoid. */
const GELU_ARGUMENT = defineJsKernel({
  name: 'WhetstoneGeluArgument',
  outputShapes: ([x]) => [x],
  compute([x], [out], _s, _a, heap) {
    requireSimdModule<GeluWasm>(GELU_WASM, heap, 'WhetstoneGeluArgument').argument(x.byteOffset, out.byteOffset, x.length);
  },
});

/** dy, x, s = σ(2u) → dx. */
const GELU_BACKWARD = defineJsKernel({
  name: 'WhetstoneGeluBackward',
  outputShapes: ([dy]) => [dy],
  compute([dy, x, s], [dx], _s, _a, heap) {
    requireSimdModule<GeluWasm>(GELU_WASM, heap, 'WhetstoneGeluBackward').backward(dy.byteOffset, x.byteOffset, s.byteOffset, dx.byteOffset, x.length);
  },
});

/** Native (native/src/elementwise.cc): x → GELU(x) and s = σ(2u), one pass on the pool's threads. */
const NATIVE_GELU = defineJsKernel({
  name: 'WhetstoneNativeGelu',
  outputShapes: ([x]) => [x, x],
  compute([x], [y, s]) {
    nativeKernels()!.geluForward(x as Float32Array, y, s);
  },
});

/** Native: dy, x, s → dx. */
const NATIVE_GELU_BACKWARD = defineJsKernel({
  name: 'WhetstoneNativeGeluBackward',
  outputShapes: ([dy]) => [dy],
  compute([dy, x, s], [dx]) {
    nativeKernels()!.geluBackward(dy as Float32Array, x as Float32Array, s as Float32Array, dx);
  },
});

/** True where the native GELU runs (the native kernels are active). */
export function nativeGeluAvailable(): boolean {
  return nativeKernels() !== null;
}

/** GELU(x) and s = σ(2u) (for `nativeGeluBackward`) in one native pass. */
export function nativeGelu(x: tf.Tensor): [tf.Tensor, tf.Tensor] {
  const [y, s] = runJsKernel(NATIVE_GELU, [x]);
  return [y, s];
}

/** dy · GELU'(x) given s from `nativeGelu`. */
export function nativeGeluBackward(dy: tf.Tensor, x: tf.Tensor, s: tf.Tensor): tf.Tensor {
  return runJsKernel(NATIVE_GELU_BACKWARD, [dy, x, s])[0];
}

/**
 * GELU's elementwise parts as SIMD passes (wasm/gelu.wat) for ops.ts's GELU, where
 * `simdGeluAvailable`: the argument 2u of its sigmoid (one pass instead of 4 kernels; σ itself is
 * wasm's Sigmoid) and its gradient (one pass instead of 9 kernels).
 */
export function simdGeluArgument(x: tf.Tensor): tf.Tensor {
  return runJsKernel(GELU_ARGUMENT, [x])[0];
}

/** dy · GELU'(x), given s = σ(2u) from the forward. See `simdGeluArgument`. */
export function simdGeluBackward(dy: tf.Tensor, x: tf.Tensor, s: tf.Tensor): tf.Tensor {
  return runJsKernel(GELU_BACKWARD, [dy, x, s])[0];
}

interface TargetLogpWasm {
  forward(x: number, p: number, targets: number, diff: number, pmax: number, n: number, V: number): void;
  backward(g: number, p: number, targets: number, dx: number, n: number, V: number): void;
}

/**
 * logits [n, V], p = softmax(logits), targets [n] → log p(target) [n]. log-softmax without a
 * second exponential: with m the row maximum, p_max = e^{m − lse}, so log p_t = x_t − m + log p_max
 * (p_max ≥ 1/V never underflows, unlike p_t itself). The second output is scratch ([n], p_max).
 */
const TARGET_LOGP = defineJsKernel({
  name: 'WhetstoneTargetLogProb',
  outputShapes: ([x]) => [[x[0]], [x[0]]],
  compute([x, p, targets], [out, pmax], [[n, V]], _a, heap) {
    // On wasm the row maxima are a SIMD loop (wasm/target-logp.wat), as is the gradient.
    const simd = simdModule<TargetLogpWasm>(TARGET_LOGP_WASM, heap);
    if (simd) {
      simd.forward(x.byteOffset, p.byteOffset, targets.byteOffset, out.byteOffset, pmax.byteOffset, n, V);
      for (let r = 0; r < n; r++) out[r] += Math.log(pmax[r]);
      return;
    }
    for (let r = 0; r < n; r++) {
      const o = r * V;
      let arg = 0;
      for (let j = 1; j < V; j++) if (x[o + j] > x[o + arg]) arg = j;
      pmax[r] = p[o + arg];
      out[r] = x[o + targets[r]] - x[o + arg] + Math.log(pmax[r]);
    }
  },
});

/** dlogp [n], p [n, V], targets [n] → d logits = dlogp · (onehot(target) − p). */
const TARGET_LOGP_BACKWARD = defineJsKernel({
  name: 'WhetstoneTargetLogProbBackward',
  outputShapes: ([, p]) => [p],
  compute([g, p, targets], [dx], [, [n, V]], _a, heap) {
    const simd = simdModule<TargetLogpWasm>(TARGET_LOGP_WASM, heap);
    if (simd) {
      simd.backward(g.byteOffset, p.byteOffset, targets.byteOffset, dx.byteOffset, n, V);
      return;
    }
    for (let r = 0; r < n; r++) {
      const o = r * V;
      const gr = g[r];
      for (let j = 0; j < V; j++) dx[o + j] = -gr * p[o + j];
      dx[o + targets[r]] += gr;
    }
  },
});

/** Native (native/src/logprob.cc): logits [n, V], targets [n] → log p(target) [n] and the rows' log-sum-exp [n]. */
const NATIVE_TARGET_LOGP = defineJsKernel({
  name: 'WhetstoneNativeTargetLogProb',
  outputShapes: ([x]) => [[x[0]], [x[0]]],
  compute([x, targets], [logp, lse], [[n, V]]) {
    nativeKernels()!.targetLogProbForward(x as Float32Array, targets as Int32Array, logp, lse, n, V);
  },
});

/** Native: d logp [n], logits, lse, targets → d logits = d logp · (onehot(target) − softmax(logits)). */
const NATIVE_TARGET_LOGP_BACKWARD = defineJsKernel({
  name: 'WhetstoneNativeTargetLogProbBackward',
  outputShapes: ([, x]) => [x],
  compute([g, x, lse, targets], [dx], [, [n, V]]) {
    nativeKernels()!.targetLogProbBackward(g as Float32Array, x as Float32Array, lse as Float32Array, targets as Int32Array, dx, n, V);
  },
});

/**
 * The native target log-probabilities: one pass forward (row maximum, log-sum-exp, the target's
 * logit) and one backward (the softmax recomputed from the logits and the saved log-sum-exp), on the
 * pool's threads, in place of wasm's softmax, a pass over it and its saved (copied) probabilities.
 */
function nativeTargetLogProbs(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  if (!recordingGradients()) {
    const [logp, lse] = runJsKernel(NATIVE_TARGET_LOGP, [logits, targets]);
    lse.dispose();
    return logp as tf.Tensor1D;
  }
  const op = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
    const [logp, lse] = runJsKernel(NATIVE_TARGET_LOGP, [x, targets]);
    const saved = saveForGradient(save, [x, lse, targets]);
    return {
      value: logp,
      gradFunc: (dy: tf.Tensor, clones: tf.Tensor[]) => runJsKernel(NATIVE_TARGET_LOGP_BACKWARD, [dy, ...saved(clones)])[0],
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D) => tf.Tensor1D;
  return op(logits);
}

/** Log-probability of each target under logits [n, V] → [n]: one softmax kernel and one pass (natively, one pass). */
export function fusedTargetLogProbs(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  if (nativeKernels() && targets.dtype === 'int32') return nativeTargetLogProbs(logits, targets);
  const op = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
    const p = tf.softmax(x);
    const saved = saveForGradient(save, [p, targets]);
    const [logp, scratch] = runJsKernel(TARGET_LOGP, [x, p, targets]);
    scratch.dispose();
    return {
      value: logp,
      gradFunc: (dy: tf.Tensor, clones: tf.Tensor[]) => runJsKernel(TARGET_LOGP_BACKWARD, [dy, ...saved(clones)])[0],
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (x: tf.Tensor2D) => tf.Tensor1D;
  return op(logits);
}

interface EmbedWasm {
  forward(wte: number, ids: number, wpe: number, positions: number, out: number, n: number, d: number): void;
  backward(dy: number, ids: number, positions: number, dwte: number, dwpe: number, n: number, d: number, vocab: number, ctx: number): void;
}

/** wte [V, d], ids [N], wpe [ctx, d], positions [N] → rows wte[id] + wpe[position]. */
const EMBED = defineJsKernel({
  name: 'WhetstoneEmbed',
  outputShapes: ([wte, ids]) => [[ids[0], wte[1]]],
  compute([wte, ids, wpe, positions], [out], [[, d], [n]], _a, heap) {
    // On wasm both directions are SIMD loops over the rows (wasm/embed.wat).
    const simd = d % 4 === 0 ? simdModule<EmbedWasm>(EMBED_WASM, heap) : null;
    if (simd) {
      simd.forward(wte.byteOffset, ids.byteOffset, wpe.byteOffset, positions.byteOffset, out.byteOffset, n, d);
      return;
    }
    for (let i = 0; i < n; i++) {
      const src = ids[i] * d;
      const pos = positions[i] * d;
      const dst = i * d;
      for (let j = 0; j < d; j++) out[dst + j] = wte[src + j] + wpe[pos + j];
    }
  },
});

/** dy [N, d], ids [N], positions [N] → d wte, d wpe: dy's rows scattered-added into each table. */
const EMBED_BACKWARD = defineJsKernel({
  name: 'WhetstoneEmbedBackward',
  outputShapes: (_s, a) => [a.wteShape as number[], a.wpeShape as number[]],
  compute([dy, ids, positions], [dwte, dwpe], [[n, d]], _a, heap) {
    const simd = d % 4 === 0 ? simdModule<EmbedWasm>(EMBED_WASM, heap) : null;
    if (simd) {
      simd.backward(dy.byteOffset, ids.byteOffset, positions.byteOffset, dwte.byteOffset, dwpe.byteOffset, n, d, dwte.length / d, dwpe.length / d);
      return;
    }
    dwte.fill(0);
    dwpe.fill(0);
    for (let i = 0; i < n; i++) {
      const src = i * d;
      const tokenRow = ids[i] * d;
      const posRow = positions[i] * d;
      for (let j = 0; j < d; j++) {
        dwte[tokenRow + j] += dy[src + j];
        dwpe[posRow + j] += dy[src + j];
      }
    }
  },
});

/**
 * Token plus position embeddings for ids [N] at positions [N]: a gather and its scatter-add
 * gradient in one pass each, instead of one-hot matmuls (and their gradient matmuls) plus a
 * broadcast add and a column sum.
 */
export function fusedEmbed(wte: tf.Tensor2D, wpe: tf.Tensor2D, ids: tf.Tensor1D, positions: tf.Tensor1D): tf.Tensor2D {
  if (!recordingGradients()) return runJsKernel(EMBED, [wte, ids, wpe, positions])[0] as tf.Tensor2D;
  const attrs = { wteShape: wte.shape, wpeShape: wpe.shape };
  const op = tf.customGrad(((tokenTable: tf.Tensor, positionTable: tf.Tensor, save: tf.GradSaveFunc) => {
    save([ids, positions]);
    return {
      value: runJsKernel(EMBED, [tokenTable, ids, positionTable, positions])[0],
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => runJsKernel(EMBED_BACKWARD, [dy, ...saved], attrs),
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]) as unknown as (a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor2D;
  return op(wte, wpe);
}

/**
 * Native: dy [n, out], x [n, in], w [in, out] → dx = dy·wᵀ, dw = xᵀ·dy, db = Σ_rows dy: a linear
 * layer's whole backward as one kernel instead of three products and a ones vector (tfjs's
 * dispatch and tape cost about as much as a small model's products). The same products, so the same
 * bits, as the separate kernels.
 */
const NATIVE_LINEAR_BACKWARD = defineJsKernel({
  name: 'WhetstoneNativeLinearBackward',
  outputShapes: ([dy, x, w]) => [x, w, [dy[1]]],
  compute([dy, x, w], [dx, dw, db], [[n, out], [, inner]]) {
    const native = nativeKernels()!;
    const g = dy as Float32Array;
    native.gemm(g, w as Float32Array, dx, null, 1, n, inner, out, false, true, 0, 0, false);
    native.gemm(x as Float32Array, g, dw, null, 1, inner, out, n, true, false, 0, 0, false);
    native.columnSums(g, db, n, out);
  },
});

/** A linear layer's gradients [dx, dw, db] in one native kernel; only where the native kernels are active. */
export function nativeLinearBackward(dy: tf.Tensor2D, x: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor[] {
  return runJsKernel(NATIVE_LINEAR_BACKWARD, [dy, x, w]);
}
