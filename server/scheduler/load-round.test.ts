import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../db/test-database';
import { seedTeam, type Team } from '../reliability/harness';
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
    const token = await t.db.workerToken.findFirstOrThrow({ where: { teamId: team.teamId } });
    // Two devices online (a window of 3 per kind); an offline worker's devices do not count.
    for (const [i, state] of (['ONLINE', 'OFFLINE'] as const).entries()) {
      await t.db.worker.create({
        data: {
          teamId: team.teamId, tokenId: token.id, name: `w${i}`, hostname: 'h', backend: 'wasm', version: '0', labels: {}, credentialHash: `hash-${i}-${Math.random()}`, state,
          devices: { create: [0, 1].map((index) => ({ index, kind: 'WASM' as const, name: 'wasm', memoryBytes: BigInt(1 << 30) })) },
        },
      });
    }
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

    const { input } = await loadRound(t.db, now);
    const all: PlanQueuedJob[] = (await t.db.job.findMany({ where: { state: 'QUEUED' } })).map((j) => ({
      id: j.id, teamId: j.teamId, ownerId: j.ownerId, priority: j.priority, deviceCount: j.deviceCount, deviceKind: j.deviceKind,
      memoryBytes: Number(j.memoryBytes), timeLimitSeconds: j.timeLimitSeconds, queuedAt: j.queuedAt.getTime(), notBefore: j.notBefore?.getTime() ?? null,
    }));
    const expected = queueWindow({ ...input, queued: all }).queued;
    expect(expected).toHaveLength(3 + 3 + 3 + 3 + 2);
    expect(input.queued.map((j) => j.id).sort()).toEqual(expected.map((j) => j.id).sort());
    expect(input.queued.find((j) => j.id === expected[0].id)).toEqual(expected[0]);
  });
});
