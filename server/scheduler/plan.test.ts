import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_QUOTA } from './admission';
import { plan } from './plan';
import type {
  DeviceKind,
  Plan,
  PlanInput,
  PlanQueuedJob,
  PlanRunningJob,
  PlanTeamQuota,
  PlanWorker,
  WorkerState,
} from './types';

import { arbInput, GiB, KINDS, NOW, S } from '../test-support/plan-arbitraries';

function worker(
  id: string,
  count: number,
  opts: { kind?: DeviceKind; teamId?: string | null; state?: WorkerState; memoryBytes?: number } = {},
): PlanWorker {
  return {
    id,
    teamId: opts.teamId ?? null,
    state: opts.state ?? 'ONLINE',
    devices: Array.from({ length: count }, (_, index) => ({
      index,
      kind: opts.kind ?? 'CUDA',
      memoryBytes: opts.memoryBytes ?? 16 * GiB,
    })),
  };
}

function queued(id: string, over: Partial<PlanQueuedJob> = {}): PlanQueuedJob {
  return {
    id,
    teamId: 't1',
    ownerId: 'u1',
    priority: 0,
    deviceCount: 1,
    deviceKind: null,
    memoryBytes: 0,
    timeLimitSeconds: null,
    queuedAt: NOW - 1000,
    notBefore: null,
    ...over,
  };
}

function running(id: string, workerId: string, deviceIndexes: number[], over: Partial<PlanRunningJob> = {}): PlanRunningJob {
  return {
    id,
    teamId: 't1',
    ownerId: 'u1',
    priority: 0,
    workerId,
    deviceIndexes,
    startedAt: NOW - 60 * S,
    timeLimitSeconds: null,
    stopping: false,
    ...over,
  };
}

function quota(teamId: string, maxConcurrentDevices: number, over: Partial<PlanTeamQuota> = {}): PlanTeamQuota {
  return { teamId, maxConcurrentDevices, maxQueuedJobs: 100, maxPriority: 100, ...over };
}

function run(input: Partial<PlanInput>): Plan {
  return plan({ now: NOW, queued: [], running: [], workers: [], quotas: [], ...input });
}

const placed = (p: Plan, id: string) => p.placements.find((x) => x.jobId === id);
const waiting = (p: Plan, id: string) => p.waiting.find((x) => x.jobId === id);
const placedIds = (p: Plan) => p.placements.map((x) => x.jobId).sort();

// ───────────────────────────── placement ─────────────────────────────

