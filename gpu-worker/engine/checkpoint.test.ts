import * as tf from '@tensorflow/tfjs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpoint, saveSamplerCheckpoint, saveTrainingCheckpoint } from './checkpoint';
import { CheckpointError, ConfigError, NonFiniteLossError } from './errors';
import { GRPOTrainer } from './grpo';
import { attachLora } from './lora';
import { GPT, type LanguageModel } from './model';
import { Rng } from './rng';
import { readSafetensors } from './safetensors';
import { SFTTrainer } from './sft';
import { testBackend } from '../test-support/engine/test-setup';
import { allStrings, reversalExample } from '../test-support/engine/test-tasks';
import { CharTokenizer } from './tokenizer';

const tok = new CharTokenizer('abcde=');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-ckpt-'));
const strings = allStrings('abcde', 3, 2);
const cfg = { vocabSize: tok.vocabSize, contextLength: 12, layers: 2, width: 16, heads: 2, dropout: 0.1, seed: 4 };
const batchAt = (step: number) => {
  const rng = new Rng(1000 + step);
  return Array.from({ length: 8 }, () => reversalExample(tok, strings[rng.int(strings.length)]));
};
/** A GRPO batch: the SFT batch with rewards in two groups. */
const grpoBatch = (step: number) => batchAt(step).map((s, i) => ({ ...s, rewards: (i + step) % 3 === 0 ? 1 : 0, group: i % 2 }));
const logitsOf = (m: LanguageModel) => tf.tidy(() => m.forward([[tok.bos, ...tok.encode('abc=')]]).logits).dataSync();

