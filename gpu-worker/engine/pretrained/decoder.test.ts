/**
 * The pretrained decoders against transformers' own outputs on the committed fixtures
 * (fixtures/make_fixtures.py): logits at every prompt position, greedy continuations, and the
 * KV-cached path against recomputation; then the refusals of bad checkpoints.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setMatmulPath } from '../backend';
import { CheckpointError } from '../errors';
import { readSafetensors, writeSafetensors } from '../safetensors';
import { testBackend } from '../../test-support/engine/test-setup';
import { PretrainedDecoder } from './decoder';
import { greedyContinue } from './greedy';
import { readHfFolder } from './hf-folder';

const FIXTURES = path.join(__dirname, 'fixtures');

interface Expected {
  prompts: { ids: number[]; logits: number[][]; greedy: number[] }[];
}

const expectedOf = (name: string) => JSON.parse(fs.readFileSync(path.join(FIXTURES, name, 'expected.json'), 'utf8')) as Expected;

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Largest |engine − transformers| over every logit of every prompt. */
function logitError(model: PretrainedDecoder, exp: Expected): number {
  let worst = 0;
  for (const p of exp.prompts) {
    const got = tf.tidy(() => model.forward([p.ids]).logits.dataSync());
    worst = Math.max(worst, maxAbsDiff(got, p.logits.flat()));
  }
  return worst;
}

beforeAll(async () => {
  await testBackend();
});
afterAll(() => setMatmulPath('auto'));

// f32 fixtures; the bf16 one's expected logits are transformers' f32 run on the bf16-rounded
// weights, and widening bf16 to f32 is exact, so the same 1e-4 holds for it (its distance to the
// unrounded f32 model, a property of bf16 and not of the engine, is checked separately below).
const FAMILIES = ['llama-tied', 'llama3-untied', 'llama3-untied-bf16', 'qwen2', 'qwen3'];

