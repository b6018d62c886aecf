import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setMatmulPath } from './backend';
import { resolveModelConfig } from './config';
import { ConfigError } from './errors';
import { GPT } from './model';
import { sample } from './sampler';
import { testBackend } from '../test-support/engine/test-setup';
import { CharTokenizer, encodeChat, tokenizerFromJSON } from './tokenizer';

const tok = new CharTokenizer('0123456789+=abc ');

beforeAll(async () => {
  await testBackend();
});
afterAll(() => setMatmulPath('auto'));

describe('config', () => {
  it('names the field that is wrong', () => {
    expect(() => resolveModelConfig({ vocabSize: 10, width: 30, heads: 4 })).toThrow(/model\.heads/);
    expect(() => resolveModelConfig({ vocabSize: 10, contextLength: 0 })).toThrow(ConfigError);
    expect(() => resolveModelConfig({ vocabSize: 10, dropout: 1.5 })).toThrow(/model\.dropout/);
    expect(() => resolveModelConfig({ vocabSize: 10, bogus: 1 } as never)).toThrow(/model\.bogus/);
  });

  it('refuses sequences longer than the context', () => {
    const m = new GPT({ vocabSize: tok.vocabSize, contextLength: 8, layers: 1, width: 16, heads: 2 });
    expect(() => tf.tidy(() => m.forward([new Array(9).fill(1)]).logits)).toThrow(/contextLength/);
    m.dispose();
  });
});

describe('tokenizer', () => {
  it('round-trips text and serialises', () => {
    const ids = tok.encode('12+34=46');
    expect(tok.decode(ids)).toBe('12+34=46');
    const again = tokenizerFromJSON(JSON.parse(JSON.stringify(tok.toJSON())));
    expect(again.encode('12+34')).toEqual(tok.encode('12+34'));
    expect(again.vocabSize).toBe(tok.vocabSize);
  });

  it('lays out chat turns with role separators and EOS', () => {
    const ids = encodeChat(tok, [{ role: 'user', content: 'ab' }]);
    expect(ids).toEqual([tok.bos, tok.roleToken('user'), ...tok.encode('ab'), tok.eos, tok.roleToken('assistant')]);
    expect(tok.decode(ids, { keepSpecial: true })).toBe('<bos><|user|>ab<eos><|assistant|>');
    expect(tok.decode([tok.encode('?')[0]])).toBe('');
  });
});

describe('model', () => {
  it('is deterministic given the seed', () => {
    const a = new GPT({ vocabSize: tok.vocabSize, layers: 1, width: 16, heads: 2, seed: 7 });
    const b = new GPT({ vocabSize: tok.vocabSize, layers: 1, width: 16, heads: 2, seed: 7 });
    const c = new GPT({ vocabSize: tok.vocabSize, layers: 1, width: 16, heads: 2, seed: 8 });
    const x = [[1, 5, 6, 7]];
    const la = tf.tidy(() => a.forward(x).logits).arraySync();
    const lb = tf.tidy(() => b.forward(x).logits).arraySync();
    const lc = tf.tidy(() => c.forward(x).logits).arraySync();
    expect(la).toEqual(lb);
    expect(la).not.toEqual(lc);
    [a, b, c].forEach((m) => m.dispose());
  });

  it('gives the same logits on the fast and the plain matmul paths', () => {
    const m = new GPT({ vocabSize: tok.vocabSize, layers: 2, width: 32, heads: 4, tiedHead: false, valueHead: true });
    const x = [
      [1, 5, 6, 7, 8],
      [1, 9, 10, 11, 12],
    ];
    setMatmulPath('fast');
    const fast = tf.tidy(() => m.forward(x).logits).dataSync();
    setMatmulPath('plain');
    const plain = tf.tidy(() => m.forward(x).logits).dataSync();
    setMatmulPath('auto');
    for (let i = 0; i < fast.length; i++) expect(fast[i]).toBeCloseTo(plain[i], 4);
    m.dispose();
  });
});

