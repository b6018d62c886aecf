/**
 * A whole pretrained chat model (fixtures/qwen2-chat: weights, tokenizer, chat template, as the hub
 * serves one) in the engine: its tokenizer, template and weights agree with transformers', and
 * GRPO with LoRA raises its reward on a verifiable task sampled through its chat template.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Sequence } from '../batch';
import { GRPOTrainer } from '../grpo';
import { attachLora } from '../lora';
import { Rng } from '../rng';
import { sample } from '../sampler';
import { testBackend } from '../../test-support/engine/test-setup';
import { PretrainedDecoder } from './decoder';
import { HfTokenizer } from './hf-tokenizer';

const FOLDER = path.join(__dirname, 'fixtures', 'qwen2-chat');
const expected = JSON.parse(fs.readFileSync(path.join(FOLDER, 'expected.json'), 'utf8')) as {
  messages: { role: string; content: string }[];
  ids: number[];
  last_logits: number[][];
};

beforeAll(async () => {
  await testBackend();
});

describe('a pretrained chat model', () => {
  it('reads its tokenizer, template and weights as transformers does', async () => {
    const tok = HfTokenizer.fromFolder(FOLDER);
    const model = await PretrainedDecoder.fromFolder(FOLDER);
    expect(tok.vocabSize).toBe(model.vocabSize);
    expect(tok.encodeChat(expected.messages, true)).toEqual(expected.ids);
    const conv = tok.conversation('');
    expect([...conv.message('user', expected.messages[0].content), ...conv.openTurn()]).toEqual(expected.ids);
    const logits = tf.tidy(() => model.forward([expected.ids]).logits.arraySync());
    let worst = 0;
    expected.last_logits.forEach((row, k) => row.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - logits[logits.length - 4 + k][j])))));
    expect(worst).toBeLessThan(1e-4);
    expect(tok.bos).toBe(-1);
    expect(tok.prompt('2+3=')).toEqual(tok.encode('2+3='));
    model.dispose();
  });

  it('learns with GRPO and LoRA to answer with a digit', async () => {
    const tok = HfTokenizer.fromFolder(FOLDER);
    const model = await PretrainedDecoder.fromFolder(FOLDER);
    attachLora(model, { rank: 8, alpha: 16 });
    const base = model.snapshot();
    // Verifiable: the answer (its first two tokens) has a digit in it.
    const reward = (text: string) => (/\d/.test(text) ? 1 : 0);
    const questions = ['How many legs has a cat?', 'Pick a number.', 'What is 2 + 3?', 'How old are you?'];
    const promptOf = (q: string) => {
      const conv = tok.conversation('');
      return [...conv.message('user', q), ...conv.openTurn()];
    };
    const evaluate = (seed: number) => {
      const prompts = Array.from({ length: 64 }, (_, i) => promptOf(questions[i % questions.length]));
      const out = sample(model, tok, prompts, { temperature: 1, maxTokens: 2, seed });
      return out.reduce((a, r) => a + reward(r.text), 0) / out.length;
    };
    const before = evaluate(100);
    const grpo = new GRPOTrainer(model, { learningRate: 2e-2, warmupSteps: 0, seed: 3 });
    const rng = new Rng(4);
    for (let step = 0; step < 12; step++) {
      const group = 8;
      const asked = Array.from({ length: 8 }, () => questions[rng.int(questions.length)]).flatMap((q) => new Array<string>(group).fill(q));
      const prompts = asked.map(promptOf);
      const outs = sample(model, tok, prompts, { temperature: 1, maxTokens: 2, seed: 1000 + step });
      const batch: Sequence[] = outs.map((r, i) => ({
        tokens: [...prompts[i], ...r.tokens],
        lossMask: [...prompts[i].map(() => 0), ...r.tokens.map(() => 1)],
        rewards: reward(r.text),
        group: Math.floor(i / group),
      }));
      grpo.step(batch);
    }
    grpo.dispose();
    const after = evaluate(100);
    // Measured: 0.05 → 1.00 (lr 2e-2; 0.89 at 5e-2).
    expect(before).toBeLessThan(0.3);
    expect(after).toBeGreaterThan(before + 0.4);
    for (const [name, values] of model.snapshot()) expect(values, name).toEqual(base.get(name));
    model.dispose();
  });
});
