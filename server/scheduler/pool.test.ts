import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { largestSubsetSum, NEVER, type Pool, startOf } from './pool';

// pool.ts's arithmetic against the plainest way to compute it (the reference planner shares
// pool.ts, so plan.reference.test.ts cannot catch a mistake here).

const NOW = 1_000;

/** Every candidate time, each with a fresh sum of what is still held. */
function plainStartOf(now: number, pool: Pool, need: number): number {
  const times = [now, ...pool.held.map((h) => h.release).filter((t) => t > now && t < NEVER)].sort((a, b) => a - b);
  for (const t of times) {
    const held = pool.held.reduce((n, h) => (h.release > t ? n + h.units : n), 0);
    if (held + need <= pool.capacity) return t;
  }
  return NEVER;
}

/** Every item once, over a bitset. */
function plainLargestSubsetSum(items: number[], limit: number): number {
  if (limit <= 0) return 0;
  const reachable = new Uint8Array(limit + 1);
  reachable[0] = 1;
  for (const item of items) for (let v = limit; v >= item; v -= 1) if (reachable[v - item]) reachable[v] = 1;
  let best = limit;
  while (best > 0 && !reachable[best]) best -= 1;
  return best;
}

const arbPool = fc.record({
  capacity: fc.integer({ min: 0, max: 40 }),
  held: fc.array(
    fc.record({
      units: fc.constantFrom(1, 1, 2, 4, 8),
      release: fc.oneof(fc.constant(NEVER), fc.constant(NOW), fc.integer({ min: NOW - 50, max: NOW + 50 })),
    }),
    { maxLength: 30 },
  ),
});

describe('pool arithmetic', () => {
  it('startOf: the first time the need fits, as every candidate time summed afresh says', () => {
    fc.assert(
      fc.property(arbPool, fc.integer({ min: 0, max: 40 }), (pool, need) => {
        expect(startOf(NOW, pool, need)).toBe(plainStartOf(NOW, pool, need));
      }),
      { numRuns: 5_000, seed: 31 },
    );
  });

  it('largestSubsetSum: the same sum as taking every item once', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(0, 1, 1, 2, 3, 4, 8, 16), { maxLength: 60 }), fc.integer({ min: -2, max: 90 }), (items, limit) => {
        expect(largestSubsetSum(items, limit)).toBe(plainLargestSubsetSum(items, limit));
      }),
      { numRuns: 5_000, seed: 32 },
    );
  });
});
