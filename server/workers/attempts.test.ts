import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../db/test-database';
import { seedTeam, type Team } from '../reliability/harness';
import { placeBatch } from '../scheduler/place';
import { attemptCalls } from './attempts';

// Start and finish (attempts.ts) against a real PostgreSQL, called as a connected daemon calls
// them when a push's ack is the start: the finish of a short job follows at once, and both are
// group-committed with other workers' calls.

describe('attempt calls', () => {
  let t: TestDatabase;
  let team: Team;
  let workerId: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    team = await seedTeam(t.db, { maxConcurrentDevices: 100 });
    const token = await t.db.workerToken.findFirstOrThrow({ where: { teamId: team.teamId } });
    const worker = await t.db.worker.create({
      data: {
        teamId: team.teamId, tokenId: token.id, name: 'w', hostname: 'h', backend: 'wasm', version: '0', labels: {}, credentialHash: `hash-${Math.random()}`,
        devices: { create: Array.from({ length: 40 }, (_, index) => ({ index, kind: 'WASM' as const, name: 'wasm', memoryBytes: BigInt(1 << 30) })) },
      },
    });
    workerId = worker.id;
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('records a finish sent right after its start after that start, for many attempts at once', async () => {
    const jobs = await Promise.all(Array.from({ length: 40 }, () => t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', config: {} } })));
    const placed = await placeBatch(t.db, jobs.map((j, i) => ({ jobId: j.id, workerId, deviceIndexes: [i], backfill: false, reason: 'test' })), new Date());
    const calls = attemptCalls(t.db, () => {});
    const ref = { workerId };
    // Each start is not awaited before its finish, as when the start went out as an ack.
    const outcomes = await Promise.all(
      placed.map(({ assignment: a }) => {
        const fence = { attemptId: a.attemptId, fencingToken: a.fencingToken };
        const started = calls.start(ref, fence);
        const finished = calls.finish(ref, { ...fence, outcome: 'succeeded', reason: 'short', exitCode: 0 });
        return Promise.all([started, finished]);
      }),
    );
    expect(outcomes).toEqual(placed.map(() => [{ state: 'RUNNING' }, { state: 'SUCCEEDED' }]));
    const events = await t.db.jobEvent.findMany({ where: { jobId: { in: jobs.map((j) => j.id) } }, orderBy: { id: 'asc' } });
    for (const job of jobs) {
      expect(events.filter((e) => e.jobId === job.id).map((e) => `${e.fromState ?? ''}→${e.toState}`)).toEqual(['QUEUED→ASSIGNED', 'ASSIGNED→RUNNING', 'RUNNING→SUCCEEDED']);
    }
  });
});
