/**
 * The JavaScript kernels against the plain-op paths they replace: same values, same gradients.
 * (The finite-difference checks in sft.test.ts cover them too, through the fast path.)
 */
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setJsKernelsEnabled, wasmHeap } from './kernels';
import { rowSums, transpose2d } from './matrix-kernels';
import { GPT, type KvCache } from './model';
import { gelu, layerNorm, targetLogProbs } from './ops';
import { Adam, type OptimConfig } from './optim';
import { Rng } from './rng';
import { sample } from './sampler';
import { testBackend } from '../test-support/engine/test-setup';

beforeAll(async () => {
  await testBackend();
});
afterAll(() => setJsKernelsEnabled(true));

function randomTensor(rng: Rng, shape: number[], std = 1): tf.Tensor {
  const size = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(Float32Array.from({ length: size }, () => rng.normal() * std), shape);
}

function expectClose(a: ArrayLike<number>, b: ArrayLike<number>, tol: number, what: string): void {
  expect(a.length, what).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / (tol + Math.abs(b[i]) * tol));
  expect(worst, `${what}: worst relative error ${worst * tol}`).toBeLessThan(1);
}

describe('fused Adam', () => {
  it('matches the tensor-op Adam over steps with clipping and weight decay', () => {
    const config: OptimConfig = {
      learningRate: 1e-2, warmupSteps: 0, totalSteps: 0, minLearningRateRatio: 0.1,
      beta1: 0.9, beta2: 0.99, epsilon: 1e-8, weightDecay: 0.1, gradClip: 1,
    };
    const run = (fused: boolean) => {
      setJsKernelsEnabled(fused);
      const rng = new Rng(3);
      const vars = new Map([
        ['w', tf.variable(randomTensor(rng, [5, 7]))],
        ['wpe', tf.variable(randomTensor(rng, [4, 7]))],
        ['b', tf.variable(randomTensor(rng, [7]))],
      ]);
      const adam = new Adam(vars, config);
      const norms: number[] = [];
      for (let step = 0; step < 4; step++) {
        // Gradients large enough to be clipped on some steps (norm > 1) and not on others.
        const grads = new Map([...vars].map(([name, v]) => [name, randomTensor(rng, v.shape, step % 2 ? 0.05 : 1)]));
        norms.push(adam.update(grads, 1e-2));
      }
      const out = [...vars.values(), ...adam.m.values(), ...adam.v.values()].map((t) => t.dataSync().slice());
      adam.dispose();
      vars.forEach((v) => v.dispose());
      setJsKernelsEnabled(true);
      return { norms, out };
    };
    const fused = run(true);
    const plain = run(false);
    expect(fused.norms.some((n) => n > 1) && fused.norms.some((n) => n < 1)).toBe(true);
    expectClose(fused.norms, plain.norms, 1e-5, 'gradient norms');
    fused.out.forEach((t, i) => expectClose(t, plain.out[i], 1e-5, `state tensor ${i}`));
  });
});

/** Value and gradients of `f` with respect to `xs`, with the JS kernels on or off (fast path either way). */
function valueAndGrads(fused: boolean, f: (...xs: tf.Tensor[]) => tf.Tensor, xs: tf.Tensor[], seed = 11): Float32Array[] {
  setJsKernelsEnabled(fused);
  try {
    return tf.tidy(() => {
      // A random weighting of the outputs, so that every output element's gradient matters.
      const rng = new Rng(seed);
      const loss = (...args: tf.Tensor[]) => {
        const y = f(...args);
        return y.mul(tf.tensor(Float32Array.from({ length: y.size }, () => rng.normal()), y.shape)).sum() as tf.Scalar;
      };
      const value = f(...xs).dataSync() as Float32Array;
      const grads = tf.grads(loss)(xs);
      return [value, ...grads.map((g) => g.dataSync() as Float32Array)];
    });
  } finally {
    setJsKernelsEnabled(true);
  }
}

function expectSameValueAndGrads(f: (...xs: tf.Tensor[]) => tf.Tensor, xs: tf.Tensor[], tol = 1e-4): void {
  const fused = valueAndGrads(true, f, xs);
  const plain = valueAndGrads(false, f, xs);
  fused.forEach((t, i) => expectClose(t, plain[i], tol, i === 0 ? 'value' : `gradient ${i - 1}`));
}

