import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { seedTeam, seedWorker, type Team } from '../test-support/reliability/harness';
import { loadRound } from './loop';
import { queueWindow } from './queue-window';
import type { PlanQueuedJob } from './types';

// A round's input, read from a real PostgreSQL: the queue window is cut in SQL, and must be the
// window queue-window.ts defines (and its property test checks against the planner).

describe('a round reads the queue window', () => {
  let t: TestDatabase;
  let team: Team;

  beforeAll(async () => {
    t = await createTestDatabase();
    team = await seedTeam(t.db, { maxConcurrentDevices: 100 });
    // Two devices online (a window of 3 per kind); an offline worker's devices do not count.
    for (const [i, state] of (['ONLINE', 'OFFLINE'] as const).entries()) await seedWorker(t.db, team, { name: `w${i}`, devices: 2, state });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('reads the first devices + 1 jobs of each kind, oldest first, and every kind', async () => {
    const now = new Date();
    const at = (s: number) => new Date(now.getTime() - 100_000 + s * 1000);
    const jobs: Array<Parameters<typeof t.db.job.create>[0]['data']> = [];
    const base = { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN' as const, config: {} };
    // Kind A, queued newest first so that insertion order is not the answer; the window's edge
    // falls between two jobs queued at the same time (the id decides).
    for (const s of [9, 8, 7, 7, 6, 5]) jobs.push({ ...base, queuedAt: at(s) });
    for (let i = 0; i < 4; i++) jobs.push({ ...base, priority: 1, queuedAt: at(i) });
    for (let i = 0; i < 4; i++) jobs.push({ ...base, deviceCount: 2, queuedAt: at(i) });
    for (let i = 0; i < 5; i++) jobs.push({ ...base, notBefore: new Date(now.getTime() + 60_000), queuedAt: at(i) });
    for (let i = 0; i < 2; i++) jobs.push({ ...base, timeLimitSeconds: 60, queuedAt: at(i) });
    for (const data of jobs) await t.db.job.create({ data });

    const { input, beyondWindow } = await loadRound(t.db, now);
    expect(beyondWindow).toBe(true);
    const all: PlanQueuedJob[] = (await t.db.job.findMany({ where: { state: 'QUEUED' } })).map((j) => ({
      id: j.id, teamId: j.teamId, ownerId: j.ownerId, priority: j.priority, deviceCount: j.deviceCount, deviceKind: j.deviceKind,
      memoryBytes: Number(j.memoryBytes), timeLimitSeconds: j.timeLimitSeconds, queuedAt: j.queuedAt.getTime(), notBefore: j.notBefore?.getTime() ?? null,
    }));
    const expected = queueWindow({ ...input, queued: all }).queued;
    expect(expected).toHaveLength(3 + 3 + 3 + 3 + 2);
    expect(input.queued.map((j) => j.id).sort()).toEqual(expected.map((j) => j.id).sort());
    expect(input.queued.find((j) => j.id === expected[0].id)).toEqual(expected[0]);
    await t.db.job.updateMany({ where: { state: 'QUEUED' }, data: { state: 'CANCELLED' } });
  });

  it('says whether jobs wait beyond the window: not when a kind fills it exactly, and when one more is queued', async () => {
    const base = { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN' as const, config: {} };
    const now = new Date();
    for (let i = 0; i < 3; i++) await t.db.job.create({ data: { ...base, queuedAt: new Date(now.getTime() - 10_000 + i * 1000) } });
    let read = await loadRound(t.db, now);
    expect(read.input.queued).toHaveLength(3);
    expect(read.beyondWindow).toBe(false);
    const last = await t.db.job.create({ data: { ...base, queuedAt: now } });
    read = await loadRound(t.db, now);
    expect(read.input.queued.map((j) => j.id)).not.toContain(last.id);
    expect([...read.waitingReasons.keys()].sort()).toEqual(read.input.queued.map((j) => j.id).sort());
    expect(read.beyondWindow).toBe(true);
  });

  it('reads at most its bound of queued jobs, the first of every kind before the later ones', async () => {
    await t.db.job.updateMany({ where: { state: 'QUEUED' }, data: { state: 'CANCELLED' } });
    const base = { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN' as const, config: {} };
    const now = new Date();
    // Four kinds (priorities 0 to 3) of three jobs each: a bound of 6 reads the first of each, then two more.
    for (let p = 0; p < 4; p++) for (let i = 0; i < 3; i++) await t.db.job.create({ data: { ...base, priority: p, queuedAt: new Date(now.getTime() - 10_000 + i * 1000) } });
    const read = await loadRound(t.db, now, 6);
    expect(read.input.queued).toHaveLength(6);
    expect(new Set(read.input.queued.map((j) => j.priority)).size).toBe(4);
    expect(read.beyondWindow).toBe(true);
    const whole = await loadRound(t.db, now);
    expect(whole.input.queued).toHaveLength(12);
    expect(whole.beyondWindow).toBe(false);
    await t.db.job.updateMany({ where: { state: 'QUEUED' }, data: { state: 'CANCELLED' } });
  });
});