describe('sampler', () => {
  const model = () => new GPT({ vocabSize: tok.vocabSize, contextLength: 32, layers: 2, width: 32, heads: 4, seed: 3 });
  const prompts = [tok.encode('12+3='), tok.encode('7='), tok.encode('abc ab')].map((p) => [tok.bos, ...p]);

  it('greedy output is identical with and without the KV cache, and rows do not affect each other', () => {
    const m = model();
    const opts = { temperature: 0, maxTokens: 20, stopAtEos: false };
    const cached = sample(m, tok, prompts, { ...opts, useCache: true });
    const recomputed = sample(m, tok, prompts, { ...opts, useCache: false });
    expect(cached.map((r) => r.tokens)).toEqual(recomputed.map((r) => r.tokens));
    cached.forEach((r, i) => {
      expect(r.tokens).toHaveLength(20);
      r.logprobs.forEach((lp, j) => expect(lp).toBeCloseTo(recomputed[i].logprobs[j], 3));
    });
    const alone = sample(m, tok, [prompts[1]], { ...opts, useCache: true });
    expect(alone[0].tokens).toEqual(cached[1].tokens);
    m.dispose();
  });

  it('samples reproducibly by seed, respects top-k, stop strings and max tokens, and leaks no tensors', () => {
    const m = model();
    const before = tf.memory().numTensors;
    const a = sample(m, tok, prompts, { temperature: 1, seed: 1, maxTokens: 12, stopAtEos: false });
    const b = sample(m, tok, prompts, { temperature: 1, seed: 1, maxTokens: 12, stopAtEos: false });
    expect(a.map((r) => r.tokens)).toEqual(b.map((r) => r.tokens));
    expect(tf.memory().numTensors).toBe(before);
    // top-k = 1 is greedy.
    const k1 = sample(m, tok, prompts, { temperature: 1, topK: 1, maxTokens: 12, stopAtEos: false });
    const greedy = sample(m, tok, prompts, { temperature: 0, maxTokens: 12, stopAtEos: false });
    expect(k1.map((r) => r.tokens)).toEqual(greedy.map((r) => r.tokens));
    // A tiny top-p keeps only the most likely token too.
    const p = sample(m, tok, prompts, { temperature: 1, topP: 1e-6, maxTokens: 12, stopAtEos: false });
    expect(p.map((r) => r.tokens)).toEqual(greedy.map((r) => r.tokens));
    // Stop on a two-character string the greedy output starts with: matched across two tokens.
    const stop = greedy[0].text.slice(0, 2);
    const s = sample(m, tok, [prompts[0]], { temperature: 0, maxTokens: 12, stop: ['never', stop], stopAtEos: false });
    expect(s[0].finishReason).toBe('stop');
    expect(s[0].stop).toBe(stop);
    expect(s[0].text).toBe(stop);
    expect(s[0].tokens).toEqual(greedy[0].tokens.slice(0, 2));
    expect(a.every((r) => r.finishReason === 'length' && r.tokens.length === 12)).toBe(true);
    expect(tf.memory().numTensors).toBe(before);
    m.dispose();
  });

  it('constrained rows write exactly one of their allowed sequences, with the unconstrained log-probabilities', () => {
    const m = model();
    const allowedTexts = ['12=3', '12=4', '7 a', 'c'];
    const allowed = [allowedTexts.map((t) => tok.encode(t)), null, [tok.encode('abc')]];
    for (const seed of [1, 2, 3, 4, 5]) {
      const out = sample(m, tok, prompts, { temperature: 1, seed, maxTokens: 12, stopAtEos: false, allowed });
      expect(allowedTexts).toContain(out[0].text);
      expect(out[0].finishReason).toBe('stop');
      expect(out[2].text).toBe('abc');
      // The free row writes freely, to its length limit.
      expect(out[1]).toMatchObject({ finishReason: 'length' });
      expect(out[1].tokens).toHaveLength(12);
    }
    // Greedy: each log-probability is the unconstrained policy's (what a full decode of that prefix gives).
    const greedy = sample(m, tok, [prompts[0]], { temperature: 0, maxTokens: 12, stopAtEos: false, allowed: [allowed[0]] })[0];
    expect(allowedTexts).toContain(greedy.text);
    const probe = sample(m, tok, [[...prompts[0], ...greedy.tokens.slice(0, 1)]], { temperature: 0, maxTokens: 1, stopAtEos: false, allowed: [[greedy.tokens.slice(1, 2)]] })[0];
    expect(probe.logprobs[0]).toBeCloseTo(greedy.logprobs[1], 4);
    expect(greedy.logprobs.every((lp) => lp <= 0 && Number.isFinite(lp))).toBe(true);
    expect(() => sample(m, tok, prompts, { allowed: [null] })).toThrow(/sample\.allowed/);
    expect(() => sample(m, tok, [prompts[0]], { allowed: [[]] })).toThrow(/sample\.allowed/);
    m.dispose();
  });

  it('rejects empty batches and prompts that fill the context', () => {
    const m = model();
    expect(() => sample(m, tok, [])).toThrow(/prompts/);
    expect(() => sample(m, tok, [new Array(32).fill(5)])).toThrow(/contextLength/);
    expect(() => sample(m, tok, [[1]], { topP: 2 })).toThrow(/sample\.topP/);
    m.dispose();
  });
});
