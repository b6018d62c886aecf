/**
 * Checkpoints of an imported model hold what is not the imported model: adapters alone while its
 * weights are the imported ones, and every weight once they were fine-tuned — also when adapters
 * were put on top of a fully fine-tuned checkpoint later (which then exports merged only).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BaseModelLoader, loadCheckpoint, saveSamplerCheckpoint } from '../checkpoint';
import { attachLora } from '../lora';
import { testBackend } from '../../test-support/engine/test-setup';
import { PretrainedDecoder } from './decoder';
import { exportHfFolder } from './export';
import { HfTokenizer } from './hf-tokenizer';

const FOLDER = path.join(__dirname, 'fixtures', 'qwen2-chat');
const BASE = { modelId: 'model-1', contentHash: 'c'.repeat(64) };
const PROMPT = [3, 17, 42, 9, 60, 5, 33];
const logitsOf = (m: { forward(ids: number[][]): { logits: tf.Tensor } }) => Array.from(tf.tidy(() => m.forward([PROMPT]).logits.dataSync()));
const loadBase: BaseModelLoader = async (ref, opts) => ({ model: await PretrainedDecoder.fromFolder(FOLDER, { valueHead: opts.valueHead, base: ref }), tokenizer: HfTokenizer.fromFolder(FOLDER, ref.modelId) });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pretrained-ckpt-'));

beforeAll(async () => {
  await testBackend();
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('checkpoints of an imported model', () => {
  it('LoRA on a fully fine-tuned checkpoint keeps the fine-tuned weights under its adapters', async () => {
    const tok = HfTokenizer.fromFolder(FOLDER, BASE.modelId);
    // A full fine-tune: every weight moved from the imported one.
    const tuned = await PretrainedDecoder.fromFolder(FOLDER, { base: BASE });
    for (const v of tuned.params.values()) v.assign(tf.tidy(() => v.add(tf.randomNormal(v.shape, 0, 0.02, 'float32', 3))));
    const full = path.join(dir, 'full.safetensors');
    await saveSamplerCheckpoint(full, tuned, tok);
    tuned.dispose();

    // A run from it with adapters (training.lora), which have moved too.
    const loaded = await loadCheckpoint(full, { loadBase });
    attachLora(loaded.model, { rank: 2, seed: 1 });
    for (const ad of loaded.model.adapters.values()) ad.b.assign(tf.randomNormal(ad.b.shape, 0, 0.1, 'float32', 5));
    const adapted = path.join(dir, 'adapted.safetensors');
    await saveSamplerCheckpoint(adapted, loaded.model, tok);

    const again = await loadCheckpoint(adapted, { loadBase });
    expect(again.model.adapters.size).toBe(loaded.model.adapters.size);
    expect(logitsOf(again.model)).toEqual(logitsOf(loaded.model));
    // Its adapters alone would load on the imported model: as a PEFT adapter it is refused.
    await expect(exportHfFolder(again.model as PretrainedDecoder, path.join(dir, 'peft'), { format: 'peft', baseFolder: FOLDER, baseName: 'tiny' })).rejects.toThrow(/fully fine-tuned weights.*export it merged/);
    [loaded.model, again.model].forEach((m) => m.dispose());

    // Adapters on the imported weights themselves: the checkpoint holds the adapters alone.
    const fresh = await PretrainedDecoder.fromFolder(FOLDER, { base: BASE });
    attachLora(fresh, { rank: 2, seed: 1 });
    const small = path.join(dir, 'small.safetensors');
    await saveSamplerCheckpoint(small, fresh, tok);
    fresh.dispose();
    expect(fs.statSync(small).size).toBeLessThan(fs.statSync(adapted).size / 4);
  });
});