describe('placement', () => {
  it('places a job on free devices and says where', () => {
    const p = run({ workers: [worker('w1', 2)], queued: [queued('j1', { deviceCount: 2 })] });
    expect(p.placements).toEqual([
      { jobId: 'j1', workerId: 'w1', deviceIndexes: [0, 1], backfill: false, reason: 'placed on worker w1 (CUDA devices 0, 1)' },
    ]);
    expect(p.waiting).toEqual([]);
    expect(p.preemptions).toEqual([]);
  });

  it('never splits a gang across workers', () => {
    const p = run({
      workers: [worker('w1', 2), worker('w2', 2)],
      running: [running('r1', 'w1', [0], { priority: 9 }), running('r2', 'w2', [0], { priority: 9 })],
      queued: [queued('j1', { deviceCount: 2 })],
    });
    expect(p.placements).toEqual([]);
    expect(waiting(p, 'j1')).toMatchObject({ code: 'NO_CAPACITY' });
    expect(waiting(p, 'j1')?.reason).toMatch(/^waiting: no online worker has 2 free devices; start unknown/);
  });

  it('matches the device kind, and a kindless gang is one kind', () => {
    const mixed: PlanWorker = {
      id: 'w-mixed',
      teamId: null,
      state: 'ONLINE',
      devices: [
        { index: 0, kind: 'CUDA', memoryBytes: 16 * GiB },
        { index: 1, kind: 'CPU', memoryBytes: 16 * GiB },
      ],
    };
    const p = run({
      workers: [worker('w-cpu', 4, { kind: 'CPU' }), worker('w-gpu', 1), mixed],
      queued: [
        queued('cuda', { deviceKind: 'CUDA', deviceCount: 1 }),
        queued('any2', { deviceCount: 2, queuedAt: NOW }),
      ],
    });
    expect(placed(p, 'cuda')?.workerId).toBe('w-gpu');
    // the mixed worker has two devices but not two of one kind
    expect(placed(p, 'any2')).toMatchObject({ workerId: 'w-cpu', deviceIndexes: [0, 1] });
    const q = run({ workers: [mixed], queued: [queued('any2', { deviceCount: 2 })] });
    expect(waiting(q, 'any2')).toMatchObject({
      code: 'NO_WORKER',
      reason: 'waiting: no online worker available to this team has 2 devices',
    });
  });

  it('honours memory per device', () => {
    const w: PlanWorker = {
      id: 'w1',
      teamId: null,
      state: 'ONLINE',
      devices: [
        { index: 0, kind: 'CUDA', memoryBytes: 8 * GiB },
        { index: 1, kind: 'CUDA', memoryBytes: 40 * GiB },
        { index: 2, kind: 'CUDA', memoryBytes: 8 * GiB },
      ],
    };
    const p = run({ workers: [w], queued: [queued('big', { memoryBytes: 16 * GiB, deviceKind: 'CUDA' })] });
    expect(placed(p, 'big')?.deviceIndexes).toEqual([1]);
    const q = run({ workers: [w], queued: [queued('big2', { memoryBytes: 16 * GiB, deviceKind: 'CUDA', deviceCount: 2 })] });
    expect(waiting(q, 'big2')?.reason).toBe(
      'waiting: no online worker available to this team has 2 CUDA devices with ≥ 16 GiB each',
    );
  });

  it('gives new work only to ONLINE workers; DRAINING ones keep their jobs', () => {
    const p = run({
      workers: [worker('w-drain', 4, { state: 'DRAINING' }), worker('w-off', 4, { state: 'OFFLINE' })],
      running: [running('r1', 'w-drain', [0, 1])],
      queued: [queued('j1')],
    });
    expect(p.placements).toEqual([]);
    expect(waiting(p, 'j1')).toMatchObject({
      code: 'NO_WORKER',
      // The draining worker would take it, and the reason says so (the offline one is not named).
      reason: 'waiting: no online worker available to this team has 1 device; worker w-drain would, but is draining (an admin can resume it)',
    });
    expect(p.preemptions).toEqual([]);
    // A worker is named as it registered, where it has a name.
    const named = run({ workers: [{ ...worker('w-drain', 4, { state: 'DRAINING' }), name: 'gpu-box-3' }], queued: [queued('j1')] });
    expect(waiting(named, 'j1')?.reason).toContain('worker gpu-box-3 would, but is draining');
    const q = run({
      workers: [worker('w-drain', 4, { state: 'DRAINING' }), worker('w-on', 2)],
      running: [running('r1', 'w-drain', [0, 1, 2])],
      quotas: [quota('t1', 4)],
      queued: [queued('j1', { deviceCount: 2 })],
    });
    // the draining worker's job still counts against the quota: 3 + 2 > 4
    expect(waiting(q, 'j1')?.code).toBe('QUOTA');
  });

  it('keeps a team pool to its team and uses it before the shared pool', () => {
    const workers = [worker('a-shared', 4), worker('own-t1', 4, { teamId: 't1' })];
    const p = run({
      workers,
      quotas: [quota('t2', 8)],
      queued: [queued('a', { teamId: 't1' }), queued('b', { teamId: 't2', deviceCount: 4 }), queued('c', { teamId: 't2' })],
    });
    expect(placed(p, 'a')?.workerId).toBe('own-t1');
    expect(placed(p, 'b')?.workerId).toBe('a-shared');
    expect(waiting(p, 'c')?.code).toBe('NO_CAPACITY'); // t1's free devices are not for t2
    const q = run({ workers: [worker('own-t1', 4, { teamId: 't1' })], queued: [queued('x', { teamId: 't2' })] });
    expect(waiting(q, 'x')?.code).toBe('NO_WORKER');
  });

  it('packs into the tightest fit to keep room for large gangs', () => {
    const p = run({
      workers: [worker('w-big', 4), worker('w-small', 4)],
      running: [running('r', 'w-small', [0, 1], { priority: 50 })],
      queued: [queued('small', { deviceCount: 2 })],
    });
    expect(placed(p, 'small')).toMatchObject({ workerId: 'w-small', deviceIndexes: [2, 3] });
  });

  it('does not place a job in backoff, and places it once the backoff is over', () => {
    const later = NOW + 30 * S;
    const p = run({ workers: [worker('w1', 1)], queued: [queued('j1', { notBefore: later })] });
    expect(waiting(p, 'j1')).toMatchObject({
      code: 'BACKOFF',
      reason: `waiting: backing off after a lost lease until ${new Date(later).toISOString()}`,
    });
    const q = run({ workers: [worker('w1', 1)], queued: [queued('j1', { notBefore: NOW })] });
    expect(placed(q, 'j1')).toBeDefined();
  });

  it('never books a device twice within one plan or over a running job', () => {
    const p = run({
      workers: [worker('w1', 4)],
      running: [running('r1', 'w1', [1], { priority: 99 })],
      quotas: [quota('t1', 8)],
      queued: ['a', 'b', 'c', 'd'].map((id) => queued(id, { deviceCount: 2 - Number(id === 'a') })),
    });
    const used = p.placements.flatMap((x) => x.deviceIndexes);
    expect(new Set(used).size).toBe(used.length);
    expect(used).not.toContain(1);
    expect(used.sort()).toEqual([0, 2, 3]);
  });
});

// ───────────────────────────── quotas ─────────────────────────────

describe('team quotas', () => {
  it('keeps a job waiting when its team quota is in use', () => {
    const p = run({
      workers: [worker('w1', 8)],
      running: [running('r1', 'w1', [0, 1], { priority: 5 })],
      quotas: [quota('t1', 2)],
      queued: [queued('j1')],
    });
    expect(waiting(p, 'j1')).toMatchObject({
      code: 'QUOTA',
      reason: 'waiting: team quota of 2 devices reached (2 in use, this job needs 1)',
      estimatedStartAt: null,
    });
  });

  it('counts placements made earlier in the same plan', () => {
    const p = run({
      workers: [worker('w1', 8)],
      quotas: [quota('t1', 3)],
      queued: [queued('a', { deviceCount: 2, queuedAt: NOW - 3 }), queued('b', { deviceCount: 2, queuedAt: NOW - 2 }), queued('c', { queuedAt: NOW - 1 })],
    });
    // c fits beside b's need however a ends: when a ends, c's 1 + b's 2 = 3.
    expect(placedIds(p)).toEqual(['a', 'c']);
    expect(waiting(p, 'b')?.code).toBe('QUOTA');
  });

  it('applies the default quota of 4 to a team without a row', () => {
    const p = run({
      workers: [worker('w1', 8)],
      queued: ['a', 'b', 'c'].map((id, i) => queued(id, { deviceCount: 2, queuedAt: NOW - 10 + i })),
    });
    expect(placedIds(p)).toEqual(['a', 'b']);
    expect(waiting(p, 'c')?.reason).toBe('waiting: team quota of 4 devices reached (4 in use, this job needs 2)');
  });

  it('counts jobs on offline workers and stopping jobs until they are gone', () => {
    const p = run({
      workers: [worker('w1', 4), worker('w-off', 2, { state: 'OFFLINE' })],
      running: [running('r-off', 'w-off', [0]), running('r-stop', 'w1', [0], { stopping: true })],
      quotas: [quota('t1', 3)],
      queued: [queued('j1', { deviceCount: 2 })],
    });
    expect(waiting(p, 'j1')?.code).toBe('PREEMPTING'); // room comes when r-stop is gone
    expect(p.placements).toEqual([]);
  });

  it('explains a job that asks for more than the quota', () => {
    const p = run({ workers: [worker('w1', 8)], quotas: [quota('t1', 2)], queued: [queued('j1', { deviceCount: 3 })] });
    expect(waiting(p, 'j1')).toMatchObject({
      code: 'EXCEEDS_QUOTA',
      reason: 'waiting: needs 3 devices, more than the team quota of 2',
    });
  });
});

