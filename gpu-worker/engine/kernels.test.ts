/**
 * The JavaScript kernels against the plain-op paths they replace: same values, same gradients.
 * (The finite-difference checks in sft.test.ts cover them too, through the fast path.)
 */
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setJsKernelsEnabled } from './kernels';
import { Adam, type OptimConfig } from './optim';
import { Rng } from './rng';
import { testBackend } from './test-setup';

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
