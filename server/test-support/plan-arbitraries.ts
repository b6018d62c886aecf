// Random clusters for the planner's property tests (plan.test.ts, queue-window.test.ts).
import fc from 'fast-check';
import { DEFAULT_QUOTA } from '../scheduler/admission';
import type { DeviceKind, PlanInput, WorkerState } from '../scheduler/types';

export const NOW = Date.UTC(2025, 0, 1, 12, 0, 0);
export const GiB = 2 ** 30;
export const S = 1000;

export const KINDS: DeviceKind[] = ['CUDA', 'CPU', 'WASM'];
const TEAMS = ['ta', 'tb', 'tc'];

/** Mostly `common`, sometimes `rare`: keeps random clusters busy but placeable. */
const mostly = <T, U>(common: fc.Arbitrary<T>, rare: fc.Arbitrary<U>, weight = 3) =>
  fc.oneof({ arbitrary: common, weight }, { arbitrary: rare, weight: 1 });

/** A random cluster: up to 4 workers of up to 8 devices, running jobs on some, up to 12 queued jobs. */
export const arbInput: fc.Arbitrary<PlanInput> = fc
  .record({
    workers: fc.array(
      fc.record({
        pool: mostly(fc.constant(null), fc.constantFrom(...TEAMS)),
        state: mostly(fc.constant<WorkerState>('ONLINE'), fc.constantFrom<WorkerState>('DRAINING', 'OFFLINE')),
        devices: fc.array(
          fc.record({
            kind: mostly(fc.constant<DeviceKind>('CUDA'), fc.constantFrom<DeviceKind>('CPU', 'WASM'), 2),
            memGiB: fc.constantFrom(8, 16, 40),
            occupant: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null, freq: 2 }),
          }),
          { minLength: 1, maxLength: 8 },
        ),
      }),
      { minLength: 1, maxLength: 4 },
    ),
    occupants: fc.array(
      fc.record({
        teamId: fc.constantFrom(...TEAMS),
        ownerId: fc.constantFrom('u1', 'u2'),
        priority: fc.integer({ min: 0, max: 3 }),
        startedAgo: fc.integer({ min: 0, max: 1000 }),
        limit: fc.option(fc.integer({ min: 1, max: 2000 }), { nil: null }),
        stopping: mostly(fc.constant(false), fc.constant(true), 4),
      }),
      { minLength: 4, maxLength: 4 },
    ),
    queued: fc.array(
      fc.record({
        teamId: fc.constantFrom(...TEAMS),
        ownerId: fc.constantFrom('u1', 'u2'),
        priority: fc.integer({ min: 0, max: 3 }),
        deviceCount: mostly(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 3, max: 6 })),
        deviceKind: mostly(fc.constant(null), fc.constantFrom(...KINDS), 1),
        memGiB: mostly(fc.constant(0), fc.constantFrom(8, 16, 40)),
        limit: fc.option(fc.integer({ min: 1, max: 2000 }), { nil: null }),
        queuedAgo: fc.integer({ min: 0, max: 1000 }),
        notBefore: mostly(fc.constant(null), fc.integer({ min: -100, max: 100 }), 6),
      }),
      { maxLength: 12 },
    ),
    quotas: fc.array(fc.option(fc.integer({ min: 1, max: 10 }), { nil: null }), { minLength: 3, maxLength: 3 }),
  })
  .map(({ workers, occupants, queued: jobs, quotas }) => {
    const input: PlanInput = { now: NOW, queued: [], running: [], workers: [], quotas: [] };
    workers.forEach((w, wi) => {
      const id = `w${wi}`;
      input.workers.push({
        id,
        teamId: w.pool,
        state: w.state,
        devices: w.devices.map((d, index) => ({ index, kind: d.kind, memoryBytes: d.memGiB * GiB })),
      });
      // Devices with the same occupant number on a worker belong to one running job.
      occupants.forEach((o, oi) => {
        const deviceIndexes = w.devices.flatMap((d, index) => (d.occupant === oi ? [index] : []));
        if (deviceIndexes.length === 0) return;
        input.running.push({
          id: `r${wi}-${oi}`,
          teamId: w.pool ?? o.teamId,
          ownerId: o.ownerId,
          priority: o.priority,
          workerId: id,
          deviceIndexes,
          startedAt: NOW - o.startedAgo * S,
          timeLimitSeconds: o.limit,
          stopping: o.stopping,
        });
      });
    });
    jobs.forEach((q, qi) =>
      input.queued.push({
        id: `q${qi}`,
        teamId: q.teamId,
        ownerId: q.ownerId,
        priority: q.priority,
        deviceCount: q.deviceCount,
        deviceKind: q.deviceKind,
        memoryBytes: q.memGiB * GiB,
        timeLimitSeconds: q.limit,
        queuedAt: NOW - q.queuedAgo * S,
        notBefore: q.notBefore === null ? null : NOW + q.notBefore * S,
      }),
    );
    quotas.forEach((max, ti) => {
      if (max !== null) input.quotas.push({ ...DEFAULT_QUOTA, teamId: TEAMS[ti], maxConcurrentDevices: max });
    });
    return input;
  });