// ───────────────────────────── order ─────────────────────────────

describe('priority and fair share', () => {
  it('places the higher priority first', () => {
    const p = run({
      workers: [worker('w1', 1)],
      queued: [queued('low', { priority: 0, queuedAt: NOW - 100 }), queued('high', { priority: 5, queuedAt: NOW })],
    });
    expect(placedIds(p)).toEqual(['high']);
  });

  it('places the oldest first among equals, whatever the ids', () => {
    const p = run({
      workers: [worker('w1', 1)],
      queued: [queued('a-new', { queuedAt: NOW }), queued('z-old', { queuedAt: NOW - 100 })],
    });
    expect(placedIds(p)).toEqual(['z-old']);
    expect(waiting(p, 'a-new')?.code).toBe('NO_CAPACITY');
  });

  it('lets the team below its share go first at equal priority', () => {
    const p = run({
      workers: [worker('w1', 2)],
      running: [running('ra', 'w1', [0], { teamId: 'A', priority: 9 })],
      queued: [queued('a', { teamId: 'A', queuedAt: NOW - 100 }), queued('b', { teamId: 'B', queuedAt: NOW })],
    });
    expect(placedIds(p)).toEqual(['b']);
  });

  it('compares teams by dominant share over device kinds, not device counts', () => {
    // A holds 1 of 2 GPUs (share 0.5), B holds 4 of 16 CPUs (share 0.25): B is below A.
    const p = run({
      workers: [worker('gpu', 2), worker('cpu', 16, { kind: 'CPU' })],
      running: [
        running('ra', 'gpu', [0], { teamId: 'A', priority: 9 }),
        running('rb', 'cpu', [0, 1, 2, 3], { teamId: 'B', priority: 9 }),
      ],
      quotas: [quota('B', 8)],
      queued: [
        queued('a', { teamId: 'A', deviceKind: 'CUDA', queuedAt: NOW - 100 }),
        queued('b', { teamId: 'B', deviceKind: 'CUDA', queuedAt: NOW }),
      ],
    });
    expect(placedIds(p)).toEqual(['b']);
  });

  it('makes equal teams take turns within one plan', () => {
    const jobs = [0, 1, 2].flatMap((i) => [
      queued(`a${i}`, { teamId: 'A', queuedAt: NOW - 100 + i }),
      queued(`b${i}`, { teamId: 'B', queuedAt: NOW - 50 + i }),
    ]);
    const p = run({ workers: [worker('w1', 4)], queued: jobs });
    expect(placedIds(p)).toEqual(['a0', 'a1', 'b0', 'b1']);
  });

  it('orders users within a team by their share', () => {
    const p = run({
      workers: [worker('w1', 2)],
      running: [running('r1', 'w1', [0], { ownerId: 'u1', priority: 9 })],
      queued: [queued('u1job', { ownerId: 'u1', queuedAt: NOW - 100 }), queued('u2job', { ownerId: 'u2', queuedAt: NOW })],
    });
    expect(placedIds(p)).toEqual(['u2job']);
  });

  it('measures team share on the shared pool only', () => {
    // A uses 4 devices of its own workers but none of the shared pool; B holds half of it.
    const p = run({
      workers: [worker('shared', 2), worker('own-A', 4, { teamId: 'A' })],
      running: [
        running('ra', 'own-A', [0, 1, 2, 3], { teamId: 'A', priority: 9 }),
        running('rb', 'shared', [0], { teamId: 'B', priority: 9 }),
      ],
      quotas: [quota('A', 8)],
      queued: [queued('b', { teamId: 'B', queuedAt: NOW - 100 }), queued('a', { teamId: 'A', queuedAt: NOW })],
    });
    expect(placedIds(p)).toEqual(['a']);
  });

  it('leaves team workers out of the shared pool capacity', () => {
    // A holds 1 of 2 shared GPUs (0.5), B 6 of 8 shared CPUs (0.75): A is below B. Counting C's
    // 8 private CPUs as shared would make B's share 6/16 and put B first.
    const p = run({
      workers: [worker('gpu', 2), worker('cpu', 8, { kind: 'CPU' }), worker('own-C', 8, { kind: 'CPU', teamId: 'C' })],
      running: [
        running('ra', 'gpu', [0], { teamId: 'A', priority: 9 }),
        running('rb', 'cpu', [0, 1, 2, 3, 4, 5], { teamId: 'B', priority: 9 }),
      ],
      quotas: [quota('B', 8)],
      queued: [
        queued('b', { teamId: 'B', deviceKind: 'CUDA', queuedAt: NOW - 100 }),
        queued('a', { teamId: 'A', deviceKind: 'CUDA', queuedAt: NOW }),
      ],
    });
    expect(placedIds(p)).toEqual(['a']);
  });

  it('lets priority beat fair share', () => {
    const p = run({
      workers: [worker('w1', 2)],
      running: [running('ra', 'w1', [0], { teamId: 'A', priority: 9 })],
      queued: [queued('a', { teamId: 'A', priority: 1 }), queued('b', { teamId: 'B', priority: 0 })],
    });
    expect(placedIds(p)).toEqual(['a']);
  });
});

