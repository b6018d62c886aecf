import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from './rng';
import { chooseToken, likeliestTokens } from './sampler';

// The playground's hover shows `likeliestTokens`: it must agree with what sampling reports.
describe('likeliestTokens', () => {
  const row = fc.array(fc.float({ min: -20, max: 20, noNaN: true }), { minLength: 3, maxLength: 40 }).map((a) => Float32Array.from(a));

  it('is the greedy choice first, with chooseToken’s log-probability, and sorted', () => {
    fc.assert(
      fc.property(row, fc.constantFrom(0, 0.5, 1, 2), fc.integer({ min: 1, max: 10 }), (logits, temperature, k) => {
        const banned = new Set([0]);
        const top = likeliestTokens(logits, temperature, banned, k);
        expect(top).toHaveLength(Math.min(k, logits.length - 1));
        expect(top.some((t) => t.token === 0)).toBe(false);
        for (let i = 1; i < top.length; i++) expect(top[i].logprob).toBeLessThanOrEqual(top[i - 1].logprob);
        const greedy = chooseToken(logits, { temperature: 0, topK: 0, topP: 1 }, banned, new Rng(1));
        expect(likeliestTokens(logits, 0, banned, 1)[0].logprob).toBeCloseTo(greedy.logprob, 5); // (a tie may name another token)
        // At temperature 0 both report the temperature-1 distribution; otherwise chooseToken's at t.
        const sampledAtT = chooseToken(logits, { temperature, topK: 0, topP: 1 }, banned, new Rng(7));
        const same = likeliestTokens(logits, temperature, banned, logits.length).find((t) => t.token === sampledAtT.token);
        expect(same?.logprob).toBeCloseTo(sampledAtT.logprob, 5);
      }),
    );
  });

  it('log-probabilities of every allowed token sum to one', () => {
    fc.assert(
      fc.property(row, (logits) => {
        const all = likeliestTokens(logits, 1, new Set(), logits.length);
        expect(all.reduce((s, t) => s + Math.exp(t.logprob), 0)).toBeCloseTo(1, 5);
      }),
    );
  });
});
