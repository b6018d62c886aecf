import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plan } from './plan';
import { referencePlan } from '../test-support/plan-reference';
import { arbInput, arbLargeInput } from '../test-support/plan-arbitraries';
import { drainStep, syntheticCluster } from '../test-support/synthetic-cluster';
import type { Plan, PlanInput } from './types';

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

describe('the victims index (rule 6) follows what changes within a plan', () => {
  const GiB = 2 ** 30;
  const NOW = Date.UTC(2026, 0, 1);
  const cuda = (n: number, memGiB: number) => Array.from({ length: n }, (_, index) => ({ index, kind: 'CUDA' as const, memoryBytes: memGiB * GiB }));
  const running = (id: string, teamId: string, workerId: string, startedAgoS: number) => ({
    id,
    teamId,
    ownerId: `${teamId}-user`,
    priority: 0,
    workerId,
    deviceIndexes: [0],
    startedAt: NOW - startedAgoS * 1000,
    timeLimitSeconds: null,
    stopping: false,
  });
  const queued = (id: string, teamId: string, memGiB: number, queuedAgoS: number) => ({
    id,
    teamId,
    ownerId: `${teamId}-user`,
    priority: 1,
    deviceCount: 1,
    deviceKind: 'CUDA' as const,
    memoryBytes: memGiB * GiB,
    timeLimitSeconds: null,
    queuedAt: NOW - queuedAgoS * 1000,
    notBefore: null,
  });

  it('a team that starts borrowing by a placement has its jobs preempted first from then on', () => {
    // a preempts on w1 (r1); tb's placement of b on w0's small devices takes it past an equal
    // share (3 of 7 devices among 3 teams); so for c, tb's r4 on w3 is a borrower's job, cheaper
    // to preempt than tc's r2 on w2, though the two cost the same when a looked.
    const input: PlanInput = {
      now: NOW,
      workers: [
        { id: 'w0', teamId: null, state: 'ONLINE', devices: cuda(4, 8) },
        { id: 'w1', teamId: null, state: 'ONLINE', devices: cuda(1, 80) },
        { id: 'w2', teamId: null, state: 'ONLINE', devices: cuda(1, 80) },
        { id: 'w3', teamId: null, state: 'ONLINE', devices: cuda(1, 80) },
      ],
      running: [running('r1', 'tb', 'w1', 30), running('r2', 'tc', 'w2', 20), running('r4', 'tb', 'w3', 10)],
      queued: [queued('a', 'ta', 40, 30), queued('b', 'tb', 0, 20), queued('c', 'tb', 40, 10)],
      quotas: ['ta', 'tb', 'tc'].map((teamId) => ({ teamId, maxConcurrentDevices: 3, maxQueuedJobs: 100, maxPriority: 10 })),
    };
    const expected = referencePlan(input);
    expect(expected.preemptions.map((p) => [p.jobId, p.forJobId])).toEqual([
      ['r1', 'a'],
      ['r4', 'c'],
    ]);
    expect(expected.placements.map((p) => [p.jobId, p.workerId])).toEqual([['b', 'w0']]);
    expect(plan(input)).toEqual(expected);
  });

  it("a preemptor that would delay its team's quota reservation but for its own jobs takes the best of the plans that free them", () => {
    // r waits for 4 of ta's 6 devices of quota, from when h1 and h6 end (in an hour); j (one
    // device, two hours) would delay it, unless one of ta's open-ended low-priority jobs (h4 on w1,
    // h5 on w2) is preempted: both do, and w1 comes first in rule 6's order.
    const job = (id: string, workerId: string, devices: number, priority: number, limitS: number | null, stopping = false) => ({
      ...running(id, 'ta', workerId, 60),
      priority,
      deviceIndexes: Array.from({ length: devices }, (_, k) => k),
      timeLimitSeconds: limitS === null ? null : 60 + limitS,
      stopping,
    });
    const input: PlanInput = {
      now: NOW,
      workers: [
        { id: 'w0', teamId: null, state: 'ONLINE', devices: cuda(5, 80) },
        { id: 'w1', teamId: null, state: 'ONLINE', devices: cuda(1, 80) },
        { id: 'w2', teamId: null, state: 'ONLINE', devices: cuda(1, 80) },
        { id: 'w3', teamId: null, state: 'ONLINE', devices: cuda(1, 80) },
      ],
      running: [
        job('h1', 'w0', 2, 3, 3600),
        { ...job('h6', 'w0', 1, 3, 3600), deviceIndexes: [2] },
        job('h5', 'w2', 1, 0, null),
        job('h4', 'w1', 1, 0, null),
        job('s1', 'w3', 1, 0, null, true),
      ],
      queued: [
        { ...queued('r', 'ta', 0, 20), priority: 3, deviceCount: 4 },
        { ...queued('j', 'ta', 0, 10), priority: 2, timeLimitSeconds: 7200 },
      ],
      quotas: [{ teamId: 'ta', maxConcurrentDevices: 6, maxQueuedJobs: 100, maxPriority: 10 }],
    };
    const expected = referencePlan(input);
    expect(expected.waiting.map((w) => [w.jobId, w.code])).toEqual([
      ['r', 'QUOTA'],
      ['j', 'PREEMPTING'],
    ]);
    expect(expected.preemptions.map((p) => [p.jobId, p.forJobId, p.workerId])).toEqual([['h4', 'j', 'w1']]);
    expect(plan(input)).toEqual(expected);
  });
});
