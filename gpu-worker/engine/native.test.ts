/**
 * The native products (native.ts) against the wasm backend's own kernels and the cpu backend: values
 * and gradients on random shapes (1, odd and prime sizes, K across the kernel's blocks, transposes,
 * batches that broadcast, bias and ReLU), every microkernel this CPU can run, results independent of
 * the thread count, the cases left to the wasm kernels, training that matches wasm, no leaks, and
 * the fallback when the addon is off or cannot load.
 *
 * Without the addon the file is skipped with a message, except under CI=true (where `npm ci` must
 * have built it). Under WHETSTONE_NATIVE=0 (scripts/test.sh runs the engine's tests so too) it is
 * skipped: that run tests the wasm kernels.
 */
import * as tf from '@tensorflow/tfjs';
import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simdCausalSelfAttention } from './attention';
import { initBackend } from './backend';
import { setJsKernelsEnabled, wasmHeap } from './kernels';
import { gelu, layerNorm, linear2d, loraLinear2d, targetLogProbs } from './ops';
import { GPT } from './model';
import { Adam, sumOfSquares } from './optim';
import { NATIVE_ADDON_PATH, configureNative, nativeKernels, nativeProductsActive, nativeStatus, setNativeKernelsEnabled } from './native';
import { Rng } from './rng';
import { chooseToken } from './sampler';
import { SFTTrainer } from './sft';
import { CharTokenizer } from './tokenizer';
import { randomBatch } from './tools/step-input';

const off = process.env.WHETSTONE_NATIVE === '0';
const status = nativeStatus();
if (!status.loaded && !off) {
  if (process.env.CI === 'true') throw new Error(`CI=true and the native kernels did not load: ${status.reason}`);
  console.warn(`native kernel tests skipped: ${status.reason}`);
}
const run = status.loaded && !off;
const kernels = status.loaded ? ['avx512', 'avx2', 'portable'].filter((k) => (k === 'avx512' ? status.features.includes('avx512f') : k === 'avx2' ? status.features.includes('fma') : true)) : [];

beforeAll(async () => {
  await initBackend('wasm');
});
afterAll(() => {
  setNativeKernelsEnabled(true);
  if (status.loaded) configureNative({ threads: status.threads, kernel: status.kernel });
});

interface Case {
  m: number;
  n: number;
  k: number;
  batchA: number[];
  batchB: number[];
  transA: boolean;
  transB: boolean;
  bias: boolean;
  relu: boolean;
  seed: number;
}

// Sizes around the microkernels' tiles (4, 6, 14 rows; 16, 32 columns), primes, and K past a block (512; 640 for one row block).
const size = fc.constantFrom(1, 2, 3, 5, 7, 11, 13, 14, 15, 16, 17, 31, 32, 33, 47, 64, 97);
const caseArb: fc.Arbitrary<Case> = fc.record({
  m: size,
  n: size,
  k: fc.oneof(size, fc.constantFrom(255, 511, 512, 513, 640, 641, 1031)),
  // Batch dimensions: none, equal, or one side a single matrix (broadcast).
  batches: fc.constantFrom<[number[], number[]]>([[], []], [[3], [3]], [[2, 3], [2, 3]], [[4], []], [[], [5]], [[1], [3]], [[2, 2], [1]]),
  transA: fc.boolean(),
  transB: fc.boolean(),
  bias: fc.boolean(),
  relu: fc.boolean(),
  seed: fc.integer({ min: 1, max: 1e6 }),
}).map(({ batches: [batchA, batchB], ...rest }) => ({ ...rest, batchA, batchB }));

function operands(c: Case) {
  const rng = new Rng(c.seed);
  const make = (shape: number[]) => Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rng.normal());
  const aShape = [...c.batchA, ...(c.transA ? [c.k, c.m] : [c.m, c.k])];
  const bShape = [...c.batchB, ...(c.transB ? [c.n, c.k] : [c.k, c.n])];
  return { a: make(aShape), aShape, b: make(bShape), bShape, bias: make([c.n]) };
}

/** The product on the current backend: fused (bias, activation) when asked, else tf.matMul. */
function product(c: Case): Float32Array {
  const o = operands(c);
  return tf.tidy(() => {
    const a = tf.tensor(o.a, o.aShape);
    const b = tf.tensor(o.b, o.bShape);
    const out =
      c.bias || c.relu
        ? tf.fused.matMul({ a, b, transposeA: c.transA, transposeB: c.transB, bias: c.bias ? tf.tensor1d(o.bias) : undefined, activation: c.relu ? 'relu' : 'linear' })
        : tf.matMul(a, b, c.transA, c.transB);
    return out.dataSync() as Float32Array;
  });
}

function expectClose(got: Float32Array, want: Float32Array, k: number, what: string): void {
  expect(got.length, what).toBe(want.length);
  // Sums of k products of unit normals: rounding grows with √k.
  const tol = 1e-5 * Math.sqrt(k + 1);
  let worst = 0;
  for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
  expect(worst, what).toBeLessThan(tol);
}

