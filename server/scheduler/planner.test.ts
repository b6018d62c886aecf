import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Planner } from './planner';
import { planRound } from './plan-round';
import { arbInput, arbLargeInput, S } from '../test-support/plan-arbitraries';
import { drainStep, random, syntheticCluster } from '../test-support/synthetic-cluster';
import type { Plan, PlanInput, PlanQueuedJob, PlanRunningJob } from './types';

// A Planner keeps its indexes from round to round (plan.ts, Kept); every round's plan must be
// exactly the plan a fresh planner makes of that round's input. The rounds here change the
// cluster as the scheduler loop and the workers would, and in the ways a kept index could miss:
// jobs start, stop, end and come back; time passes a little, a lot (past time limits) or not at
// all; jobs go into backoff; teams start and stop borrowing; workers drain, leave and come back.

/** The next round's input: the plan applied, then what the cluster does on its own meanwhile. */
function nextRound(input: PlanInput, decisions: Plan, rng: () => number, round: number): PlanInput {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)];
  const now = input.now + pick([0, 0, 1, 30, 600, 3600, 5 * 3600]) * S;
  const queuedById = new Map(input.queued.map((j) => [j.id, j]));
  const placed = new Set(decisions.placements.map((p) => p.jobId));
  const victims = new Set(decisions.preemptions.map((p) => p.jobId));
  const running: PlanRunningJob[] = [];
  const queued: PlanQueuedJob[] = input.queued.filter((j) => !placed.has(j.id));
  for (const job of input.running) {
    if (job.stopping && rng() < 0.7) {
      // Stopped: back in the queue (as a preempted job is), or gone (cancelled).
      if (rng() < 0.8) queued.push({ id: job.id, teamId: job.teamId, ownerId: job.ownerId, priority: job.priority, deviceCount: job.deviceIndexes.length, deviceKind: null, memoryBytes: 0, timeLimitSeconds: job.timeLimitSeconds, queuedAt: now, notBefore: rng() < 0.3 ? now + pick([1, 60, 900]) * S : null });
      continue;
    }
    if (rng() < 0.15) continue; // ended
    // Kept as the same object most of the time (the bench's drain), a copy otherwise (the loop reads rows anew).
    const same = victims.has(job.id) ? { ...job, stopping: true } : job;
    running.push(rng() < 0.5 ? same : { ...same, deviceIndexes: [...same.deviceIndexes] });
  }
  for (const p of decisions.placements) {
    const job = queuedById.get(p.jobId) as PlanQueuedJob;
    running.push({ id: job.id, teamId: job.teamId, ownerId: job.ownerId, priority: job.priority, workerId: p.workerId, deviceIndexes: p.deviceIndexes, startedAt: input.now, timeLimitSeconds: job.timeLimitSeconds, stopping: false });
  }
  // New jobs: copies of queued ones (a sweep goes on), some with another priority.
  for (const job of input.queued.slice(0, Math.floor(rng() * 4))) {
    queued.push({ ...job, id: `${job.id}+${round}`, queuedAt: now, priority: rng() < 0.3 ? pick([0, 1, 2, 3]) : job.priority });
  }
  // A team cancels its queue (fewer teams with work: the others' equal share, and so who borrows, changes).
  const cancelled = rng() < 0.2 && queued.length > 0 ? pick(queued).teamId : null;
  const requeued = queued.filter((j) => j.teamId !== cancelled).map((j) => (rng() < 0.05 ? { ...j, notBefore: now + 60 * S } : rng() < 0.3 ? { ...j } : j));
  let workers = input.workers;
  if (rng() < 0.1 && workers.length > 0) {
    // A worker drains, goes offline, or comes back.
    const w = pick(workers);
    const state = pick(['ONLINE', 'DRAINING', 'OFFLINE'] as const);
    workers = workers.map((x) => (x === w ? { ...x, state } : x));
  }
  const quotas = rng() < 0.1 ? input.quotas.map((q) => ({ ...q, maxConcurrentDevices: Math.max(1, q.maxConcurrentDevices + pick([-2, 2])) })) : input.quotas;
  return { now, queued: requeued, running, workers, quotas };
}

function expectSameRounds(first: PlanInput, seed: number, rounds: number): void {
  const rng = random(seed);
  // Without the rolling refresh, which would hide what the bookkeeping misses.
  const planner = new Planner({ rollingRounds: Number.POSITIVE_INFINITY });
  let input = first;
  for (let round = 0; round < rounds; round += 1) {
    const fresh = planRound(input);
    const kept = planner.round(input);
    expect(kept.plan, `round ${round}`).toEqual(fresh.plan);
    expect(kept.read.map((j) => j.id), `round ${round}`).toEqual(fresh.read.map((j) => j.id));
    input = nextRound(input, fresh.plan, rng, round);
  }
}