// ───────────────────────────── backfill ─────────────────────────────

describe('backfill', () => {
  // w1 has 4 GPUs; a priority-20 job holds two of them for 100 more seconds. B (priority 10)
  // needs all 4 and cannot preempt it, so B is expected to start at NOW + 100 s.
  const workers = [worker('w1', 4)];
  const blocker = running('r20', 'w1', [0, 1], { teamId: 'other', priority: 20, startedAt: NOW, timeLimitSeconds: 100 });
  const big = queued('B', { priority: 10, deviceCount: 4, queuedAt: NOW - 500 });
  const base = { workers, running: [blocker], quotas: [quota('t1', 8)] };

  it('reserves for the blocked job with its expected start', () => {
    const p = run({ ...base, queued: [big] });
    expect(waiting(p, 'B')).toMatchObject({
      code: 'NO_CAPACITY',
      estimatedStartAt: NOW + 100 * S,
      target: { workerId: 'w1', kind: 'CUDA', deviceIndexes: [0, 1, 2, 3] },
      reason: `waiting: no online worker has 4 free devices; expected to start by ${new Date(NOW + 100 * S).toISOString()} on worker w1`,
    });
    expect(p.preemptions).toEqual([]);
  });

  it('lets a small job jump ahead when it ends before that start', () => {
    const p = run({ ...base, queued: [big, queued('k', { timeLimitSeconds: 50 })] });
    expect(placed(p, 'k')).toMatchObject({
      workerId: 'w1',
      backfill: true,
      reason: 'placed on worker w1 (CUDA device 2), backfilled ahead of job B (priority 10) without delaying it',
    });
    const exact = run({ ...base, queued: [big, queued('k', { timeLimitSeconds: 100 })] });
    expect(placed(exact, 'k')).toBeDefined();
  });

  it('holds back a small job that would still run at that start', () => {
    const p = run({ ...base, queued: [big, queued('k', { timeLimitSeconds: 101 })] });
    expect(placed(p, 'k')).toBeUndefined();
    expect(waiting(p, 'k')).toMatchObject({
      code: 'BEHIND',
      reason: `waiting: behind higher-priority job B (priority 10), which has 4 CUDA devices on worker w1 reserved from ${new Date(NOW + 100 * S).toISOString()}; it could run now if it ended by ${new Date(NOW + 100 * S).toISOString()}`,
    });
    const open = run({ ...base, queued: [big, queued('k')] });
    expect(waiting(open, 'k')?.code).toBe('BEHIND');
  });

  it('names an equal-priority job ahead in fair share', () => {
    const p = run({ ...base, queued: [big, queued('k', { priority: 10, queuedAt: NOW })] });
    expect(waiting(p, 'k')?.reason).toMatch(/^waiting: behind job B \(priority 10\), ahead in fair share, which has 4 CUDA/);
  });

  it('does not backfill when the blocked job start is unknown', () => {
    const forever = { ...blocker, timeLimitSeconds: null };
    const p = run({ ...base, running: [forever], queued: [big, queued('k', { timeLimitSeconds: 1 })] });
    expect(waiting(p, 'B')).toMatchObject({ code: 'NO_CAPACITY', estimatedStartAt: null });
    expect(waiting(p, 'B')?.reason).toMatch(/start unknown: jobs without a time limit hold the devices it needs$/);
    expect(waiting(p, 'k')?.code).toBe('BEHIND');
  });

  it('lets a job without a time limit take devices the blocked job will not need', () => {
    // 6 GPUs: 4 come back at +100 s and B needs 4, so the 2 free ones are surplus.
    const p = run({
      workers: [worker('w1', 6)],
      running: [{ ...blocker, deviceIndexes: [0, 1, 2, 3] }],
      quotas: [quota('t1', 8)],
      queued: [big, queued('k1'), queued('k2'), queued('k3')],
    });
    expect(placedIds(p)).toEqual(['k1', 'k2']);
    expect(waiting(p, 'k3')?.code).toBe('NO_CAPACITY');
  });

  it('counts on jobs without a limit running on when they hold what the reserved job needs', () => {
    // B needs 3 of 4: the free device 3 and, at +100 s, devices 0 and 1. Device 2's job has no
    // limit. A job without a limit on device 3 would leave B short at +100 s.
    const p = run({
      workers: [worker('w1', 4)],
      running: [
        running('x', 'w1', [0, 1], { teamId: 'other', priority: 20, startedAt: NOW, timeLimitSeconds: 100 }),
        running('open', 'w1', [2], { teamId: 'other', priority: 20 }),
      ],
      quotas: [quota('t1', 8)],
      queued: [queued('B', { priority: 10, deviceCount: 3, queuedAt: NOW - 9 }), queued('k', { queuedAt: NOW - 8 })],
    });
    expect(waiting(p, 'B')).toMatchObject({ code: 'NO_CAPACITY', estimatedStartAt: NOW + 100 * S });
    expect(waiting(p, 'k')?.code).toBe('BEHIND');
    // Whenever an open-ended holder of 2 of 4 ends, B (needs 3) has room even beside one
    // more open-ended job, but not beside two.
    const q = run({
      workers: [worker('w1', 4)],
      running: [running('open', 'w1', [0, 1], { teamId: 'other', priority: 20 })],
      quotas: [quota('t1', 8)],
      queued: [
        queued('B', { priority: 10, deviceCount: 3, queuedAt: NOW - 9 }),
        queued('k1', { queuedAt: NOW - 8 }),
        queued('k2', { queuedAt: NOW - 7 }),
      ],
    });
    expect(waiting(q, 'B')).toMatchObject({ code: 'NO_CAPACITY', estimatedStartAt: null });
    expect(placed(q, 'k1')).toBeDefined();
    expect(waiting(q, 'k2')?.code).toBe('BEHIND');
  });

  it('backfills freely on a worker the blocked job does not need', () => {
    const p = run({ ...base, workers: [worker('w1', 4), worker('w2', 3)], running: [blocker, running('x', 'w2', [0], { priority: 30 })], queued: [big, queued('k')] });
    // w2 has 2 free; w1's free devices are reserved for B
    expect(placed(p, 'k')?.workerId).toBe('w2');
  });

  it('reserves team quota for a job waiting on it', () => {
    const p = run({
      workers: [worker('w1', 8)],
      running: [running('r', 'w1', [0, 1], { priority: 20, startedAt: NOW, timeLimitSeconds: 100 })],
      quotas: [quota('t1', 4)],
      queued: [
        queued('B', { priority: 10, deviceCount: 4, queuedAt: NOW - 9 }),
        queued('short', { timeLimitSeconds: 50, queuedAt: NOW - 8 }),
        queued('long', { timeLimitSeconds: 200, queuedAt: NOW - 7 }),
      ],
    });
    expect(waiting(p, 'B')).toMatchObject({ code: 'QUOTA', estimatedStartAt: NOW + 100 * S });
    expect(placed(p, 'short')).toMatchObject({ backfill: true });
    expect(placed(p, 'short')?.reason).toMatch(/backfilled ahead of job B \(priority 10\)/);
    expect(waiting(p, 'long')).toMatchObject({ code: 'BEHIND' });
    expect(waiting(p, 'long')?.reason).toMatch(
      /^waiting: behind higher-priority job B \(priority 10\), which waits for the team quota \(expected 2025-01-01T12:01:40.000Z\); it could run now if it ended by 2025-01-01T12:01:40.000Z$/,
    );
  });
});

