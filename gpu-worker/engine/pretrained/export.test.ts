/**
 * Exporting a fine-tuned pretrained model as a Hugging Face folder: merged, it re-imports with the
 * same logits and passes the import's own check; as a PEFT adapter, its tensors have PEFT's names
 * and layout. Where Python with transformers (and peft) is present (.ci/run installs them), the
 * real libraries load both folders and their logits match the engine's.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachLora } from '../lora';
import { Rng } from '../rng';
import { readSafetensors } from '../safetensors';
import { testBackend } from '../../test-support/engine/test-setup';
import { PretrainedDecoder } from './decoder';
import { exportHfFolder } from './export';
import { inspectHfFolder } from './inspect';

const BASE = path.join(__dirname, 'fixtures', 'qwen2-chat');
const IDS = [1, 40, 60, 80, 100, 200, 2, 5];
const python = spawnSync('python3', ['-c', 'import torch, transformers, peft'], { encoding: 'utf8' });
let out: string;
let model: PretrainedDecoder;
let expected: number[];

const logitsOf = (m: PretrainedDecoder) => Array.from(tf.tidy(() => m.forward([IDS]).logits.dataSync()));
function maxDiff(a: number[], b: number[]): number {
  expect(a.length).toBe(b.length);
  return a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
}

/** The logits transformers computes for IDS from a folder (with `adapter`, the base plus a PEFT adapter). */
function transformersLogits(folder: string, adapter?: string): number[] {
  const script = `
import json, sys, torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
if len(sys.argv) > 3:
    from peft import PeftModel
    model = PeftModel.from_pretrained(model, sys.argv[3])
model.eval()
with torch.no_grad():
    logits = model(torch.tensor([json.loads(sys.argv[2])])).logits[0]
print(json.dumps([float(v) for v in logits.flatten()]))
`;
  const r = spawnSync('python3', ['-c', script, folder, JSON.stringify(IDS), ...(adapter ? [adapter] : [])], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (r.status !== 0) throw new Error(`transformers could not load ${adapter ?? folder}:\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as number[];
}

beforeAll(async () => {
  await testBackend();
  out = fs.mkdtempSync(path.join(os.tmpdir(), 'export-'));
  model = await PretrainedDecoder.fromFolder(BASE);
  attachLora(model, { rank: 4, alpha: 8, targets: ['attn', 'mlp'] });
  // Trained adapters are not zero: give B values, so that merging changes something.
  const rng = new Rng(11);
  for (const ad of model.adapters.values()) ad.b.assign(tf.tensor(Array.from({ length: ad.b.size }, () => rng.normal() * 0.2), ad.b.shape));
  expected = logitsOf(model);
});
afterAll(() => {
  model.dispose();
  fs.rmSync(out, { recursive: true, force: true });
});

describe('exporting a fine-tuned pretrained model', () => {
  it('merged: a folder the import accepts, with the fine-tuned logits', async () => {
    const folder = path.join(out, 'merged');
    const files = await exportHfFolder(model, folder, { format: 'merged', baseFolder: BASE, baseName: 'tiny-qwen' });
    expect(files).toEqual(['chat_template.jinja', 'config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    expect((await inspectHfFolder(folder)).family).toBe('qwen2');
    const again = await PretrainedDecoder.fromFolder(folder);
    expect(maxDiff(logitsOf(again), expected)).toBeLessThan(1e-5);
    // The base's own logits differ: the adapters were folded in.
    const base = await PretrainedDecoder.fromFolder(BASE);
    expect(maxDiff(logitsOf(base), expected)).toBeGreaterThan(1e-2);
    [again, base].forEach((m) => m.dispose());
  });

  it('PEFT: the adapters alone, under PEFT’s names and layout', async () => {
    const folder = path.join(out, 'peft');
    const files = await exportHfFolder(model, folder, { format: 'peft', baseFolder: BASE, baseName: 'tiny-qwen' });
    expect(files).toContain('adapter_model.safetensors');
    const config = JSON.parse(fs.readFileSync(path.join(folder, 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8, target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'], base_model_name_or_path: 'tiny-qwen' });
    const { tensors } = await readSafetensors(path.join(folder, 'adapter_model.safetensors'));
    expect(tensors.get('base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight')!.shape).toEqual([4, 64]);
    expect(tensors.get('base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight')!.shape).toEqual([32, 4]);
    expect(tensors.size).toBe(2 * 7 * 2);
  });

  it.runIf(python.status === 0 || process.env.CI === 'true')('transformers loads both folders and computes the engine’s logits', () => {
    if (python.status !== 0) throw new Error(`Python with torch, transformers and peft is needed (.ci/run installs them): ${python.stderr.trim().split('\n').pop()}`);
    expect(maxDiff(transformersLogits(path.join(out, 'merged')), expected)).toBeLessThan(1e-4);
    expect(maxDiff(transformersLogits(BASE, path.join(out, 'peft')), expected)).toBeLessThan(1e-4);
  });
});