describe('a Planner that keeps its indexes between rounds plans each round as a fresh planner does', () => {
  it('on small random clusters over changing rounds', () => {
    fc.assert(
      fc.property(arbInput, fc.integer(), (input, seed) => expectSameRounds(input, seed, 12)),
      { numRuns: 600, seed: 2030 },
    );
  });

  it('on larger random clusters with sweeps of identical jobs', () => {
    fc.assert(
      fc.property(arbLargeInput, fc.integer(), (input, seed) => expectSameRounds(input, seed, 12)),
      { numRuns: 400, seed: 2031 },
    );
  });

  it('when a round\'s plan was not applied (every start failed), so the next round starts where it did', () => {
    // The round's own placements and preemptions changed who borrows mid-round, and the victims of
    // those teams were refreshed for it; the next round's input is the same cluster, so nothing in
    // it differs from the last round's start, and the kept victims must be refreshed back anyway.
    const same = (input: PlanInput) => {
      const planner = new Planner({ rollingRounds: Number.POSITIVE_INFINITY });
      for (let round = 0; round < 3; round += 1) {
        const next = { ...input, now: input.now + round * 1_000 };
        expect(planner.round(next).plan, `round ${round}`).toEqual(planRound(next).plan);
      }
    };
    fc.assert(fc.property(arbInput, same), { numRuns: 600, seed: 2032 });
    fc.assert(fc.property(arbLargeInput, same), { numRuns: 300, seed: 2033 });
  });

  it('on a synthetic cluster draining its queue, mixed priorities', () => {
    const cluster = syntheticCluster({ workers: 40, queued: 2_000, priorities: 'mixed', teams: 6, users: 40, seed: 11 });
    const planner = new Planner({ rollingRounds: 8 });
    let input = cluster.input;
    for (let round = 0; round < 25; round += 1) {
      const fresh = planRound(input);
      const kept = planner.round(input);
      expect(kept.plan, `round ${round}`).toEqual(fresh.plan);
      input = drainStep(cluster, fresh.plan, 30, 0.05);
    }
  });

  it('starts again from nothing when a worker changes or the clock goes back, and still plans the same', () => {
    const cluster = syntheticCluster({ workers: 8, queued: 200, priorities: 'mixed', teams: 3, users: 8, seed: 5 });
    const planner = new Planner({ fullEveryMs: 10 * 60_000 });
    const input = cluster.input;
    expect(planner.round(input).plan).toEqual(planRound(input).plan);
    const earlier = { ...input, now: input.now - 1_000 };
    expect(planner.round(earlier).plan).toEqual(planRound(earlier).plan);
    const oneMore = { ...input, workers: [...input.workers, { id: 'worker-new', teamId: null, state: 'ONLINE' as const, devices: [{ index: 0, kind: 'CUDA' as const, memoryBytes: 2 ** 36 }] }] };
    expect(planner.round(oneMore).plan).toEqual(planRound(oneMore).plan);
  });
});

