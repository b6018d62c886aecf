import * as tf from '@tensorflow/tfjs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAdapterCheckpoint, loadCheckpoint, saveAdapterCheckpoint, saveSamplerCheckpoint, saveTrainingCheckpoint } from './checkpoint';
import { attachLora, mergeLora } from './lora';
import { GPT, type LanguageModel } from './model';
import { Rng } from './rng';
import { SFTTrainer } from './sft';
import { testBackend } from '../test-support/engine/test-setup';
import { allStrings, reversalExample } from '../test-support/engine/test-tasks';
import { CharTokenizer } from './tokenizer';

const tok = new CharTokenizer('abcde=');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-lora-'));
const cfg = { vocabSize: tok.vocabSize, contextLength: 12, layers: 2, width: 64, heads: 4, seed: 0 };
const strings = allStrings('abcde', 3, 4);
const batchAt = (step: number) => {
  const rng = new Rng(step);
  return Array.from({ length: 16 }, () => reversalExample(tok, strings[rng.int(strings.length)]));
};
const logitsOf = (m: LanguageModel) => tf.tidy(() => m.forward([[tok.bos, ...tok.encode('abc=cb')]]).logits).dataSync();

beforeAll(async () => {
  await testBackend();
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('LoRA', () => {
  it('trains only the adapters, leaves the base unchanged, merges and saves small adapter files', async () => {
    const model = new GPT(cfg);
    const base = model.snapshot();
    const baseLogits = logitsOf(model);
    const lora = attachLora(model, { rank: 4, alpha: 8, targets: ['attn', 'mlp'] });
    expect(model.adapters.size).toBe(2 * 4);
    // B starts at 0: the adapted model equals the base.
    expect(Array.from(logitsOf(model))).toEqual(Array.from(baseLogits));
    expect([...model.trainableVariables().keys()].every((k) => k.startsWith('lora.'))).toBe(true);

    const trainer = new SFTTrainer(model, { learningRate: 1e-2, warmupSteps: 5 });
    const losses = Array.from({ length: 40 }, (_, s) => trainer.step(batchAt(s)).loss);
    expect(losses[39]).toBeLessThan(losses[0] * 0.75);
    for (const [name, values] of model.snapshot()) expect(values, name).toEqual(base.get(name));
    const adapted = logitsOf(model);
    expect(Array.from(adapted)).not.toEqual(Array.from(baseLogits));

    // Adapter checkpoint: a small fraction of a full one, and it restores the same function.
    const adapterFile = path.join(dir, 'adapter.safetensors');
    const fullFile = path.join(dir, 'full.safetensors');
    const adapterBytes = await saveAdapterCheckpoint(adapterFile, model, tok, lora);
    const fullBytes = await saveSamplerCheckpoint(fullFile, model, tok);
    expect(adapterBytes / fullBytes).toBeLessThan(0.25);
    const fresh = new GPT(cfg);
    await loadAdapterCheckpoint(adapterFile, fresh);
    Array.from(logitsOf(fresh)).forEach((v, i) => expect(v).toBeCloseTo(adapted[i], 5));

    // A merged sampler checkpoint has no adapters and the same logits.
    const merged = await loadCheckpoint(fullFile);
    expect(merged.model.adapters.size).toBe(0);
    Array.from(logitsOf(merged.model)).forEach((v, i) => expect(v).toBeCloseTo(adapted[i], 4));

    // A training checkpoint keeps the adapters separate and resumes them.
    const trainFile = path.join(dir, 'train.safetensors');
    await saveTrainingCheckpoint(trainFile, model, tok, trainer, lora);
    const resumed = await loadCheckpoint(trainFile);
    expect(resumed.model.adapters.size).toBe(8);
    const t2 = new SFTTrainer(resumed.model, resumed.trainerState!.config as object);
    t2.importState(resumed.trainerState!);
    expect(t2.step(batchAt(40)).loss).toBe(trainer.step(batchAt(40)).loss);

    mergeLora(fresh);
    expect(fresh.adapters.size).toBe(0);
    Array.from(logitsOf(fresh)).forEach((v, i) => expect(v).toBeCloseTo(adapted[i], 4));
    expect(() => attachLora(model, { rank: 0 })).toThrow(/lora\.rank/);
    expect(() => attachLora(fresh, { targets: ['nope' as never] })).toThrow(/lora\.targets/);
    [trainer, t2].forEach((t) => t.dispose());
    [model, fresh, merged.model, resumed.model].forEach((m) => m.dispose());
  });
});