/**
 * Larger random clusters for the fast planner's equivalence with the reference
 * (plan.reference.test.ts): up to 12 workers, 40 queued jobs (runs of identical jobs, as sweeps
 * are), more teams, users and priorities, so that its indexes see several workers per request,
 * jobs of one kind in a row, and preemption across workers.
 */
export const arbLargeInput: fc.Arbitrary<PlanInput> = fc
  .record({
    workers: fc.array(
      fc.record({
        pool: mostly(fc.constant(null), fc.constantFrom('ta', 'tb', 'tc', 'td'), 5),
        state: mostly(fc.constant<WorkerState>('ONLINE'), fc.constantFrom<WorkerState>('DRAINING', 'OFFLINE'), 6),
        kind: mostly(fc.constant<DeviceKind>('CUDA'), fc.constantFrom<DeviceKind>('CPU', 'WASM', 'WEBGPU'), 3),
        memGiB: fc.constantFrom(8, 16, 40),
        devices: fc.integer({ min: 1, max: 8 }),
        occupants: fc.array(fc.option(fc.integer({ min: 0, max: 5 }), { nil: null, freq: 3 }), { minLength: 8, maxLength: 8 }),
      }),
      { minLength: 1, maxLength: 12 },
    ),
    occupants: fc.array(
      fc.record({
        teamId: fc.constantFrom('ta', 'tb', 'tc', 'td'),
        ownerId: fc.constantFrom('u1', 'u2', 'u3'),
        priority: fc.integer({ min: 0, max: 4 }),
        startedAgo: fc.integer({ min: 0, max: 1000 }),
        limit: fc.option(fc.integer({ min: 1, max: 2000 }), { nil: null }),
        stopping: mostly(fc.constant(false), fc.constant(true), 5),
      }),
      { minLength: 6, maxLength: 6 },
    ),
    sweeps: fc.array(
      fc.record({
        teamId: fc.constantFrom('ta', 'tb', 'tc', 'td'),
        ownerId: fc.constantFrom('u1', 'u2', 'u3'),
        priority: fc.integer({ min: 0, max: 4 }),
        deviceCount: mostly(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 3, max: 8 })),
        deviceKind: mostly(fc.constant(null), fc.constantFrom(...KINDS), 1),
        memGiB: mostly(fc.constant(0), fc.constantFrom(8, 16, 40)),
        limit: fc.option(fc.integer({ min: 1, max: 2000 }), { nil: null }),
        queuedAgo: fc.integer({ min: 0, max: 1000 }),
        notBefore: mostly(fc.constant(null), fc.integer({ min: -100, max: 100 }), 8),
        copies: fc.integer({ min: 1, max: 6 }),
      }),
      { maxLength: 10 },
    ),
    quotas: fc.array(fc.option(fc.integer({ min: 1, max: 24 }), { nil: null }), { minLength: 4, maxLength: 4 }),
  })
  .map(({ workers, occupants, sweeps, quotas }) => {
    const input: PlanInput = { now: NOW, queued: [], running: [], workers: [], quotas: [] };
    workers.forEach((w, wi) => {
      const id = `w${wi}`;
      input.workers.push({
        id,
        name: `node-${wi}`,
        teamId: w.pool,
        state: w.state,
        devices: Array.from({ length: w.devices }, (_, index) => ({ index, kind: w.kind, memoryBytes: w.memGiB * GiB })),
      });
      occupants.forEach((o, oi) => {
        const deviceIndexes = w.occupants.slice(0, w.devices).flatMap((occupant, index) => (occupant === oi ? [index] : []));
        if (deviceIndexes.length === 0) return;
        input.running.push({
          id: `r${wi}-${oi}`,
          teamId: w.pool ?? o.teamId,
          ownerId: o.ownerId,
          priority: o.priority,
          workerId: id,
          deviceIndexes,
          startedAt: NOW - o.startedAgo * S,
          timeLimitSeconds: o.limit,
          stopping: o.stopping,
        });
      });
    });
    sweeps.forEach((q, qi) => {
      for (let c = 0; c < q.copies; c += 1) {
        input.queued.push({
          id: `q${qi}-${c}`,
          teamId: q.teamId,
          ownerId: q.ownerId,
          priority: q.priority,
          deviceCount: q.deviceCount,
          deviceKind: q.deviceKind,
          memoryBytes: q.memGiB * GiB,
          timeLimitSeconds: q.limit,
          queuedAt: NOW - (q.queuedAgo - c) * S,
          notBefore: q.notBefore === null ? null : NOW + q.notBefore * S,
        });
      }
    });
    quotas.forEach((max, ti) => {
      if (max !== null) input.quotas.push({ ...DEFAULT_QUOTA, teamId: ['ta', 'tb', 'tc', 'td'][ti], maxConcurrentDevices: max });
    });
    return input;
  });