describe('what a Planner keeps follows changes that touch no worker', () => {
  const NOW = Date.UTC(2026, 0, 1, 12);
  const cuda = (n: number) => Array.from({ length: n }, (_, index) => ({ index, kind: 'CUDA' as const, memoryBytes: 2 ** 36 }));
  const worker = (id: string, n: number) => ({ id, teamId: null, state: 'ONLINE' as const, devices: cuda(n) });
  const runningJob = (id: string, teamId: string, priority: number, workerId: string, deviceIndexes: number[], startedAgoMin: number): PlanRunningJob => ({
    id, teamId, ownerId: `${teamId}-user`, priority, workerId, deviceIndexes, startedAt: NOW - startedAgoMin * 60_000, timeLimitSeconds: null, stopping: false,
  });
  const queuedJob = (id: string, teamId: string, priority: number): PlanQueuedJob => ({
    id, teamId, ownerId: `${teamId}-user`, priority, deviceCount: 1, deviceKind: 'CUDA', memoryBytes: 0, timeLimitSeconds: null, queuedAt: NOW - 60_000, notBefore: null,
  });

  it('a team that stops borrowing because fewer teams have work changes the victims on its workers', () => {
    // Six shared devices: team a holds four (borrowing while two or more teams have work), team b
    // one on w-b beside a's a1, team d one on w-a. Seven teams with work: b and d borrow (1/6 > 1/7),
    // and team c's priority-1 job would preempt b's b1 (the more recent) on w-b, or d's d1 on w-a,
    // which comes first. Then d's job ends for one of c's own, and only a, b, c and e have work:
    // b (1/6 < 1/4) no longer borrows, so a's a1 goes before it, though nothing on w-b changed.
    const workers = [worker('w-a', 1), worker('w-b', 2), worker('w-c', 3)];
    const a1 = runningJob('a1', 'a', 0, 'w-b', [0], 20);
    const b1 = runningJob('b1', 'b', 0, 'w-b', [1], 10);
    const a2 = runningJob('a2', 'a', 5, 'w-c', [0, 1, 2], 30);
    const first: PlanInput = {
      now: NOW,
      workers,
      running: [a1, b1, a2, runningJob('d1', 'd', 0, 'w-a', [0], 5)],
      queued: [queuedJob('c1', 'c', 1), ...['e', 'f', 'g'].map((t) => queuedJob(`${t}1`, t, 0))],
      quotas: [],
    };
    const planner = new Planner({ rollingRounds: Number.POSITIVE_INFINITY });
    const round1 = planner.round(first);
    expect(round1.plan).toEqual(planRound(first).plan);
    expect(round1.plan.preemptions.map((p) => p.jobId)).toEqual(['d1']);

    const second: PlanInput = {
      ...first,
      now: NOW + 1_000,
      running: [a1, b1, a2, runningJob('c9', 'c', 9, 'w-a', [0], 0)],
      queued: [queuedJob('c1', 'c', 1), queuedJob('e1', 'e', 0)],
    };
    const round2 = planner.round(second);
    expect(round2.plan).toEqual(planRound(second).plan);
    expect(round2.plan.preemptions.map((p) => p.jobId)).toEqual(['a1']);
  });

  it('a team that starts borrowing mid-round, and no longer does when the next round begins, has its victims refreshed back', () => {
    // Four shared devices, four teams with work: borrowing is holding more than one. Team b borrows
    // throughout (quota 0), t and v hold one each and do not. In round 1, t's t9 takes the free
    // device on w4-free and t borrows mid-round: its victims on w3-t are refreshed for it, and p's
    // p1 computes every worker's victims at priority 5 with t borrowing; it preempts b's b1 (w1-b,
    // tied with w3-t's t1, first in id order), so w3-t itself is not touched. The plan is not
    // applied and t9 is cancelled: round 2 begins as round 1 did, t not borrowing, and nothing on
    // w3-t changed, so only the last round's refreshed teams (Kept's refreshedTeams) say that
    // w3-t's victims were computed for a borrowing t. p1 takes w4-free, p2 preempts b1, and p3,
    // between w2-v's v1 and w3-t's t1 at the same cost, preempts v1, first in id order; with w3-t's
    // victims as round 1 left them, t1 (a borrower's, cheaper) would be chosen.
    const workers = [worker('w1-b', 1), worker('w2-v', 1), worker('w3-t', 1), worker('w4-free', 1)];
    const running = [runningJob('b1', 'b', 0, 'w1-b', [0], 10), runningJob('v1', 'v', 0, 'w2-v', [0], 10), runningJob('t1', 't', 0, 'w3-t', [0], 10)];
    const quotas = [{ teamId: 'b', maxConcurrentDevices: 0, maxQueuedJobs: 100, maxPriority: 100 }];
    const first: PlanInput = { now: NOW, workers, running, queued: [queuedJob('t9', 't', 9), queuedJob('p1', 'p', 5)], quotas };
    const planner = new Planner({ rollingRounds: Number.POSITIVE_INFINITY });
    const round1 = planner.round(first);
    expect(round1.plan).toEqual(planRound(first).plan);
    expect(round1.plan.placements.map((p) => [p.jobId, p.workerId])).toEqual([['t9', 'w4-free']]);
    expect(round1.plan.preemptions.map((p) => p.jobId)).toEqual(['b1']);

    const second: PlanInput = { ...first, now: NOW + 1_000, queued: ['p1', 'p2', 'p3'].map((id) => queuedJob(id, 'p', 5)) };
    const round2 = planner.round(second);
    expect(round2.plan).toEqual(planRound(second).plan);
    expect(round2.plan.placements.map((p) => [p.jobId, p.workerId])).toEqual([['p1', 'w4-free']]);
    expect(round2.plan.preemptions.map((p) => p.jobId)).toEqual(['b1', 'v1']);
  });
});