async function onCpu<T>(fn: () => T): Promise<T> {
  await tf.setBackend('cpu');
  try {
    return fn();
  } finally {
    await tf.setBackend('wasm');
  }
}

describe.runIf(run)('native products', () => {
  it('are installed in place of the wasm kernels', () => {
    expect(nativeProductsActive()).toBe(true);
    setNativeKernelsEnabled(false);
    expect(nativeProductsActive()).toBe(false);
    setNativeKernelsEnabled(true);
  });

  it.each(kernels)('equal the wasm and cpu kernels on random shapes (%s microkernel)', async (kernel) => {
    configureNative({ kernel });
    const cases = fc.sample(caseArb, { numRuns: 60, seed: kernel.length });
    for (const c of cases) {
      const native = product(c);
      setNativeKernelsEnabled(false);
      const wasm = product(c);
      setNativeKernelsEnabled(true);
      const cpu = await onCpu(() => product(c));
      expectClose(native, cpu, c.k, `${kernel} vs cpu ${JSON.stringify(c)}`);
      // tfjs-backend-wasm 4.22's _FusedMatMul is wrong with transposes and with batch dimensions
      // (checked against cpu): for fused products the cpu kernel alone is the reference.
      if (!c.bias && !c.relu) expectClose(native, wasm, c.k, `${kernel} vs wasm ${JSON.stringify(c)}`);
    }
    configureNative({ kernel: status.loaded ? status.kernel : 'portable' });
  });

  it('give the same bits on one thread and on several', () => {
    const c: Case = { m: 301, n: 203, k: 517, batchA: [], batchB: [], transA: false, transB: true, bias: true, relu: false, seed: 7 };
    const batched: Case = { m: 31, n: 17, k: 64, batchA: [12], batchB: [12], transA: true, transB: false, bias: false, relu: false, seed: 8 };
    configureNative({ threads: 1 });
    const one = [product(c), product(batched)];
    configureNative({ threads: 3 });
    const three = [product(c), product(batched)];
    configureNative({ threads: status.loaded ? status.threads : 1 });
    expect(Buffer.from(three[0].buffer).equals(Buffer.from(one[0].buffer))).toBe(true);
    expect(Buffer.from(three[1].buffer).equals(Buffer.from(one[1].buffer))).toBe(true);
  });

  it('give a transposed B the bits of the same B laid out plainly (packing only copies, however it reads)', () => {
    // Shapes where a transposed B is packed in 16 × 16 blocks (whole strips, K past 16) and where
    // it is not: strip and K tails, the skinny path, several row blocks.
    const shapes = [[126, 576, 1536], [126, 100, 300], [5, 64, 17], [300, 97, 40], [12, 33, 15], [126, 8, 576], [40, 576, 8]];
    for (const [m, n, k] of shapes) {
      const rng = new Rng(m * n + k);
      const a = Float32Array.from({ length: m * k }, () => rng.normal());
      const bt = Float32Array.from({ length: n * k }, () => rng.normal());
      const b = new Float32Array(k * n);
      for (let j = 0; j < n; j++) for (let p = 0; p < k; p++) b[p * n + j] = bt[j * k + p];
      for (const threads of [1, 2]) {
        configureNative({ threads });
        const [plain, transposed] = tf.tidy(() => [
          tf.matMul(tf.tensor2d(a, [m, k]), tf.tensor2d(b, [k, n])).dataSync() as Float32Array,
          tf.matMul(tf.tensor2d(a, [m, k]), tf.tensor2d(bt, [n, k]), false, true).dataSync() as Float32Array,
        ]);
        expect(Buffer.from(transposed.buffer).equals(Buffer.from(plain.buffer)), `${m}×${n}×${k} on ${threads} threads`).toBe(true);
      }
    }
    configureNative({ threads: status.loaded ? status.threads : 1 });
  });

  it("give layer norm's gradients (column sums over rows) the same bits on one thread and on several", () => {
    const rng = new Rng(12);
    const x = tf.tensor(Float32Array.from({ length: 1000 * 48 }, () => rng.normal() + 3), [1000, 48]) as tf.Tensor2D;
    const g = tf.tensor(Float32Array.from({ length: 48 }, () => rng.normal()), [48]) as tf.Tensor1D;
    const b = tf.zeros([48]) as tf.Tensor1D;
    const grads = () => tf.grads((xx: tf.Tensor, gg: tf.Tensor, bb: tf.Tensor) => layerNorm(xx as tf.Tensor2D, gg as tf.Tensor1D, bb as tf.Tensor1D).mul(xx).sum())([x, g, b]).map((t) => t.dataSync() as Float32Array);
    configureNative({ threads: 1 });
    const one = grads();
    configureNative({ threads: 3 });
    const three = grads();
    configureNative({ threads: status.loaded ? status.threads : 1 });
    one.forEach((t, i) => expect(Buffer.from(three[i].buffer).equals(Buffer.from(t.buffer)), `gradient ${i}`).toBe(true));
    tf.dispose([x, g, b]);
  });

  it('give matmul gradients equal to the wasm kernels', () => {
    const rng = new Rng(4);
    const a = tf.tensor(Float32Array.from({ length: 3 * 37 * 19 }, () => rng.normal()), [3, 37, 19]);
    // (tfjs's own BatchMatMul gradient cannot reduce a broadcast batch: equal batches here.)
    const b = tf.tensor(Float32Array.from({ length: 3 * 19 * 23 }, () => rng.normal()), [3, 19, 23]);
    const grads = () => tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.matMul(x, y).square().sum())([a, b]).map((g) => g.dataSync() as Float32Array);
    const native = grads();
    setNativeKernelsEnabled(false);
    const wasm = grads();
    setNativeKernelsEnabled(true);
    expectClose(native[0], wasm[0], 19 * 23, 'dA');
    expectClose(native[1], wasm[1], 3 * 37 * 23, 'dB');
    tf.dispose([a, b]);
  });

  it('run Adam natively with the wasm kernels\' bits on any number of threads, and the gradient norm within rounding', async () => {
    // Sizes of one, odd and prime lengths, and one past the threads' threshold (2^18 floats).
    const shapes = [[1], [7], [13, 17], [64, 3], [300007]];
    const rng = new Rng(21);
    const random = (shape: number[], scale = 1) => Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rng.normal() * scale);
    const init = shapes.map((shape) => random(shape));
    const steps = [0, 1, 2].map(() => shapes.map((shape) => random(shape, 0.1)));
    // Above gradClip, so that the clipping scale takes part.
    const clipNorms = [1.7, 2.9, 0.5];
    const optim = { learningRate: 1e-2, warmupSteps: 0, totalSteps: 0, minLearningRateRatio: 0, beta1: 0.9, beta2: 0.95, epsilon: 1e-8, weightDecay: 0.1, gradClip: 1 };
    const train = async (native: boolean) => {
      setNativeKernelsEnabled(native);
      try {
        // Each variable owning its memory, as a model's do (the native step updates it in place).
        const vars = new Map(shapes.map((shape, i) => [`w${i}`, tf.tidy(() => tf.variable(tf.tensor(init[i], shape)))]));
        const adam = new Adam(vars, optim);
        const norms: number[] = [];
        const kernels = new Set<string>();
        for (const [s, step] of steps.entries()) {
          const grads = new Map(step.map((g, i) => [`w${i}`, tf.tensor(g, shapes[i])]));
          const sq = sumOfSquares([...grads.values()]);
          norms.push(Math.sqrt(sq.dataSync()[0]));
          sq.dispose();
          // Clipped by the same norm on both paths (the two sums of squares may differ in the last bit).
          (await tf.profile(() => adam.apply(grads, 1e-2, clipNorms[s]))).kernels.forEach((k) => kernels.add(k.name));
        }
        const out = [...vars.values(), ...adam.m.values(), ...adam.v.values()].map((t) => t.dataSync() as Float32Array);
        [...vars.values()].forEach((v) => v.dispose());
        adam.dispose();
        return { out, norms, kernels };
      } finally {
        setNativeKernelsEnabled(true);
      }
    };
    configureNative({ threads: 1 });
    const one = await train(true);
    configureNative({ threads: 3 });
    const three = await train(true);
    configureNative({ threads: status.loaded ? status.threads : 1 });
    const wasm = await train(false);
    expect(one.kernels.has('WhetstoneAdam'), 'the native step ran').toBe(false);
    expect(wasm.kernels.has('WhetstoneAdam'), 'the wasm step ran').toBe(true);
    one.out.forEach((t, i) => expect(Buffer.from(three.out[i].buffer).equals(Buffer.from(t.buffer)), `tensor ${i}, 1 and 3 threads`).toBe(true));
    expect(three.norms).toEqual(one.norms);
    one.norms.forEach((n, i) => expect(Math.abs(n - wasm.norms[i]) / wasm.norms[i], `norm ${i}`).toBeLessThan(1e-12));
    // The same arithmetic as the wasm path, to the bit (so that a run may switch between them).
    one.out.forEach((t, i) => expect(Buffer.from(wasm.out[i].buffer).equals(Buffer.from(t.buffer)), `tensor ${i}, native and wasm`).toBe(true));
  });

  it('give the target log-probabilities and layer norm, values and gradients, of the wasm and cpu kernels on random shapes, the same bits on any number of threads', async () => {
    // Rows and columns of 1, odd and prime sizes, a vocabulary past 16 lanes, one of 105 (the char tokenizer's), and enough logits for the threads (2^16).
    const shapes = [[1, 1], [1, 7], [3, 16], [5, 17], [31, 105], [64, 33], [97, 257], [301, 257]];
    const compute = (n: number, V: number, seed: number) => {
      const rng = new Rng(seed);
      const logits = tf.tensor2d(Float32Array.from({ length: n * V }, () => rng.normal() * 3), [n, V]);
      const targets = tf.tensor1d(Int32Array.from({ length: n }, () => rng.int(V)), 'int32');
      const weights = tf.tensor1d(Float32Array.from({ length: n }, () => rng.normal()));
      const gain = tf.tensor1d(Float32Array.from({ length: V }, () => rng.normal()));
      const bias = tf.tensor1d(Float32Array.from({ length: V }, () => rng.normal()));
      const out = tf.tidy(() => {
        const logp = targetLogProbs(logits, targets);
        const dLogits = tf.grad((x: tf.Tensor) => targetLogProbs(x as tf.Tensor2D, targets).mul(weights).sum())(logits);
        const y = layerNorm(logits, gain, bias);
        const lnGrads = tf.grads((x: tf.Tensor, g: tf.Tensor, b: tf.Tensor) => layerNorm(x as tf.Tensor2D, g as tf.Tensor1D, b as tf.Tensor1D).mul(x.sin()).sum())([logits, gain, bias]);
        return [logp, dLogits, y, ...lnGrads].map((t) => t.dataSync() as Float32Array);
      });
      tf.dispose([logits, targets, weights, gain, bias]);
      return out;
    };
    const names = ['log p', 'd logits', 'layer norm', 'layer norm dx', 'd gain', 'd bias'];
    for (const [i, [n, V]] of shapes.entries()) {
      configureNative({ threads: 1 });
      const one = compute(n, V, i);
      configureNative({ threads: 3 });
      const three = compute(n, V, i);
      configureNative({ threads: status.loaded ? status.threads : 1 });
      one.forEach((t, j) => expect(Buffer.from(three[j].buffer).equals(Buffer.from(t.buffer)), `${names[j]} [${n}, ${V}], 1 and 3 threads`).toBe(true));
      setNativeKernelsEnabled(false);
      const wasm = compute(n, V, i);
      setNativeKernelsEnabled(true);
      const cpu = await onCpu(() => compute(n, V, i));
      // Column sums (d gain, d bias) add n terms; the rest sum over a row of V.
      one.forEach((t, j) => {
        expectClose(t, wasm[j], j >= 4 ? n : V, `${names[j]} [${n}, ${V}] vs wasm`);
        expectClose(t, cpu[j], j >= 4 ? n : V, `${names[j]} [${n}, ${V}] vs cpu`);
      });
    }
  });

  it('give causal attention over several vectors of keys (T past 16 and 32) the plain ops\' values and gradients, the same bits on any number of threads', () => {
    // [B, T, H, hd]: odd and prime lengths, a head of 16 floats and one of 5 (no whole vectors), and
    // enough channels for the threads.
    for (const [B, T, H, hd] of [[2, 17, 2, 16], [3, 37, 3, 5], [1, 33, 1, 8], [16, 37, 4, 16]]) {
      const rng = new Rng(T);
      const d = H * hd;
      const qkv = tf.tensor2d(Float32Array.from({ length: B * T * 3 * d }, () => rng.normal()), [B * T, 3 * d]);
      const w = tf.tensor2d(Float32Array.from({ length: B * T * d }, () => rng.normal()), [B * T, d]);
      const plain = (x: tf.Tensor) => {
        const heads = (i: number) => x.slice([0, i * d], [B * T, d]).reshape([B, T, H, hd]).transpose([0, 2, 1, 3]);
        const scores = tf.matMul(heads(0), heads(1), false, true).mul(1 / Math.sqrt(hd));
        const causal = tf.linalg.bandPart(tf.ones([T, T]), -1, 0);
        const p = tf.softmax(scores.add(tf.sub(1, causal).mul(-1e9)));
        return tf.matMul(p, heads(2)).transpose([0, 2, 1, 3]).reshape([B * T, d]);
      };
      const run = (f: (x: tf.Tensor) => tf.Tensor) => tf.tidy(() => [f(qkv), tf.grad((x: tf.Tensor) => f(x).mul(w).sum())(qkv)].map((t) => t.dataSync() as Float32Array));
      const native = (x: tf.Tensor) => simdCausalSelfAttention(x as tf.Tensor2D, B, T, H);
      configureNative({ threads: 1 });
      const one = run(native);
      configureNative({ threads: 3 });
      const three = run(native);
      configureNative({ threads: status.loaded ? status.threads : 1 });
      const want = run(plain);
      ['y', 'd qkv'].forEach((name, i) => {
        expect(Buffer.from(three[i].buffer).equals(Buffer.from(one[i].buffer)), `${name} [${B}, ${T}, ${H}, ${hd}], 1 and 3 threads`).toBe(true);
        expectClose(one[i], want[i], T * hd, `${name} [${B}, ${T}, ${H}, ${hd}]`);
      });
      tf.dispose([qkv, w]);
    }
  });

  it("give a linear layer's gradients (one native kernel: dx, dw and the bias's column sums) of the wasm and cpu kernels", async () => {
    for (const [n, inner, out] of [[1, 1, 1], [7, 3, 5], [97, 64, 256], [1984, 64, 13]]) {
      const rng = new Rng(n + out);
      const t = (shape: number[]) => tf.tensor(Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rng.normal()), shape);
      const x = t([n, inner]) as tf.Tensor2D, w = t([inner, out]) as tf.Tensor2D, b = t([out]) as tf.Tensor1D, dy = t([n, out]);
      const grads = () => tf.tidy(() => tf.grads((xx: tf.Tensor, ww: tf.Tensor, bb: tf.Tensor) => linear2d(xx as tf.Tensor2D, ww as tf.Tensor2D, bb as tf.Tensor1D).mul(dy).sum())([x, w, b]).map((g) => g.dataSync() as Float32Array));
      const profile = await tf.profile(() => void grads());
      expect(profile.kernels.filter((k) => k.name === 'WhetstoneNativeLinearBackward'), `[${n}, ${inner}, ${out}]`).toHaveLength(1);
      const native = grads();
      setNativeKernelsEnabled(false);
      const wasm = grads();
      setNativeKernelsEnabled(true);
      const cpu = await onCpu(() => grads());
      ['dx', 'dw', 'db'].forEach((name, i) => {
        const k = [out, n, n][i];
        expectClose(native[i], wasm[i], k, `${name} [${n}, ${inner}, ${out}] vs wasm`);
        expectClose(native[i], cpu[i], k, `${name} [${n}, ${inner}, ${out}] vs cpu`);
      });
      tf.dispose([x, w, b, dy]);
    }
  });

  it("give LoRA's linear layer (one native call each way) the plain products' values and gradients, the same bits on any number of threads", () => {
    // Ranks below, at and past the 8 held in registers; widths with and without whole vectors.
    const shapes: Array<[n: number, inDim: number, outDim: number, r: number, bias: boolean]> = [
      [126, 576, 1536, 8, false],
      [126, 1536, 576, 8, true],
      [7, 33, 50, 3, true],
      [40, 100, 70, 13, false],
      [1, 16, 32, 1, false],
      [130, 64, 200, 16, true],
    ];
    for (const [n, inDim, outDim, r, hasBias] of shapes) {
      const rng = new Rng(n + inDim + outDim + r);
      const t = (shape: number[], scale = 1) => tf.tensor(Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => scale * rng.normal()), shape);
      const x = t([n, inDim]) as tf.Tensor2D, w = t([inDim, outDim], 0.05) as tf.Tensor2D, a = t([inDim, r], 0.1) as tf.Tensor2D, b = t([r, outDim], 0.1) as tf.Tensor2D;
      const bias = hasBias ? (t([outDim]) as tf.Tensor1D) : undefined;
      const probe = t([n, outDim]);
      const run = () =>
        tf.tidy(() => {
          const f = (xi: tf.Tensor, ai: tf.Tensor, bi: tf.Tensor) => loraLinear2d(xi as tf.Tensor2D, w, bias, ai as tf.Tensor2D, bi as tf.Tensor2D, 1.75).mul(probe).sum();
          const y = tf.tidy(() => loraLinear2d(x, w, bias, a, b, 1.75));
          const grads = tf.grads(f)([x, a, b]);
          return [y, ...grads].map((g) => g.dataSync() as Float32Array);
        });
      configureNative({ threads: 1 });
      const one = run();
      configureNative({ threads: 2 });
      const two = run();
      configureNative({ threads: status.loaded ? status.threads : 1 });
      setNativeKernelsEnabled(false); // the products through tfjs, on the wasm kernels
      const plain = run();
      setNativeKernelsEnabled(true);
      const what = `${n}×${inDim}→${outDim}, rank ${r}${hasBias ? ', bias' : ''}`;
      ['y', 'dx', 'da', 'db'].forEach((name, i) => {
        expect(Buffer.from(two[i].buffer).equals(Buffer.from(one[i].buffer)), `${name} on 1 and 2 threads, ${what}`).toBe(true);
        expectClose(one[i], plain[i], Math.max(inDim, outDim, n), `${name}, ${what}`);
      });
      tf.dispose([x, w, a, b, probe, ...(bias ? [bias] : [])]);
    }
  });

  it('GELU and its gradient equal the plain ops from far negative to far positive inputs', () => {
    const x = tf.linspace(-100, 100, 4001).concat(tf.linspace(-4, 4, 999)).reshape([100, 50]) as tf.Tensor2D;
    const run = (native: boolean) => {
      setJsKernelsEnabled(native); // off: the plain tensor ops
      try {
        return tf.tidy(() => {
          const [y, dx] = [gelu(x), tf.grad((v: tf.Tensor) => gelu(v as tf.Tensor2D).mul(v.sin()).sum())(x)];
          return [y.dataSync() as Float32Array, dx.dataSync() as Float32Array];
        });
      } finally {
        setJsKernelsEnabled(true);
      }
    };
    const [y, dx] = run(true);
    const [yPlain, dxPlain] = run(false);
    expectClose(y, yPlain, 1, 'GELU');
    expectClose(dx, dxPlain, 1, 'GELU gradient');
    x.dispose();
  });

  it.each([
    ['tied head, head size 16', { width: 32, heads: 2, tiedHead: true }],
    ['untied head, head size 3 (no whole vectors)', { width: 18, heads: 6, tiedHead: false }],
  ])("decode a step natively with the tfjs path's logits and cache (%s, left-padded prompts)", async (_name, shape) => {
    const model = new GPT({ vocabSize: 23, contextLength: 16, layers: 2, seed: 6, ...shape });
    const prompts = [[1, 4, 7, 2, 9], [3, 3], [5, 8, 1]];
    const decode = (native: boolean) => {
      setNativeKernelsEnabled(native);
      try {
        return tf.tidy(() => {
          // Prefill (the tfjs path either way) with room for two more positions, then two steps.
          const L = 5;
          const seqs = prompts.map((p) => [...new Array<number>(L - p.length).fill(0), ...p]);
          const keyMask = seqs.map((row, b) => row.map((_, j) => (j < L - prompts[b].length ? 0 : 1)));
          const pos = (b: number, j: number) => Math.max(0, j - (L - prompts[b].length));
          let r = model.forward(seqs, { positions: seqs.map((row, b) => row.map((_, j) => pos(b, j))), keyMask, returnCache: true, cacheCapacity: L + 2, lastOnly: true });
          const out: Float32Array[] = [];
          for (const next of [[2, 6, 11], [9, 9, 4]]) {
            seqs.forEach((row, b) => (row.push(next[b]), keyMask[b].push(1)));
            const length = seqs[0].length;
            r = model.forward(next.map((t) => [t]), { positions: next.map((_, b) => [pos(b, length - 1)]), keyMask, cache: r.cache, returnCache: true, cacheCapacity: L + 2, lastOnly: true });
            out.push(r.logits.dataSync() as Float32Array);
          }
          out.push(r.cache!.keys[1].dataSync() as Float32Array, r.cache!.values[1].dataSync() as Float32Array);
          return out;
        });
      } finally {
        setNativeKernelsEnabled(true);
      }
    };
    let native: Float32Array[] = [];
    const profile = await tf.profile(() => void (native = decode(true)));
    expect(profile.kernels.filter((k) => k.name === 'WhetstoneNativeDecodeStep')).toHaveLength(2);
    const plain = decode(false);
    native.forEach((t, i) => expectClose(t, plain[i], 64, ['logits, step 1', 'logits, step 2', 'keys', 'values'][i]));
    model.dispose();
  });

  it('leave what they do not handle to the wasm kernels, with the same results', () => {
    const rng = new Rng(5);
    const t = (shape: number[]) => tf.tensor(Float32Array.from({ length: shape.reduce((x, y) => x * y, 1) }, () => rng.normal()), shape);
    // Batch dimensions that broadcast both ways; PReLU and leaky ReLU activations; empty products.
    const a = t([2, 1, 5, 4]), b = t([1, 3, 4, 6]), w = t([4, 6]), alpha = t([6]), bias = t([6]);
    const x = t([5, 4]);
    const cases = () => [
      tf.matMul(a, b),
      tf.fused.matMul({ a: x, b: w, activation: 'prelu', preluActivationWeights: alpha }),
      tf.fused.matMul({ a: x, b: w, bias, activation: 'leakyrelu', leakyreluAlpha: 0.1 }),
      tf.matMul(tf.zeros([0, 4]), w),
      tf.matMul(tf.zeros([3, 0]), tf.zeros([0, 2])),
    ].map((r) => ({ shape: r.shape, data: r.dataSync() as Float32Array }));
    const native = tf.tidy(cases);
    setNativeKernelsEnabled(false);
    const wasm = tf.tidy(cases);
    setNativeKernelsEnabled(true);
    native.forEach((r, i) => {
      expect(r.shape, `case ${i}`).toEqual(wasm[i].shape);
      expectClose(r.data, wasm[i].data, 4, `case ${i}`);
    });
    expect(native[4].data).toEqual(new Float32Array(6));
    tf.dispose([a, b, w, alpha, bias, x]);
  });

  it('train a model to the loss the wasm kernels reach in 50 steps, with no tensor growth', async () => {
    const tok = new CharTokenizer();
    const train = async (native: boolean) => {
      setNativeKernelsEnabled(native);
      const model = new GPT({ vocabSize: tok.vocabSize, layers: 2, width: 32, heads: 2, contextLength: 16, seed: 3 });
      const trainer = new SFTTrainer(model, { warmupSteps: 0 });
      const data = randomBatch(tok, new Rng(9), 8, 16);
      let loss = 0;
      let first = 0;
      let tensors = 0;
      for (let step = 0; step < 50; step++) {
        loss = (await trainer.stepAsync(data)).loss;
        if (step === 0) first = loss;
        if (step === 4) tensors = tf.memory().numTensors;
      }
      expect(tf.memory().numTensors, 'tensors after 50 steps').toBe(tensors);
      trainer.dispose();
      model.dispose();
      setNativeKernelsEnabled(true);
      return { first, loss };
    };
    const { first, loss: native } = await train(true);
    const { loss: wasm } = await train(false);
    expect(native).toBeLessThan(0.8 * first); // it learned the batch
    expect(Math.abs(native - wasm)).toBeLessThan(1e-3 * Math.max(1, wasm));
  });

  it.each([true, false])('hold memory steady over 500 training steps (native %s)', async (native) => {
    setNativeKernelsEnabled(native);
    const tok = new CharTokenizer();
    const model = new GPT({ vocabSize: tok.vocabSize, layers: 1, width: 16, heads: 2, contextLength: 8, seed: 5 });
    const trainer = new SFTTrainer(model, { warmupSteps: 0 });
    const data = randomBatch(tok, new Rng(2), 4, 8);
    let settled = { tensors: 0, bytes: 0, heap: 0 };
    for (let step = 0; step < 500; step++) {
      await trainer.stepAsync(data);
      if (step === 20) settled = { tensors: tf.memory().numTensors, bytes: tf.memory().numBytes, heap: wasmHeap()!.buffer.byteLength };
    }
    expect({ tensors: tf.memory().numTensors, bytes: tf.memory().numBytes, heap: wasmHeap()!.buffer.byteLength }).toEqual(settled);
    trainer.dispose();
    model.dispose();
    setNativeKernelsEnabled(true);
  });

  it("choose the sampler's tokens as chooseToken does: the same tokens, log-probabilities and random stream", () => {
    const native = nativeKernels()!;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 3, max: 300 }),
        fc.constantFrom(0, 0.3, 1, 1.7),
        fc.integer({ min: 0, max: 2 ** 31 }),
        (B, V, temperature, seed) => {
          const r = new Rng(seed);
          // Logits of both signs and large spreads (an underflowing exp), and a tie for greedy.
          const logits = Float32Array.from({ length: B * V }, () => (r.next() - 0.5) * (r.next() < 0.1 ? 200 : 8));
          logits[V - 1] = logits[0];
          const banned = new Set([0, V - 1].filter(() => r.next() < 0.5));
          const done = Array.from({ length: B }, () => r.next() < 0.3);
          const js = new Rng(seed + 1);
          const expected = done.map((d, b) => (d ? null : chooseToken(logits.subarray(b * V, (b + 1) * V), { temperature, topK: 0, topP: 1 }, banned, js)));
          const allowed = Uint8Array.from({ length: V }, (_, i) => (banned.has(i) ? 0 : 1));
          const state = Uint32Array.from(new Rng(seed + 1).getState());
          const tokens = new Int32Array(B);
          const logprobs = new Float64Array(B);
          native.chooseTokens(logits, B, V, temperature, allowed, Uint8Array.from(done, (d) => (d ? 0 : 1)), state, tokens, logprobs);
          expected.forEach((e, b) => {
            if (!e) return;
            expect(tokens[b]).toBe(e.token);
            // exp and log are the C library's here, V8's there: equal within a few units in the last place.
            expect(Math.abs(logprobs[b] - e.logprob)).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(e.logprob)));
          });
          expect([...state]).toEqual(js.getState());
        },
      ),
      { numRuns: 300 },
    );
    const one = new Float32Array(4), u8 = new Uint8Array(4), rng = new Uint32Array(4), tokens = new Int32Array(1), lp = new Float64Array(1);
    expect(() => native.chooseTokens(one, 2, 4, 1, u8.fill(1), u8, rng, tokens, lp)).toThrow(/logits is shorter/);
    expect(() => native.chooseTokens(one, 1, 4, 1, new Uint8Array(4), u8, rng, tokens, lp)).toThrow(/every token is disallowed/);
    expect(() => native.chooseTokens(one, 1, 4, -1, u8.fill(1), u8, rng, tokens, lp)).toThrow(/temperature/);
    expect(() => native.chooseTokens(one, 1, 4, 1, u8.fill(1), u8, new Uint32Array(3), tokens, lp)).toThrow(/rng is shorter/);
    expect(() => native.chooseTokens(one, 1, 4, 1, u8.fill(1), u8, rng, tokens, new Float32Array(1) as unknown as Float64Array)).toThrow(/Float64Array/);
  });

  it('check their arguments instead of writing outside the arrays', async () => {
    const addon = createRequire(import.meta.url)(NATIVE_ADDON_PATH) as {
      gemm: (...args: unknown[]) => void;
      decodeStep: (...args: unknown[]) => void;
      loraLinearForward: (...args: unknown[]) => void;
      loraLinearBackward: (...args: unknown[]) => void;
    };
    const a = new Float32Array(6), b = new Float32Array(6), c = new Float32Array(4);
    expect(() => addon.gemm(a, b, c, null, 1, 2, 2, 3, false, false, 6, 6, false)).not.toThrow();
    expect(() => addon.gemm(a, b, c, null, 1, 3, 2, 3, false, false, 9, 6, false)).toThrow(/a is shorter/);
    expect(() => addon.gemm(a, b, c, null, 2, 2, 2, 3, false, false, 6, 6, false)).toThrow(/b is shorter|a is shorter/);
    expect(() => addon.gemm(a, b, new Float32Array(3), null, 1, 2, 2, 3, false, false, 6, 6, false)).toThrow(/c is shorter/);
    expect(() => addon.gemm(a, b, c, new Float32Array(1), 1, 2, 2, 3, false, false, 6, 6, false)).toThrow(/bias is shorter/);
    expect(() => addon.gemm(new Int32Array(6), b, c, null, 1, 2, 2, 3, false, false, 6, 6, false)).toThrow(/Float32Array/);
    expect(() => addon.gemm(a, b, c, null, 1, -2, 2, 3, false, false, 6, 6, false)).toThrow(/non-negative/);
    // LoRA's linear layer: x [2, 3], w [3, 2], a [3, 1], b [1, 2] → y [2, 2], xa [2, 1].
    const f = (n: number) => new Float32Array(n);
    expect(() => addon.loraLinearForward(f(6), f(6), null, f(3), f(2), 2, f(4), f(2), 2, 3, 2, 1)).not.toThrow();
    expect(() => addon.loraLinearForward(f(6), f(6), f(1), f(3), f(2), 2, f(4), f(2), 2, 3, 2, 1)).toThrow(/bias is shorter/);
    expect(() => addon.loraLinearForward(f(6), f(6), null, f(3), f(2), 2, f(4), f(2), 2, 3, 2, 2)).toThrow(/a is shorter/);
    expect(() => addon.loraLinearForward(f(6), f(6), null, f(3), f(2), 2, f(3), f(2), 2, 3, 2, 1)).toThrow(/y is shorter/);
    expect(() => addon.loraLinearBackward(f(4), f(6), f(2), f(6), f(3), f(2), 2, f(6), f(3), f(2), 2, 3, 2, 1)).not.toThrow();
    expect(() => addon.loraLinearBackward(f(4), f(6), f(2), f(6), f(3), f(2), 2, f(5), f(3), f(2), 2, 3, 2, 1)).toThrow(/dx is shorter/);
    expect(() => addon.loraLinearBackward(f(4), f(6), f(2), f(6), f(3), f(2), 2, f(6), f(3), f(1), 2, 3, 2, 1)).toThrow(/db is shorter/);
    const i32 = new Int32Array(1);
    // The decoding step: shapes that do not fit, a cache without room, an array of the wrong length.
    expect(() => addon.decodeStep(i32, i32, a, [], [], c, [1, 6, 4, 2, 8, 0, 4, 2, 1], 1e-5)).toThrow(/multiple of H/);
    expect(() => addon.decodeStep(i32, i32, a, [], [], c, [1, 4, 2, 2, 8, 2, 4, 2, 1], 1e-5)).toThrow(/no room/);
    expect(() => addon.decodeStep(i32, i32, a, [], [], c, [1, 4, 2, 2, 8, 0, 4, 2, 1], 1e-5)).toThrow(/weights must be an array of 17/);
    expect(() => addon.decodeStep(new Int32Array([5]), i32, a, [], [], c, [1, 4, 2, 2, 8, 0, 4, 2, 1], 1e-5)).toThrow(/outside the vocabulary/);
  });
});