// ───────────────────────────── preemption ─────────────────────────────

describe('preemption', () => {
  it('preempts lower-priority work for a job that cannot otherwise run', () => {
    const p = run({
      workers: [worker('w1', 2)],
      running: [running('low', 'w1', [0, 1], { teamId: 'B', priority: 0 })],
      queued: [queued('high', { priority: 10, deviceCount: 2 })],
    });
    expect(p.preemptions).toEqual([
      {
        jobId: 'low',
        forJobId: 'high',
        workerId: 'w1',
        // two teams have work, B holds the whole shared pool: more than its half
        reason: 'preempting job low (priority 0) for job high (priority 10); team B is over its fair share',
      },
    ]);
    expect(waiting(p, 'high')).toMatchObject({
      code: 'PREEMPTING',
      reason: 'waiting: preempting job low (priority 0) to make room on worker w1',
      target: { workerId: 'w1', kind: 'CUDA', deviceIndexes: [0, 1] },
    });
  });

  it('never preempts equal or higher priority', () => {
    for (const priority of [10, 11]) {
      const p = run({
        workers: [worker('w1', 2)],
        running: [running('r', 'w1', [0, 1], { teamId: 'B', priority })],
        queued: [queued('high', { priority: 10, deviceCount: 2 })],
      });
      expect(p.preemptions).toEqual([]);
      expect(waiting(p, 'high')?.code).toBe('NO_CAPACITY');
    }
  });

  it('does not preempt when even every lower-priority job would not free enough', () => {
    const p = run({
      workers: [worker('w1', 4)],
      running: [running('r20', 'w1', [0, 1, 2], { teamId: 'B', priority: 20 }), running('r0', 'w1', [3], { teamId: 'B' })],
      queued: [queued('h', { priority: 10, deviceCount: 2 })],
    });
    expect(p.preemptions).toEqual([]);
    expect(waiting(p, 'h')?.code).toBe('NO_CAPACITY');
  });

  it('takes victims from teams over their fair share first', () => {
    // Teams A, B, C have work: an equal share is 1/3. A holds 3 of 4 shared GPUs, B holds 1.
    const p = run({
      workers: [worker('w1', 4)],
      running: [
        running('a-old', 'w1', [0, 1], { teamId: 'A', priority: 5, startedAt: NOW - 500 * S }),
        running('a-new', 'w1', [2], { teamId: 'A', priority: 5, startedAt: NOW - 10 * S }),
        running('b', 'w1', [3], { teamId: 'B', priority: 0, startedAt: NOW - 1 * S }),
      ],
      queued: [queued('c', { teamId: 'C', priority: 10 })],
    });
    expect(p.preemptions).toEqual([
      {
        jobId: 'a-new',
        forJobId: 'c',
        workerId: 'w1',
        reason: 'preempting job a-new (priority 5) for job c (priority 10); team A is over its fair share',
      },
    ]);
  });

  it('then takes the lowest priority, then the most recently started', () => {
    const running3 = [
      running('p1', 'w1', [0], { teamId: 'B', priority: 1, startedAt: NOW - 1 * S }),
      running('p0-a-old', 'w1', [1], { teamId: 'B', priority: 0, startedAt: NOW - 100 * S }),
      running('p0-b-new', 'w1', [2], { teamId: 'B', priority: 0, startedAt: NOW - 50 * S }),
    ];
    const workers = [worker('w1', 3)];
    const quotas = [quota('B', 3)];
    const one = run({ workers, quotas, running: running3, queued: [queued('h', { teamId: 'A', priority: 10 })] });
    expect(one.preemptions.map((x) => x.jobId)).toEqual(['p0-b-new']);
    const two = run({ workers, quotas, running: running3, queued: [queued('h', { teamId: 'A', priority: 10, deviceCount: 2 })] });
    expect(two.preemptions.map((x) => x.jobId)).toEqual(['p0-b-new', 'p0-a-old']);
  });

  it('drops victims it does not need (the smallest set that frees enough)', () => {
    // In order: v1 (1 device, most recent) then v2 (2 devices). Both free 3, but v2 alone frees 2.
    const p = run({
      workers: [worker('w1', 3)],
      running: [
        running('v1', 'w1', [0], { teamId: 'B', startedAt: NOW - 1 * S }),
        running('v2', 'w1', [1, 2], { teamId: 'B', startedAt: NOW - 100 * S }),
      ],
      queued: [queued('h', { teamId: 'A', priority: 10, deviceCount: 2 })],
    });
    expect(p.preemptions.map((x) => x.jobId)).toEqual(['v2']);
    expect(waiting(p, 'h')?.target?.deviceIndexes).toEqual([1, 2]);
  });

  it('picks the worker where the fewest jobs must stop', () => {
    const p = run({
      workers: [worker('w1', 2), worker('w2', 2)],
      running: [
        running('x1', 'w1', [0], { teamId: 'B' }),
        running('x2', 'w1', [1], { teamId: 'B' }),
        running('y', 'w2', [0, 1], { teamId: 'B' }),
      ],
      queued: [queued('h', { teamId: 'A', priority: 10, deviceCount: 2 })],
    });
    expect(p.preemptions.map((x) => x.jobId)).toEqual(['y']);
  });

  it('waits for a stopping job instead of preempting another', () => {
    const p = run({
      workers: [worker('w1', 2), worker('w2', 2)],
      running: [running('s', 'w1', [0, 1], { teamId: 'B', stopping: true }), running('l', 'w2', [0, 1], { teamId: 'B' })],
      queued: [queued('h', { priority: 10, deviceCount: 2 })],
    });
    expect(p.preemptions).toEqual([]);
    expect(waiting(p, 'h')).toMatchObject({
      code: 'PREEMPTING',
      reason: 'waiting: devices on worker w1 are being freed (job s stopping); they are held for this job',
      target: { workerId: 'w1', deviceIndexes: [0, 1] },
    });
  });

  it('does not preempt again on the next plan while the victim stops', () => {
    const input: PlanInput = {
      now: NOW,
      workers: [worker('w1', 2)],
      running: [running('low', 'w1', [0, 1], { teamId: 'B' })],
      queued: [queued('high', { priority: 10, deviceCount: 2 })],
      quotas: [],
    };
    const first = plan(input);
    expect(first.preemptions).toHaveLength(1);
    const next = plan({ ...input, now: NOW + 5 * S, running: [{ ...input.running[0], stopping: true }] });
    expect(next.preemptions).toEqual([]);
    expect(waiting(next, 'high')?.code).toBe('PREEMPTING');
    const done = plan({ ...input, now: NOW + 30 * S, running: [] });
    expect(placed(done, 'high')?.deviceIndexes).toEqual([0, 1]);
  });

  it('holds the freed devices for the preemptor only', () => {
    const p = run({
      workers: [worker('w1', 2)],
      running: [running('low', 'w1', [1], { teamId: 'B' })],
      quotas: [quota('t1', 8)],
      queued: [queued('high', { priority: 10, deviceCount: 2 }), queued('mid', { priority: 5 })],
    });
    expect(p.preemptions.map((x) => x.jobId)).toEqual(['low']);
    expect(placed(p, 'mid')).toBeUndefined(); // device 0 is free but held for `high`
    expect(waiting(p, 'mid')?.code).toBe('NO_CAPACITY');
  });

  it('preempts its own team lower-priority work to fit its quota', () => {
    const p = run({
      workers: [worker('b-mine', 2), worker('a-free', 4)],
      running: [running('mine-low', 'b-mine', [0, 1], { priority: 0 })],
      quotas: [quota('t1', 2)],
      queued: [queued('mine-high', { priority: 10, deviceCount: 2 })],
    });
    expect(p.preemptions.map((x) => x.jobId)).toEqual(['mine-low']);
    // it waits for mine-low's own devices rather than holding free ones elsewhere
    expect(waiting(p, 'mine-high')).toMatchObject({ code: 'PREEMPTING', target: { workerId: 'b-mine', deviceIndexes: [0, 1] } });
  });

  it('does not preempt another team to get around its own quota', () => {
    const p = run({
      workers: [worker('w1', 4)],
      running: [running('mine', 'w1', [0, 1], { priority: 50 }), running('theirs', 'w1', [2, 3], { teamId: 'B' })],
      quotas: [quota('t1', 2)],
      queued: [queued('h', { priority: 10 })],
    });
    expect(p.preemptions).toEqual([]);
    expect(waiting(p, 'h')?.code).toBe('QUOTA');
  });

  it('does not preempt into devices a higher-priority reservation counts on, unless it ends in time', () => {
    // B (priority 20) needs all of w1 and cannot preempt x (priority 30); it could have l's
    // devices by the time x ends. J (priority 10) may preempt l only if J is gone by then.
    const input = (limit: number | null): Partial<PlanInput> => ({
      workers: [worker('w1', 4)],
      running: [
        running('x', 'w1', [0, 1], { teamId: 'X', priority: 30, startedAt: NOW, timeLimitSeconds: 100 }),
        running('l', 'w1', [2, 3], { teamId: 'L', priority: 0 }),
      ],
      queued: [
        queued('B', { teamId: 'B', priority: 20, deviceCount: 4 }),
        queued('J', { teamId: 'J', priority: 10, deviceCount: 2, timeLimitSeconds: limit }),
      ],
    });
    const open = run(input(null));
    expect(waiting(open, 'B')?.code).toBe('NO_CAPACITY');
    expect(open.preemptions).toEqual([]);
    expect(waiting(open, 'J')?.code).toBe('NO_CAPACITY');
    const short = run(input(60));
    expect(short.preemptions.map((x) => [x.jobId, x.forJobId])).toEqual([['l', 'J']]);
  });

  it('does not reach into another team pool', () => {
    const p = run({
      workers: [worker('own-B', 2, { teamId: 'B' })],
      running: [running('b', 'own-B', [0, 1], { teamId: 'B' })],
      queued: [queued('h', { teamId: 'A', priority: 10 })],
    });
    expect(p.preemptions).toEqual([]);
    expect(waiting(p, 'h')?.code).toBe('NO_WORKER');
  });
});

