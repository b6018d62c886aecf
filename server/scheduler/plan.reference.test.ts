import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plan } from './plan';
import { referencePlan } from '../test-support/plan-reference';
import { arbInput, arbLargeInput } from '../test-support/plan-arbitraries';
import { drainStep, syntheticCluster } from '../test-support/synthetic-cluster';
import type { Plan } from './types';

// The fast planner (plan.ts) against the planner it replaced (test-support/plan-reference.ts):
// the same placements, preemptions and waiting jobs, with the same reasons, expected starts and
// targets, in the same order, on random clusters with preemption, backfill, quotas and fair share.
// Seeded: a failure names its seed and path, and CI runs the same clusters every time.

/** How often each kind of decision came up, so that the properties are known to cover them. */
function tally(p: Plan, seen: Map<string, number>): void {
  const add = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);
  if (p.placements.some((x) => x.backfill)) add('backfill');
  if (p.placements.length > 0) add('placement');
  if (p.preemptions.length > 0) add('preemption');
  for (const w of p.waiting) add(w.code);
}

describe('the fast planner decides as the reference planner', () => {
  it('on small random clusters', () => {
    const seen = new Map<string, number>();
    fc.assert(
      fc.property(arbInput, (input) => {
        const expected = referencePlan(input);
        tally(expected, seen);
        expect(plan(input)).toEqual(expected);
      }),
      { numRuns: 3_000, seed: 2020 },
    );
    for (const what of ['placement', 'backfill', 'preemption', 'QUOTA', 'NO_CAPACITY', 'BEHIND', 'PREEMPTING', 'BACKOFF', 'NO_WORKER']) {
      expect(seen.get(what) ?? 0, what).toBeGreaterThan(20);
    }
  });

  it('on larger random clusters with sweeps of identical jobs', () => {
    const seen = new Map<string, number>();
    fc.assert(
      fc.property(arbLargeInput, (input) => {
        const expected = referencePlan(input);
        tally(expected, seen);
        expect(plan(input)).toEqual(expected);
      }),
      { numRuns: 2_000, seed: 2021 },
    );
    for (const what of ['placement', 'backfill', 'preemption', 'QUOTA', 'NO_CAPACITY', 'BEHIND', 'PREEMPTING']) {
      expect(seen.get(what) ?? 0, what).toBeGreaterThan(20);
    }
  });

  it('on consecutive rounds of a synthetic cluster draining its queue', () => {
    for (const priorities of ['equal', 'mixed'] as const) {
      const cluster = syntheticCluster({ workers: 12, queued: 300, priorities, teams: 5, users: 20, seed: 7 });
      let input = cluster.input;
      for (let round = 0; round < 15; round += 1) {
        const expected = referencePlan(input);
        expect(plan(input)).toEqual(expected);
        input = drainStep(cluster, expected, 600, 0.1);
      }
    }
  });
});