beforeAll(async () => {
  await testBackend();
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('checkpoints', () => {
  it('round-trip a sampler checkpoint with identical logits and tokenizer', async () => {
    const m = new GPT(cfg);
    const file = path.join(dir, 'sampler.safetensors');
    await saveSamplerCheckpoint(file, m, tok);
    const loaded = await loadCheckpoint(file);
    expect(loaded.kind).toBe('sampler');
    expect((loaded.model as GPT).config).toEqual(m.config);
    expect(loaded.tokenizer.encode('abc=')).toEqual(tok.encode('abc='));
    expect(Array.from(logitsOf(loaded.model))).toEqual(Array.from(logitsOf(m)));
    // The layout is real safetensors: u64 header length, JSON header, F32 data.
    const buf = fs.readFileSync(file);
    const header = JSON.parse(buf.subarray(8, 8 + Number(buf.readBigUInt64LE(0))).toString());
    expect(header['model.wte']).toMatchObject({ dtype: 'F32', shape: [tok.vocabSize, 16] });
    m.dispose();
    loaded.model.dispose();
  });

  it('resume training exactly: same losses as an uninterrupted run (with dropout and RNG state)', async () => {
    const straight = new GPT(cfg);
    const t1 = new SFTTrainer(straight, { learningRate: 3e-3, warmupSteps: 2, totalSteps: 8, seed: 3 });
    const lossesStraight = Array.from({ length: 8 }, (_, s) => t1.step(batchAt(s)).loss);

    const first = new GPT(cfg);
    const t2 = new SFTTrainer(first, { learningRate: 3e-3, warmupSteps: 2, totalSteps: 8, seed: 3 });
    const lossesResumed = Array.from({ length: 4 }, (_, s) => t2.step(batchAt(s)).loss);
    const file = path.join(dir, 'train.safetensors');
    await saveTrainingCheckpoint(file, first, tok, t2);
    t2.dispose();
    first.dispose();

    const loaded = await loadCheckpoint(file);
    expect(loaded.kind).toBe('training');
    const t3 = new SFTTrainer(loaded.model, loaded.trainerState!.config as object);
    t3.importState(loaded.trainerState!);
    expect(t3.core.step).toBe(4);
    for (let s = 4; s < 8; s++) lossesResumed.push(t3.step(batchAt(s)).loss);
    expect(lossesResumed).toEqual(lossesStraight);
    expect(Array.from(logitsOf(loaded.model))).toEqual(Array.from(logitsOf(straight)));
    [t1, t3].forEach((t) => t.dispose());
    [straight, loaded.model].forEach((m) => m.dispose());
  });

  it('resume GRPO with a KL penalty exactly: the reference policy is saved, not re-taken at resume', async () => {
    const config = { learningRate: 1e-2, klCoef: 0.5, seed: 5 };
    const straight = new GPT(cfg);
    const g1 = new GRPOTrainer(straight, config);
    const lossesStraight = Array.from({ length: 6 }, (_, s) => g1.step(grpoBatch(s)).loss);

    const first = new GPT(cfg);
    const g2 = new GRPOTrainer(first, config);
    const lossesResumed = Array.from({ length: 3 }, (_, s) => g2.step(grpoBatch(s)).loss);
    const file = path.join(dir, 'grpo.safetensors');
    await saveTrainingCheckpoint(file, first, tok, g2);
    g2.dispose();
    first.dispose();

    const loaded = await loadCheckpoint(file);
    expect(loaded.reference).not.toBeNull();
    const g3 = new GRPOTrainer(loaded.model, loaded.trainerState!.config as object, loaded.reference!);
    g3.importState(loaded.trainerState!);
    for (let s = 3; s < 6; s++) lossesResumed.push(g3.step(grpoBatch(s)).loss);
    expect(lossesResumed).toEqual(lossesStraight);
    [g1, g3].forEach((t) => t.dispose());
    [straight, loaded.model, loaded.reference!].forEach((m) => m.dispose());
  });

  it('resume LoRA GRPO with a KL penalty exactly: the reference is kept as its adapters, put back on the base', async () => {
    const config = { learningRate: 5e-2, klCoef: 0.5, seed: 5 };
    // Adapters that are not zero at the start (as from a LoRA checkpoint): the reference is base + them, not the base.
    const adapted = () => {
      const m = new GPT(cfg);
      attachLora(m, { rank: 2, seed: 7 });
      for (const ad of m.adapters.values()) ad.b.assign(tf.randomNormal(ad.b.shape, 0, 0.1, 'float32', 11));
      return m;
    };
    const straight = adapted();
    const g1 = new GRPOTrainer(straight, config);
    const lossesStraight = Array.from({ length: 6 }, (_, s) => g1.step(grpoBatch(s)).loss);

    const first = adapted();
    const g2 = new GRPOTrainer(first, config);
    const lossesResumed = Array.from({ length: 3 }, (_, s) => g2.step(grpoBatch(s)).loss);
    const file = path.join(dir, 'grpo-lora.safetensors');
    await saveTrainingCheckpoint(file, first, tok, g2);
    g2.dispose();
    first.dispose();
    const { tensors, metadata } = await readSafetensors(file);
    const saved = [...tensors.keys()].filter((k) => k.startsWith('reference.'));
    expect(saved.length).toBe(2 * first.loraLinears(['attn', 'mlp']).length);
    expect(saved.every((k) => k.startsWith('reference.lora.'))).toBe(true);
    expect(JSON.parse(metadata['whetstone.reference'])).toEqual({ lora: { rank: 2, alpha: 16, targets: ['attn', 'mlp'], seed: 7 } });

    const loaded = await loadCheckpoint(file);
    expect(loaded.reference!.adapters.size).toBe(loaded.model.adapters.size);
    const g3 = new GRPOTrainer(loaded.model, loaded.trainerState!.config as object, loaded.reference!);
    g3.importState(loaded.trainerState!);
    for (let s = 3; s < 6; s++) lossesResumed.push(g3.step(grpoBatch(s)).loss);
    expect(lossesResumed).toEqual(lossesStraight);
    // The KL term took part: the policy moved away from the reference.
    expect(Array.from(logitsOf(loaded.reference!))).not.toEqual(Array.from(logitsOf(loaded.model)));
    [g1, g3].forEach((t) => t.dispose());
    [straight, loaded.model, loaded.reference!].forEach((m) => m.dispose());
  });

  it('report corrupt and truncated files clearly', async () => {
    const m = new GPT(cfg);
    const file = path.join(dir, 'good.safetensors');
    await saveSamplerCheckpoint(file, m, tok);
    m.dispose();
    const buf = fs.readFileSync(file);
    const headerLen = Number(buf.readBigUInt64LE(0));
    const write = (name: string, b: Buffer) => {
      const f = path.join(dir, name);
      fs.writeFileSync(f, b);
      return f;
    };
    await expect(loadCheckpoint(write('tiny', buf.subarray(0, 5)))).rejects.toThrow(/truncated.*8-byte header length/);
    await expect(loadCheckpoint(write('cut', buf.subarray(0, buf.length - 100)))).rejects.toThrow(/truncated: tensor "model\.[^"]+" needs bytes/);
    await expect(loadCheckpoint(write('cuthead', buf.subarray(0, 8 + headerLen - 10)))).rejects.toThrow(/header claims/);
    const flipped = Buffer.from(buf);
    flipped[buf.length - 7] ^= 0xff;
    await expect(loadCheckpoint(write('flip', flipped))).rejects.toThrow(/CRC-32/);
    const badJson = Buffer.from(buf);
    badJson[9] = 0x7d;
    await expect(loadCheckpoint(write('json', badJson))).rejects.toThrow(/corrupt header/);
    await expect(loadCheckpoint(path.join(dir, 'missing'))).rejects.toThrow(CheckpointError);
  });
});

describe('bad input', () => {
  it('rejects empty batches and NaN rewards naming the field', () => {
    const m = new GPT(cfg);
    const t = new SFTTrainer(m);
    expect(() => t.step([])).toThrow(/invalid batch/);
    const bad = reversalExample(tok, 'abc');
    expect(() => t.step([{ ...bad, lossMask: bad.lossMask.slice(1) }])).toThrow(/batch\[0\]\.lossMask/);
    expect(() => new SFTTrainer(m, { learningRate: -1 })).toThrow(/sft\.learningRate/);
    expect(() => new GPT({ ...cfg, heads: 3 })).toThrow(ConfigError);
    t.dispose();
    m.dispose();
  });

  it('stops on a NaN loss naming the step and the last good checkpoint', async () => {
    const m = new GPT(cfg);
    const t = new SFTTrainer(m);
    t.step(batchAt(0));
    const file = path.join(dir, 'last-good.safetensors');
    await saveTrainingCheckpoint(file, m, tok, t);
    t.step(batchAt(1));
    const w = m.p('h.0.mlp.fc.w');
    const nan = tf.fill(w.shape, NaN);
    w.assign(nan);
    nan.dispose();
    let error: unknown;
    try {
      t.step(batchAt(2));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(NonFiniteLossError);
    expect((error as Error).message).toMatch(/in step 3;/);
    expect((error as Error).message).toContain(file);
    t.dispose();
    m.dispose();
  });
});