// ───────────────────────────── properties ─────────────────────────────

const quotaFor = (input: PlanInput, teamId: string) =>
  input.quotas.find((q) => q.teamId === teamId)?.maxConcurrentDevices ?? DEFAULT_QUOTA.maxConcurrentDevices;
const endOf = (start: number, limit: number | null) => (limit === null ? Infinity : start + limit * S);
const devicesOf = (input: PlanInput, workerId: string) => input.workers.find((w) => w.id === workerId)?.devices ?? [];

/** Every device's expected release after the plan is applied: the basis of the estimates. */
function releasesAfter(input: PlanInput, p: Plan): Map<string, number> {
  const preempted = new Set(p.preemptions.map((x) => x.jobId));
  const release = new Map<string, number>();
  for (const r of input.running) {
    const at = r.stopping || preempted.has(r.id) ? NOW : Math.max(NOW, endOf(r.startedAt, r.timeLimitSeconds));
    for (const i of r.deviceIndexes) release.set(`${r.workerId}/${i}`, at);
  }
  const jobs = new Map(input.queued.map((q) => [q.id, q]));
  for (const x of p.placements) for (const i of x.deviceIndexes) release.set(`${x.workerId}/${i}`, endOf(NOW, jobs.get(x.jobId)!.timeLimitSeconds));
  for (const w of p.waiting) {
    if (w.code !== 'PREEMPTING' || !w.target) continue;
    for (const i of w.target.deviceIndexes) release.set(`${w.target.workerId}/${i}`, endOf(NOW, jobs.get(w.jobId)!.timeLimitSeconds));
  }
  return release;
}