describe.runIf(run)('without the native kernels', () => {
  const report = (env: Record<string, string>) => {
    const script = "import('./gpu-worker/engine/backend.ts').then(async ({ initBackend }) => { const r = await initBackend('wasm'); console.log(JSON.stringify({ kernels: r.kernels, threads: r.threads, device: r.devices[0].name })); })";
    const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: process.cwd(), env: { ...process.env, ...env }, encoding: 'utf8' });
    return JSON.parse(out.trim().split('\n').at(-1)!) as { kernels: string; threads: number; device: string };
  };

  it('the engine says why and runs the wasm kernels when turned off (WHETSTONE_NATIVE=0)', () => {
    const r = report({ WHETSTONE_NATIVE: '0' });
    expect(r.kernels).toBe('native kernels off, using wasm kernels: turned off (WHETSTONE_NATIVE=0)');
    expect(r).toMatchObject({ threads: 1, device: 'wasm-simd' });
  });

  it('the engine says why when the addon cannot load (built for another Node, or not a library)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'whetstone-native-'));
    const broken = path.join(dir, 'whetstone_native.node');
    writeFileSync(broken, 'not a shared library');
    const r = report({ WHETSTONE_NATIVE_ADDON: broken });
    expect(r.kernels).toMatch(/^native kernels off, using wasm kernels: could not load: /);
    expect(r.threads).toBe(1);
  });

  it('the loaded path names its microkernel, threads and CPU features', () => {
    const r = report({ WHETSTONE_THREADS: '2' });
    expect(r.kernels).toMatch(/^native kernels: (avx512|avx2|portable) on 2 threads \(CPU: /);
    expect(r.device).toMatch(/^wasm-simd \+ native (avx512|avx2|portable) × 2 threads$/);
  });
});