describe('fused ops equal the plain ops, values and gradients', () => {
  const rng = new Rng(21);

  it('layer norm, on rows whose mean is large against their spread', () => {
    // An offset of 30 with unit spread: the one-pass variance (E[x²] − mean²) must not cancel badly.
    const x = randomTensor(rng, [37, 24], 1).add(30);
    const g = randomTensor(rng, [24]);
    const b = randomTensor(rng, [24]);
    expectSameValueAndGrads((a, c, d) => layerNorm(a as tf.Tensor2D, c as tf.Tensor1D, d as tf.Tensor1D), [x, g, b]);
  });

  it("GELU's SIMD passes (σ's argument, the gradient; σ is wasm's Sigmoid), from far negative to far positive inputs", ({ skip }) => {
    // Without the wasm heap both runs take the plain ops: nothing to compare.
    skip(wasmHeap() === undefined, 'the SIMD GELU runs on wasm only');
    const x = randomTensor(rng, [33, 20], 4).concat(tf.tensor2d([[-100, -30, -9, -1e-3, 0, 1e-3, 9, 30, 100, 5, -5, 2, -2, 0.5, -0.5, 40, -40, 88, -88, 1]]));
    expectSameValueAndGrads((a) => gelu(a as tf.Tensor2D), [x], 1e-5);
  });

  /** Transpose and row sums of x [rows, cols] in plain JavaScript (row sums in double precision). */
  function referenceTransposeAndRowSums(x: tf.Tensor2D): { t: Float32Array; sums: Float64Array } {
    const [rows, cols] = x.shape;
    const v = x.dataSync();
    const t = new Float32Array(rows * cols);
    const sums = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        t[c * rows + r] = v[r * cols + c];
        sums[r] += v[r * cols + c];
      }
    }
    return { t, sums };
  }

  it('transposes and row sums, SIMD kernels (sides multiples of 4, row lengths not multiples of 8)', async ({ skip }) => {
    skip(wasmHeap() === undefined, 'the SIMD transpose and row sums run on wasm only');
    for (const shape of [[8, 12], [20, 36], [4, 4]]) {
      const x = randomTensor(rng, shape) as tf.Tensor2D;
      const ref = referenceTransposeAndRowSums(x);
      // The kernels that ran are the SIMD ones, not the plain-op fallback.
      const t = await tf.profile(() => transpose2d(x));
      expect(t.kernelNames, `transpose of [${shape}]`).toEqual(['WhetstoneTranspose2d']);
      const s = await tf.profile(() => rowSums(x));
      expect(s.kernelNames, `row sums of [${shape}]`).toEqual(['WhetstoneRowSums']);
      tf.tidy(() => {
        expect(transpose2d(x).dataSync(), `transpose of [${shape}]`).toEqual(ref.t);
        expectClose(rowSums(x).dataSync(), ref.sums, 1e-6, `row sums of [${shape}]`);
      });
      x.dispose();
    }
  });

  it('transposes and row sums, the plain-op fallback (a side, and the row length, not a multiple of 4)', async () => {
    for (const shape of [[6, 10], [8, 6]]) {
      const x = randomTensor(rng, shape) as tf.Tensor2D;
      const ref = referenceTransposeAndRowSums(x);
      const ran = [...(await tf.profile(() => transpose2d(x))).kernelNames, ...(await tf.profile(() => rowSums(x))).kernelNames];
      expect(ran.filter((k) => k.startsWith('Whetstone')), `kernels for [${shape}]`).toEqual([]);
      tf.tidy(() => {
        expect(transpose2d(x).dataSync(), `transpose of [${shape}]`).toEqual(ref.t);
        expectClose(rowSums(x).dataSync(), ref.sums, 1e-6, `row sums of [${shape}]`);
      });
      x.dispose();
    }
  });

  it('target log-probabilities, with logits far apart', () => {
    const logits = randomTensor(rng, [29, 13], 8);
    const targets = tf.tensor1d(Array.from({ length: 29 }, (_, i) => (i * 5) % 13), 'int32');
    expectSameValueAndGrads((l) => targetLogProbs(l as tf.Tensor2D, targets), [logits]);
  });

  // Head size 4 runs the SIMD (or native) causal attention; 3 the native one, or the depthwise products without it.
  it.each([[16, 4], [18, 6]])('a whole model: token and position embeddings, attention, norms, head (width %i, %i heads)', (width, heads) => {
    const model = new GPT({ vocabSize: 17, contextLength: 12, layers: 2, width, heads, tiedHead: true, seed: 4 });
    const tokens = tf.tensor2d([[1, 5, 9, 3, 16, 2, 7], [0, 4, 4, 8, 12, 15, 11], [3, 3, 3, 3, 3, 3, 3]], undefined, 'int32');
    const names = [...model.params.keys()];
    const f = (...ws: tf.Tensor[]) => {
      // Run the model with `ws` in place of its parameters, so tf.grads differentiates them.
      const saved = new Map(model.params);
      names.forEach((n, i) => model.params.set(n, ws[i] as tf.Variable));
      try {
        return model.forward(tokens).logits;
      } finally {
        saved.forEach((v, n) => model.params.set(n, v));
      }
    };
    expectSameValueAndGrads(f, names.map((n) => model.p(n)));
    model.dispose();
  });

  it('attention with padded keys (sampling masks) gives the same logits', () => {
    const model = new GPT({ vocabSize: 17, contextLength: 12, layers: 1, width: 16, heads: 2, seed: 5 });
    const opts = { keyMask: [[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]], positions: [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]] };
    const run = (fused: boolean) => {
      setJsKernelsEnabled(fused);
      const out = tf.tidy(() => model.forward([[0, 0, 5, 6, 7], [1, 2, 3, 4, 5]], opts).logits.dataSync());
      setJsKernelsEnabled(true);
      return out;
    };
    expectClose(run(true), run(false), 1e-4, 'logits');
    model.dispose();
  });
});

