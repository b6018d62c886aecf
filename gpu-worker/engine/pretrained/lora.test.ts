/**
 * LoRA on the pretrained decoders: adapter gradients against finite differences, training that
 * leaves the base untouched, merging, frozen copies, the value head, and the KV-cached path with
 * adapters equal to recomputation.
 */
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setMatmulPath } from '../backend';
import { attachLora, mergeLora } from '../lora';
import { Rng } from '../rng';
import { SFTTrainer } from '../sft';
import { testBackend } from '../../test-support/engine/test-setup';
import { PretrainedDecoder } from './decoder';
import { greedyContinue } from './greedy';

const FIXTURES = path.join(__dirname, 'fixtures');
const PROMPT = [3, 17, 42, 9, 60, 5, 33];
const logitsOf = (m: PretrainedDecoder) => Array.from(tf.tidy(() => m.forward([PROMPT]).logits.dataSync()));

beforeAll(async () => {
  await testBackend();
});
afterAll(() => setMatmulPath('auto'));

/** Mean negative log-likelihood of PROMPT's next tokens: a scalar every weight reaches. */
function nll(model: PretrainedDecoder): tf.Scalar {
  const logits = model.forward([PROMPT.slice(0, -1)]).logits;
  const targets = tf.oneHot(tf.tensor1d(PROMPT.slice(1), 'int32'), model.vocabSize);
  return tf.logSoftmax(logits).mul(targets).sum().div(-(PROMPT.length - 1)) as tf.Scalar;
}

describe.each(['qwen2', 'qwen3', 'llama3-untied'])('LoRA on %s', (name) => {
  it('has the gradients of finite differences on every kind of projection', async () => {
    const model = await PretrainedDecoder.fromFolder(path.join(FIXTURES, name));
    attachLora(model, { rank: 2, alpha: 4, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] });
    expect(model.adapters.size).toBe(7 * model.config.layers);
    // B starts at 0, which makes A's gradient 0: give B values so that both are checked.
    const rng = new Rng(7);
    for (const ad of model.adapters.values()) ad.b.assign(tf.tensor(Array.from({ length: ad.b.size }, () => rng.normal() * 0.3), ad.b.shape));
    const vars = model.trainableVariables();
    expect([...vars.keys()].every((k) => k.startsWith('lora.'))).toBe(true);
    const { grads, value } = tf.variableGrads(() => nll(model), [...vars.values()]);
    value.dispose();
    // Central differences in f32 on a few entries of each kind of adapter, both factors.
    const eps = 1e-2;
    let checked = 0;
    for (const [key, v] of vars) {
      if (!key.startsWith('lora.model.layers.1.')) continue;
      const g = grads[v.name].dataSync();
      const values = v.dataSync().slice();
      for (const i of [0, Math.floor(values.length / 2), values.length - 1]) {
        const at = (delta: number) => {
          const moved = values.slice();
          moved[i] += delta;
          v.assign(tf.tensor(moved, v.shape));
          return tf.tidy(() => nll(model).dataSync()[0]);
        };
        const numeric = (at(eps) - at(-eps)) / (2 * eps);
        v.assign(tf.tensor(values, v.shape));
        expect(Math.abs(g[i] - numeric), `${key}[${i}]: autodiff ${g[i]}, finite differences ${numeric}`).toBeLessThan(2e-3 + 2e-2 * Math.abs(numeric));
        checked++;
      }
    }
    expect(checked).toBe(7 * 2 * 3);
    Object.values(grads).forEach((t) => t.dispose());
    model.dispose();
  });

  it('trains the adapters only, merges into the same function, and decodes alike with and without the cache', async () => {
    const model = await PretrainedDecoder.fromFolder(path.join(FIXTURES, name));
    const base = model.snapshot();
    const baseLogits = logitsOf(model);
    attachLora(model, { rank: 4, alpha: 8 });
    expect(logitsOf(model)).toEqual(baseLogits);

    // Teach it to continue PROMPT with a fixed tail it would not write.
    const tail = [1, 2, 3, 4];
    const example = { tokens: [...PROMPT, ...tail], lossMask: [...PROMPT.map(() => 0), ...tail.map(() => 1)] };
    const trainer = new SFTTrainer(model, { learningRate: 2e-2, warmupSteps: 0 });
    const losses = Array.from({ length: 25 }, () => trainer.step([example, example]).loss);
    trainer.dispose();
    expect(losses[24]).toBeLessThan(losses[0] * 0.5);
    for (const [param, values] of model.snapshot()) expect(values, param).toEqual(base.get(param));
    const adapted = logitsOf(model);
    expect(adapted).not.toEqual(baseLogits);
    expect(greedyContinue(model, [PROMPT], 4, { kvCache: false }).tokens[0]).toEqual(tail);

    // Adapters on every path: the KV cache decodes as recomputation does, at two prompt lengths.
    const prompts = [PROMPT, PROMPT.slice(2)];
    const cached = greedyContinue(model, prompts, 6, { kvCache: true });
    const recomputed = greedyContinue(model, prompts, 6, { kvCache: false });
    expect(cached.tokens).toEqual(recomputed.tokens);

    // A frozen copy is the adapted function without adapters; merging in place is the same.
    const copy = model.frozenCopy();
    expect(copy.adapters.size).toBe(0);
    logitsOf(copy).forEach((v, i) => expect(v).toBeCloseTo(adapted[i], 4));
    mergeLora(model);
    expect(model.adapters.size).toBe(0);
    logitsOf(model).forEach((v, i) => expect(v).toBeCloseTo(adapted[i], 4));
    copy.dispose();
    model.dispose();
  });
});

describe('the pretrained decoder as a policy', () => {
  it('has a value head for PPO that starts at zero and trains with its adapters', async () => {
    const model = await PretrainedDecoder.fromFolder(path.join(FIXTURES, 'qwen2'), { valueHead: true });
    attachLora(model, { rank: 2 });
    expect([...model.trainableVariables().keys()].filter((k) => !k.startsWith('lora.'))).toEqual(['value.w', 'value.b']);
    const out = tf.tidy(() => {
      const r = model.forward([PROMPT, PROMPT]);
      return { logits: r.logits.shape, values: r.values!.arraySync() };
    });
    expect(out.logits).toEqual([2 * PROMPT.length, model.vocabSize]);
    expect(out.values).toEqual([PROMPT.map(() => 0), PROMPT.map(() => 0)]);
    const hf = await model.hfTensors();
    expect([...hf.keys()].some((k) => k.startsWith('value.'))).toBe(false);
    expect(hf.get('model.layers.0.mlp.up_proj.weight')!.shape).toEqual([model.config.intermediateSize, model.config.hiddenSize]);
    model.dispose();
  });

  it('refuses LoRA targets it does not have, naming the ones it has', async () => {
    const model = await PretrainedDecoder.fromFolder(path.join(FIXTURES, 'llama-tied'));
    expect(() => attachLora(model, { targets: ['attn.qkv'] })).toThrow(/unknown target "attn\.qkv"; use attn, mlp, q, k, v, o, gate, up, down/);
    expect(model.adapters.size).toBe(0);
    model.dispose();
  });
});
