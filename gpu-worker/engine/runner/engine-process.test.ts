import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CharTokenizer } from '../tokenizer';
import { EngineProcess, type EngineProcessError } from './engine-process';

const tok = new CharTokenizer('abcde=');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-proc-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const example = (s: string) => {
  const prompt = [tok.bos, ...tok.encode(`${s}=`)];
  const answer = [...tok.encode([...s].reverse().join('')), tok.eos];
  return { tokens: [...prompt, ...answer], lossMask: [...prompt.map(() => 0), ...answer.map(() => 1)] };
};

describe('engine child process', () => {
  it('trains 200 steps with a flat tensor count, samples, saves, and reports errors with their fields', async () => {
    const engine = new EngineProcess({ env: { WHETSTONE_BACKEND: process.env.WHETSTONE_BACKEND ?? 'wasm' } });
    try {
      const report = await engine.request('backend', {});
      expect(report.devices[0].kind).toMatch(/cuda|cpu|wasm/);
      const init = await engine.request('init', {
        model: { config: { contextLength: 12, layers: 1, width: 16, heads: 2 }, tokenizer: tok.toJSON() },
        trainer: { algorithm: 'sft', config: { learningRate: 3e-3 } },
      });
      expect(init.backend.devices.length).toBeGreaterThan(0);
      expect(init.vocabSize).toBe(tok.vocabSize);
      const strings = ['abc', 'bca', 'cab', 'dea', 'eed', 'ace', 'bdb', 'cdc'];
      const counts: number[] = [];
      let first = 0;
      let last = 0;
      for (let step = 0; step < 200; step++) {
        const m = await engine.request('train', { batch: strings.map(example) });
        if (step === 0) first = m.loss;
        last = m.loss;
        if (step === 10 || step === 199) counts.push((await engine.request('memory', {})).numTensors);
        if (step % 50 === 0) await engine.request('sample', { prompts: [[tok.bos, ...tok.encode('abc=')]], options: { maxTokens: 4 } });
      }
      expect(counts[0]).toBe(counts[1]);
      expect(last).toBeLessThan(first / 3);

      const out = await engine.request('sample', { prompts: [[tok.bos, ...tok.encode('abc=')]], options: { temperature: 0, maxTokens: 4 } });
      expect(out[0].text).toBe('cba');
      const file = path.join(dir, 'ckpt.safetensors');
      expect((await engine.request('save', { path: file, kind: 'training' })).bytes).toBeGreaterThan(1000);

      const bad = await engine.request('train', { batch: [] }).catch((e: EngineProcessError) => e);
      expect((bad as EngineProcessError).info.field).toBe('batch');
      const badCfg = await engine.request('setTrainer', { algorithm: 'grpo', config: { clipLow: 5 } }).catch((e: EngineProcessError) => e);
      expect((badCfg as EngineProcessError).info.field).toBe('grpo.clipLow');

      // A second process resumes from the checkpoint at step 200.
      const resumed = new EngineProcess({ env: { WHETSTONE_BACKEND: process.env.WHETSTONE_BACKEND ?? 'wasm' } });
      try {
        const r = await resumed.request('init', { checkpoint: file, trainer: { algorithm: 'sft' } });
        expect(r.step).toBe(200);
      } finally {
        await resumed.close();
      }
    } finally {
      await engine.close();
    }
  });
});