describe.each(FAMILIES)('fixture %s', (name) => {
  let model: PretrainedDecoder;
  const exp = expectedOf(name);
  beforeAll(async () => {
    model = await PretrainedDecoder.fromFolder(path.join(FIXTURES, name));
  });
  afterAll(() => model.dispose());

  it('gives transformers\' logits within 1e-4', () => {
    const err = logitError(model, exp);
    console.log(`${name}: max |logit − transformers| = ${err.toExponential(2)}`);
    expect(err).toBeLessThan(1e-4);
  });

  it('continues greedily as transformers does, and the KV cache agrees with recomputing', () => {
    const before = tf.memory().numTensors;
    for (const p of exp.prompts) {
      const recompute = greedyContinue(model, [p.ids], p.greedy.length, { kvCache: false });
      const cached = greedyContinue(model, [p.ids], p.greedy.length, { kvCache: true });
      expect(recompute.tokens).toEqual([p.greedy]);
      expect(cached.tokens).toEqual([p.greedy]);
      for (let s = 0; s < p.greedy.length; s++) expect(maxAbsDiff(cached.stepLogits[0][s], recompute.stepLogits[0][s])).toBeLessThan(1e-4);
    }
    // Every step's cache is disposed once the next one replaces it.
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe('a batch of prompts of different lengths (left-padded)', () => {
  it('gives each prompt its own logits and greedy continuation, cached or recomputed', async () => {
    const model = await PretrainedDecoder.fromFolder(path.join(FIXTURES, 'llama3-untied'));
    const exp = expectedOf('llama3-untied');
    const [short, long] = exp.prompts;
    const pad = long.ids.length - short.ids.length;
    // One forward of both rows: the short prompt's real positions must give its own logits.
    const keyMask = [[...new Array<number>(pad).fill(0), ...short.ids.map(() => 1)], long.ids.map(() => 1)];
    const positions = [long.ids.map((_, j) => Math.max(0, j - pad)), long.ids.map((_, j) => j)];
    const got = tf.tidy(() => model.forward([[...new Array<number>(pad).fill(0), ...short.ids], long.ids], { keyMask, positions }).logits.arraySync());
    expect(maxAbsDiff(got.slice(pad, long.ids.length).flat(), short.logits.flat())).toBeLessThan(1e-4);
    expect(maxAbsDiff(got.slice(long.ids.length).flat(), long.logits.flat())).toBeLessThan(1e-4);
    for (const kvCache of [false, true]) {
      expect(greedyContinue(model, [short.ids, long.ids], short.greedy.length, { kvCache }).tokens).toEqual([short.greedy, long.greedy]);
    }
    model.dispose();
  });
});

describe('the plain matmul path (native backends)', () => {
  it('gives the same logits as the fast path', async () => {
    setMatmulPath('plain');
    try {
      const model = await PretrainedDecoder.fromFolder(path.join(FIXTURES, 'qwen3'));
      expect(logitError(model, expectedOf('qwen3'))).toBeLessThan(1e-4);
      model.dispose();
    } finally {
      setMatmulPath('auto');
    }
  });
});

describe('gradients', () => {
  // Training (LoRA, full) differentiates through this forward; the fast path's custom gradients
  // (2-D matmuls, attention as depthwise convolutions) must give what plain autodiff gives.
  it('are the same on the fast and the plain matmul paths', async () => {
    const model = await PretrainedDecoder.fromFolder(path.join(FIXTURES, 'qwen3'));
    const ids = expectedOf('qwen3').prompts[1].ids;
    const names = [...model.params.keys()];
    const gradsOn = (route: 'fast' | 'plain') => {
      setMatmulPath(route);
      const { grads } = tf.variableGrads(() => {
        const logits = model.forward([ids]).logits;
        // A fixed, position-dependent weighting so every logit's gradient matters.
        const w = tf.linspace(-1, 1, logits.size).reshape(logits.shape);
        return logits.mul(w).sum() as tf.Scalar;
      }, names.map((n) => model.p(n)));
      const out = new Map(names.map((n) => [n, grads[model.p(n).name].dataSync() as Float32Array]));
      Object.values(grads).forEach((g) => g.dispose());
      return out;
    };
    const loss = () =>
      tf.tidy(() => {
        const logits = model.forward([ids]).logits;
        return logits.mul(tf.linspace(-1, 1, logits.size).reshape(logits.shape)).sum().dataSync()[0];
      });
    try {
      const fast = gradsOn('fast');
      const plain = gradsOn('plain');
      for (const n of names) {
        const scale = Math.max(1, ...plain.get(n)!.map(Math.abs));
        expect(maxAbsDiff(fast.get(n)!, plain.get(n)!) / scale, n).toBeLessThan(1e-4);
      }
      // And both against central differences, on one entry of a few kinds of weight (a norm
      // applied per head, a bias-free projection, the embedding of a prompt token, the head).
      setMatmulPath('auto');
      const probes: [string, number][] = [
        ['model.layers.0.self_attn.k_norm.weight', 3],
        ['model.layers.1.self_attn.q_proj.weight', 200],
        ['model.embed_tokens.weight', ids[2] * 64 + 5],
        ['lm_head.weight', 77],
      ];
      const eps = 1e-2;
      for (const [n, i] of probes) {
        const v = model.p(n);
        const original = v.dataSync().slice() as Float32Array;
        const at = (delta: number) => {
          const moved = original.slice();
          moved[i] += delta;
          v.assign(tf.tensor(moved, v.shape));
          return loss();
        };
        const numeric = (at(eps) - at(-eps)) / (2 * eps);
        v.assign(tf.tensor(original, v.shape));
        // f32 loss differences over 2·eps, and the curvature over ±eps: a few 1e-3 at these magnitudes.
        expect(Math.abs(numeric - fast.get(n)![i]), n).toBeLessThan(5e-3 + 1e-2 * Math.abs(numeric));
      }
    } finally {
      setMatmulPath('auto');
      model.dispose();
    }
  });
});

describe('bf16 weights', () => {
  it('are widened exactly, and stay near the f32 model they were rounded from', async () => {
    const f32 = (await readSafetensors(path.join(FIXTURES, 'llama3-untied', 'model.safetensors'))).tensors;
    const bf16 = (await readSafetensors(path.join(FIXTURES, 'llama3-untied-bf16', 'model.safetensors'))).tensors;
    for (const [name, t] of bf16) {
      const ref = f32.get(name)!.data;
      // bf16 keeps 8 significant bits: rounding to nearest moves a value by at most 2⁻⁸ of itself.
      for (let i = 0; i < t.data.length; i++) expect(Math.abs(t.data[i] - ref[i])).toBeLessThanOrEqual(Math.abs(ref[i]) * 2 ** -8);
    }
    // Logits of the rounded model against the unrounded one: the gap is bf16's, about 1e-2 here.
    const model = await PretrainedDecoder.fromFolder(path.join(FIXTURES, 'llama3-untied-bf16'));
    const err = logitError(model, expectedOf('llama3-untied'));
    console.log(`llama3-untied-bf16 vs the f32 model: max |logit diff| = ${err.toExponential(2)}`);
    expect(err).toBeLessThan(0.1);
    model.dispose();
  });
});

describe('bad checkpoints', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-pretrained-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('refuses a tensor that is missing, has the wrong shape, or does not belong, naming it', async () => {
    const { config, tensors } = await readHfFolder(path.join(FIXTURES, 'qwen2'));
    const before = tf.memory().numTensors;
    const without = new Map(tensors);
    without.delete('model.layers.1.self_attn.k_proj.bias');
    expect(() => PretrainedDecoder.fromHfTensors(config, without, 'qwen2')).toThrow(CheckpointError);
    expect(() => PretrainedDecoder.fromHfTensors(config, without, 'qwen2')).toThrow(/"model\.layers\.1\.self_attn\.k_proj\.bias" is missing/);

    const reshaped = new Map(tensors);
    const up = tensors.get('model.layers.0.mlp.up_proj.weight')!;
    reshaped.set('model.layers.0.mlp.up_proj.weight', { shape: [...up.shape].reverse(), data: up.data });
    expect(() => PretrainedDecoder.fromHfTensors(config, reshaped, 'qwen2')).toThrow(/"model\.layers\.0\.mlp\.up_proj\.weight" has shape \[64,96\] but the config needs \[96,64\]/);

    const extra = new Map(tensors);
    extra.set('model.layers.0.self_attn.q_norm.weight', { shape: [16], data: new Float32Array(16) });
    expect(() => PretrainedDecoder.fromHfTensors(config, extra, 'qwen2')).toThrow(/"model\.layers\.0\.self_attn\.q_norm\.weight" is not part of a qwen2 model/);
    // Shapes are checked before any variable is made: nothing is left from the refused checkpoints.
    expect(tf.memory().numTensors).toBe(before);
  });

  it('refuses a folder whose config.json has an unsupported model_type, naming the file and the field', async () => {
    const folder = path.join(dir, 'mistral');
    fs.mkdirSync(folder);
    const config = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'llama-tied', 'config.json'), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(path.join(folder, 'config.json'), JSON.stringify({ ...config, model_type: 'mistral' }));
    fs.copyFileSync(path.join(FIXTURES, 'llama-tied', 'model.safetensors'), path.join(folder, 'model.safetensors'));
    const load = PretrainedDecoder.fromFolder(folder);
    await expect(load).rejects.toThrow(CheckpointError);
    await expect(load).rejects.toThrow(`checkpoint ${path.join(folder, 'config.json')}: invalid config.json.model_type: "mistral" is not supported`);
  });

  it('refuses a folder without weights, and an index naming an absent shard', async () => {
    const folder = path.join(dir, 'no-weights');
    fs.mkdirSync(folder);
    fs.copyFileSync(path.join(FIXTURES, 'llama-tied', 'config.json'), path.join(folder, 'config.json'));
    await expect(readHfFolder(folder)).rejects.toThrow(/neither model\.safetensors nor model\.safetensors\.index\.json/);
    fs.writeFileSync(path.join(folder, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { 'model.norm.weight': 'model-00001-of-00002.safetensors' } }));
    await expect(readHfFolder(folder)).rejects.toThrow(/lists shard "model-00001-of-00002\.safetensors", which is not in the folder/);
  });

  it('loads a sharded checkpoint as the single file', async () => {
    const folder = path.join(dir, 'sharded');
    fs.mkdirSync(folder);
    const src = path.join(FIXTURES, 'llama-tied');
    fs.copyFileSync(path.join(src, 'config.json'), path.join(folder, 'config.json'));
    const { tensors } = await readSafetensors(path.join(src, 'model.safetensors'));
    const names = [...tensors.keys()];
    const halves = [names.slice(0, 9), names.slice(9)];
    const weightMap: Record<string, string> = {};
    for (const [i, part] of halves.entries()) {
      const file = `model-0000${i + 1}-of-00002.safetensors`;
      await writeSafetensors(path.join(folder, file), new Map(part.map((n) => [n, tensors.get(n)!])), {});
      for (const n of part) weightMap[n] = file;
    }
    fs.writeFileSync(path.join(folder, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
    const model = await PretrainedDecoder.fromFolder(folder);
    expect(logitError(model, expectedOf('llama-tied'))).toBeLessThan(1e-4);
    model.dispose();
  });
});