function checkInvariants(input: PlanInput, p: Plan): void {
  const jobs = new Map(input.queued.map((q) => [q.id, q]));
  const runningById = new Map(input.running.map((r) => [r.id, r]));

  // Every queued job gets exactly one decision.
  const decided = [...p.placements.map((x) => x.jobId), ...p.waiting.map((x) => x.jobId)].sort();
  expect(decided).toEqual([...jobs.keys()].sort());

  // No device is double-booked: placements and held devices are disjoint from each other and
  // from running jobs (held devices may overlap only jobs that are stopping or being preempted).
  const preempted = new Set(p.preemptions.map((x) => x.jobId));
  const busy = new Map<string, string>();
  for (const r of input.running) for (const i of r.deviceIndexes) busy.set(`${r.workerId}/${i}`, r.id);
  const taken = new Set<string>();
  const take = (key: string, mayReplaceStopping: boolean) => {
    expect(taken.has(key)).toBe(false);
    taken.add(key);
    const holder = busy.get(key);
    if (holder === undefined) return;
    expect(mayReplaceStopping).toBe(true);
    expect(runningById.get(holder)!.stopping || preempted.has(holder)).toBe(true);
  };

  for (const x of p.placements) {
    const job = jobs.get(x.jobId)!;
    const w = input.workers.find((w) => w.id === x.workerId)!;
    // Gang on one ONLINE worker of its pools, all devices of one matching kind with the memory.
    expect(w.state).toBe('ONLINE');
    expect(w.teamId === null || w.teamId === job.teamId).toBe(true);
    expect(x.deviceIndexes).toHaveLength(job.deviceCount);
    const devices = x.deviceIndexes.map((i) => w.devices.find((d) => d.index === i)!);
    expect(devices.every(Boolean)).toBe(true);
    expect(new Set(devices.map((d) => d.kind)).size).toBe(1);
    if (job.deviceKind) expect(devices[0].kind).toBe(job.deviceKind);
    expect(devices.every((d) => d.memoryBytes >= job.memoryBytes)).toBe(true);
    // Backoff is honoured.
    expect(job.notBefore === null || job.notBefore <= NOW).toBe(true);
    for (const i of x.deviceIndexes) take(`${x.workerId}/${i}`, false);
  }
  for (const wt of p.waiting) {
    if (wt.code === 'PREEMPTING') {
      expect(wt.target).not.toBeNull();
      const job = jobs.get(wt.jobId)!;
      expect(wt.target!.deviceIndexes).toHaveLength(job.deviceCount);
      for (const i of wt.target!.deviceIndexes) take(`${wt.target!.workerId}/${i}`, true);
    }
  }

  // Team quotas are never exceeded by placements.
  const placedByTeam = new Map<string, number>();
  for (const x of p.placements) {
    const job = jobs.get(x.jobId)!;
    placedByTeam.set(job.teamId, (placedByTeam.get(job.teamId) ?? 0) + job.deviceCount);
  }
  for (const [teamId, n] of placedByTeam) {
    const held = input.running.filter((r) => r.teamId === teamId).reduce((s, r) => s + r.deviceIndexes.length, 0);
    expect(held + n).toBeLessThanOrEqual(quotaFor(input, teamId));
  }

  // Preemption: only strictly lower priority, only running jobs not already stopping, once each.
  expect(new Set(p.preemptions.map((x) => x.jobId)).size).toBe(p.preemptions.length);
  for (const x of p.preemptions) {
    const victim = runningById.get(x.jobId)!;
    const forJob = jobs.get(x.forJobId)!;
    expect(victim.stopping).toBe(false);
    expect(victim.priority).toBeLessThan(forJob.priority);
    expect(p.waiting.find((w) => w.jobId === forJob.id)?.code).toBe('PREEMPTING');
  }

  // Every decision is explained in words the UI can show as they are.
  const words = [
    ...p.placements.map((x) => [/^placed on worker /, x.reason] as const),
    ...p.waiting.map((x) => [/^waiting: /, x.reason] as const),
    ...p.preemptions.map((x) => [/^preempting job /, x.reason] as const),
  ];
  for (const [start, reason] of words) {
    expect(reason).toMatch(start);
    expect(reason).not.toMatch(/undefined|NaN|Infinity|null|\[object/);
  }

  const release = releasesAfter(input, p);
  for (const wt of p.waiting) {
    const job = jobs.get(wt.jobId)!;
    // NO_CAPACITY is honest: no worker it may use has enough matching devices left free.
    if (wt.code === 'NO_CAPACITY') {
      for (const w of input.workers) {
        if (w.state !== 'ONLINE' || (w.teamId !== null && w.teamId !== job.teamId)) continue;
        for (const kind of job.deviceKind ? [job.deviceKind] : KINDS) {
          const free = w.devices.filter(
            (d) => d.kind === kind && d.memoryBytes >= job.memoryBytes && !release.has(`${w.id}/${d.index}`),
          );
          expect(free.length).toBeLessThan(job.deviceCount);
        }
      }
    }
    // Backfill never delays an estimate: at the estimated start, enough is free by then.
    if (wt.code === 'NO_CAPACITY' && wt.estimatedStartAt !== null) {
      const t = wt.estimatedStartAt;
      const { workerId, kind } = wt.target!;
      const ready = devicesOf(input, workerId).filter(
        (d) => d.kind === kind && d.memoryBytes >= job.memoryBytes && (release.get(`${workerId}/${d.index}`) ?? NOW) <= t,
      );
      expect(ready.length).toBeGreaterThanOrEqual(job.deviceCount);
    }
    if (wt.code === 'QUOTA' && wt.estimatedStartAt !== null) {
      const t = wt.estimatedStartAt;
      let heldAtT = 0;
      for (const r of input.running) {
        if (r.teamId !== job.teamId) continue;
        const at = r.stopping || preempted.has(r.id) ? NOW : Math.max(NOW, endOf(r.startedAt, r.timeLimitSeconds));
        if (at > t) heldAtT += r.deviceIndexes.length;
      }
      for (const x of [...p.placements, ...p.waiting.filter((w) => w.code === 'PREEMPTING')]) {
        const other = jobs.get(x.jobId)!;
        if (other.teamId === job.teamId && endOf(NOW, other.timeLimitSeconds) > t) heldAtT += other.deviceCount;
      }
      expect(heldAtT + job.deviceCount).toBeLessThanOrEqual(quotaFor(input, job.teamId));
    }
  }
}

describe('planner properties', () => {
  it('never double-books, exceeds a quota, splits a gang, preempts an equal, or delays a reservation', () => {
    fc.assert(
      fc.property(arbInput, (input) => {
        checkInvariants(input, plan(input));
      }),
      { numRuns: 1000 },
    );
  });

  it('is deterministic and does not depend on the order of its input', () => {
    const arbShuffled = arbInput.chain((input) =>
      fc.tuple(
        fc.constant(input),
        fc.shuffledSubarray(input.queued, { minLength: input.queued.length }),
        fc.shuffledSubarray(input.running, { minLength: input.running.length }),
        fc.shuffledSubarray(input.workers, { minLength: input.workers.length }),
      ),
    );
    fc.assert(
      fc.property(arbShuffled, ([input, queuedJobs, runningJobs, workers]) => {
        const once = plan(input);
        expect(plan(input)).toEqual(once);
        expect(plan({ ...input, queued: queuedJobs, running: runningJobs, workers })).toEqual(once);
      }),
      { numRuns: 300 },
    );
  });

  it('does not mutate its input', () => {
    fc.assert(
      fc.property(arbInput, (input) => {
        const copy = structuredClone(input);
        plan(input);
        expect(input).toEqual(copy);
      }),
      { numRuns: 100 },
    );
  });
});