describe('KV-cached sampling on the fused path', () => {
  it('gives the plain path greedy tokens and log-probabilities (keys and values in the conv layouts)', () => {
    const model = new GPT({ vocabSize: 17, contextLength: 24, layers: 2, width: 16, heads: 2, seed: 6 });
    const tok = { pad: 0, bos: 1, eos: 2, decode: (ids: number[]) => ids.join(',') };
    const prompts = [[1, 5, 6], [1, 9], [1, 3, 4, 8, 8]];
    const run = (fused: boolean) => {
      setJsKernelsEnabled(fused);
      try {
        return sample(model, tok as never, prompts, { temperature: 0, maxTokens: 10, stopAtEos: false, useCache: true });
      } finally {
        setJsKernelsEnabled(true);
      }
    };
    const fused = run(true);
    const plain = run(false);
    expect(fused.map((r) => r.tokens)).toEqual(plain.map((r) => r.tokens));
    fused.forEach((r, i) => expectClose(r.logprobs, plain[i].logprobs, 1e-4, `row ${i} log-probabilities`));
    model.dispose();
  });
});

describe('decoding steps on the fused path', () => {
  // hd 8 runs the SIMD products on wasm; hd 6 (not a multiple of 4) the JavaScript loops.
  for (const [width, heads] of [[16, 2], [12, 2]]) {
    it(`give the recomputed logits with a cache written in place and with a growing one (head size ${width / heads})`, () => {
      const model = new GPT({ vocabSize: 17, contextLength: 12, layers: 2, width, heads, seed: 4 });
      const prompt = [[0, 1, 5, 6], [1, 9, 3, 4]];
      const keyMask = [[0, 1, 1, 1], [1, 1, 1, 1]];
      const positionOf = (b: number, j: number) => Math.max(0, j - (b === 0 ? 1 : 0));
      const fed = [[7, 8], [9, 10], [11, 12], [13, 14]];
      const before = tf.memory().numTensors;
      const run = (capacity: number | undefined) => {
        const logits: Float32Array[] = [];
        let cache: KvCache | undefined;
        const seqs = prompt.map((r) => [...r]);
        const mask = keyMask.map((r) => [...r]);
        for (let step = 0; step <= fed.length; step++) {
          const input = step === 0 ? seqs : seqs.map((r) => [r[r.length - 1]]);
          const start = step === 0 ? 0 : seqs[0].length - 1;
          const positions = input.map((r, b) => r.map((_, j) => positionOf(b, start + j)));
          const prev = cache;
          const out = tf.tidy(() => {
            const r = model.forward(input, { positions, keyMask: mask, cache: prev, returnCache: true, cacheCapacity: capacity, lastOnly: true });
            return { logits: r.logits, keys: r.cache!.keys, values: r.cache!.values };
          });
          if (prev) {
            const kept = new Set([...out.keys, ...out.values]);
            for (const t of [...prev.keys, ...prev.values]) if (!kept.has(t)) t.dispose();
          }
          cache = { keys: out.keys, values: out.values, length: seqs[0].length };
          logits.push(out.logits.dataSync() as Float32Array);
          out.logits.dispose();
          if (step < fed.length) {
            seqs.forEach((r, b) => r.push(fed[step][b]));
            mask.forEach((r) => r.push(1));
          }
        }
        if (capacity !== undefined) expect(cache!.keys[0].shape[0]).toBe(capacity);
        [...cache!.keys, ...cache!.values].forEach((t) => t.dispose());
        return logits;
      };
      const inPlace = run(10);
      const growing = run(undefined);
      inPlace.forEach((l, step) => {
        const n = prompt[0].length + step;
        const seqs = prompt.map((r, b) => [...r, ...fed.slice(0, step).map((f) => f[b])]);
        const mask = keyMask.map((r) => [...r, ...new Array<number>(step).fill(1)]);
        const positions = seqs.map((r, b) => r.map((_, j) => positionOf(b, j)));
        const full = tf.tidy(() => model.forward(seqs, { positions, keyMask: mask, lastOnly: true }).logits.dataSync());
        expect(seqs[0]).toHaveLength(n);
        expectClose(l, full, 1e-4, `step ${step}, in place vs recomputed`);
        expectClose(growing[step], full, 1e-4, `step ${step}, growing vs recomputed`);
      });
      expect(tf.memory().numTensors).toBe(before);
      model.dispose();
    });
  }
});
