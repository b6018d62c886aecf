import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { setMatmulPath } from './backend';
import { prepareBatch } from './batch';
import { maskedNll } from './losses';
import { GPT } from './model';
import { targetLogProbs } from './ops';
import { gradients } from './optim';
import { Rng } from './rng';
import { sample } from './sampler';
import { SFTTrainer } from './sft';
import { testBackend } from '../test-support/engine/test-setup';
import { allStrings, promptOf, reversalExample } from '../test-support/engine/test-tasks';
import { CharTokenizer } from './tokenizer';

const tok = new CharTokenizer('abcde=');

beforeAll(async () => {
  await testBackend();
});
afterAll(() => setMatmulPath('auto'));

/** A tiny model with weights large enough that gradients stand well above float32 noise. */
function tinyModel(): GPT {
  const m = new GPT({ vocabSize: tok.vocabSize, contextLength: 12, layers: 1, width: 8, heads: 2, tiedHead: false, seed: 1 });
  const rng = new Rng(5);
  for (const v of m.params.values()) {
    const data = Float32Array.from({ length: v.size }, () => rng.normal() * 0.4);
    const t = tf.tensor(data, v.shape);
    v.assign(t);
    t.dispose();
  }
  return m;
}

describe('SFT loss gradients', () => {
  const batch = [reversalExample(tok, 'abc'), reversalExample(tok, 'eda')];
  const b = prepareBatch(batch, tok.pad);
  const lossOf = (m: GPT) => () =>
    maskedNll(targetLogProbs(m.forward(b.inputs).logits, tf.tensor1d(b.targets, 'int32')), tf.tensor1d(b.mask));

  for (const path of ['fast', 'plain'] as const) {
    it(`match central finite differences (${path} matmul path)`, () => {
      setMatmulPath(path);
      onTestFinished(() => setMatmulPath('auto'));
      const m = tinyModel();
      const { value, grads } = gradients(lossOf(m), m.params);
      value.dispose();
      const rng = new Rng(9);
      let checked = 0;
      for (const name of ['wte', 'wpe', 'h.0.attn.qkv.w', 'h.0.attn.proj.w', 'h.0.mlp.fc.w', 'h.0.ln1.g', 'lnf.b', 'head.w']) {
        const v = m.p(name);
        const g = grads.get(name)!.dataSync();
        const base = v.dataSync().slice() as Float32Array;
        for (let k = 0; k < 4; k++) {
          const i = rng.int(v.size);
          const h = 1e-2;
          const at = (delta: number) => {
            const d = base.slice();
            d[i] += delta;
            const t = tf.tensor(d, v.shape);
            v.assign(t);
            t.dispose();
            const l = tf.tidy(lossOf(m));
            const out = l.dataSync()[0];
            l.dispose();
            return out;
          };
          const fd = (at(h) - at(-h)) / (2 * h);
          at(0);
          expect(Math.abs(fd - g[i]), `${name}[${i}] fd ${fd} analytic ${g[i]}`).toBeLessThan(2e-3 + 0.05 * Math.abs(g[i]));
          checked++;
        }
      }
      expect(checked).toBe(32);
      grads.forEach((g) => g.dispose());
      m.dispose();
    });
  }

  it('gives masked tokens zero gradient', () => {
    const m = tinyModel();
    const logits = tf.tidy(() => m.forward(b.inputs).logits);
    const targets = tf.tensor1d(b.targets, 'int32');
    const mask = tf.tensor1d(b.mask);
    const g = tf.grad((l: tf.Tensor) => maskedNll(targetLogProbs(l as tf.Tensor2D, targets), mask))(logits);
    const rows = g.arraySync() as number[][];
    rows.forEach((row, i) => {
      const norm = Math.hypot(...row);
      if (b.mask[i] === 0) expect(norm).toBe(0);
      else expect(norm).toBeGreaterThan(0);
    });
    [logits, targets, mask, g].forEach((t) => t.dispose());
    m.dispose();
  });
});

describe('SFT learning', () => {
  it('learns to reverse 3-character strings, including held-out ones', () => {
    const strings = allStrings('abcde', 3, 1);
    const heldOut = strings.slice(0, 25);
    const train = strings.slice(25);
    const model = new GPT({ vocabSize: tok.vocabSize, contextLength: 12, layers: 2, width: 32, heads: 4, seed: 0 });
    const trainer = new SFTTrainer(model, { learningRate: 3e-3, warmupSteps: 10, totalSteps: 250, seed: 0 });
    const rng = new Rng(0);
    const before = tf.memory().numTensors;
    let first = 0;
    let last = 0;
    for (let step = 0; step < 250; step++) {
      const batch = Array.from({ length: 32 }, () => reversalExample(tok, train[rng.int(train.length)]));
      const m = trainer.step(batch);
      if (step === 0) first = m.loss;
      last = m.loss;
    }
    expect(tf.memory().numTensors).toBe(before);
    expect(last).toBeLessThan(first / 10);
    const out = sample(model, tok, heldOut.map((s) => promptOf(tok, s)), { temperature: 0, maxTokens: 4 });
    const correct = out.filter((r, i) => r.text === [...heldOut[i]].reverse().join('') && r.finishReason === 'eos').length;
    expect(correct / heldOut.length).toBeGreaterThanOrEqual(0.9);
    trainer.dispose();
    model.dispose();
  });
});
