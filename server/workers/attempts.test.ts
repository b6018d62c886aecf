import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { seedTeam, seedWorker, type Team } from '../test-support/reliability/harness';
import { placeBatch } from '../scheduler/place';
import { createAttemptCalls } from './attempts';

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
    workerId = (await seedWorker(t.db, team, { devices: 40 })).id;
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('records a finish sent right after its start after that start, for many attempts at once', async () => {
    const jobs = await Promise.all(Array.from({ length: 40 }, () => t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', config: {} } })));
    const placed = await placeBatch(t.db, jobs.map((j, i) => ({ jobId: j.id, workerId, deviceIndexes: [i], backfill: false, reason: 'test' })), new Date());
    const calls = createAttemptCalls(t.db, () => {});
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

  it('requeues a job whose attempt ended lost (its device failed), with backoff, and fails it once its attempts are used', async () => {
    const job = await t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', config: {}, maxAttempts: 2 } });
    const calls = createAttemptCalls(t.db, () => {});
    const ref = { workerId };
    const lose = async () => {
      const [{ assignment: a }] = await placeBatch(t.db, [{ jobId: job.id, workerId, deviceIndexes: [0], backfill: false, reason: 'test' }], new Date());
      const fence = { attemptId: a.attemptId, fencingToken: a.fencingToken };
      await calls.start(ref, fence);
      return calls.finish(ref, { ...fence, outcome: 'lost', reason: 'DeviceFaultError: WebGPU device lost: unknown', exitCode: 1 });
    };
    expect(await lose()).toEqual({ state: 'QUEUED' });
    const queued = await t.db.job.findUniqueOrThrow({ where: { id: job.id } });
    expect(queued.waitingReason).toMatch(/retrying after: lost: DeviceFaultError: WebGPU device lost/);
    expect(queued.notBefore!.getTime()).toBeGreaterThan(queued.queuedAt.getTime());
    await t.db.job.update({ where: { id: job.id }, data: { notBefore: null } });
    expect(await lose()).toEqual({ state: 'FAILED' });
    expect((await t.db.job.findUniqueOrThrow({ where: { id: job.id } })).failureReason).toMatch(/WebGPU device lost.*gave up after 2 lost attempts/);
  });

  it("answers each call of a batch for itself: a wrong token or another worker's call for an attempt is refused while its own starts and finishes it", async () => {
    const jobs = await Promise.all(Array.from({ length: 2 }, () => t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', config: {} } })));
    const placed = await placeBatch(t.db, jobs.map((j, i) => ({ jobId: j.id, workerId, deviceIndexes: [i], backfill: false, reason: 'test' })), new Date());
    const [busy, fence] = placed.map(({ assignment: a }) => ({ attemptId: a.attemptId, fencingToken: a.fencingToken }));
    const other = { workerId: (await seedWorker(t.db, team, { name: 'other' })).id };
    const wrong = { ...fence, fencingToken: (BigInt(fence.fencingToken) + 1n).toString() };
    const calls = createAttemptCalls(t.db, () => {});
    const ref = { workerId };
    const statuses = async (answers: Array<Promise<{ state: string }>>) =>
      (await Promise.allSettled(answers)).map((a) => (a.status === 'fulfilled' ? a.value.state : (a.reason as { status: number }).status));

    // The first call runs at once, alone; the others arrive while it runs and go together as the
    // next batch, the right one last (a batch that answered per attempt gave all three its answer).
    expect(await statuses([calls.start(ref, busy), calls.start(ref, wrong), calls.start(other, fence), calls.start(ref, fence)])).toEqual(['RUNNING', 409, 404, 'RUNNING']);
    const finish = (input: typeof fence) => ({ ...input, outcome: 'succeeded' as const, reason: 'done', exitCode: 0 });
    expect(await statuses([calls.finish(ref, finish(busy)), calls.finish(ref, finish(wrong)), calls.finish(other, finish(fence)), calls.finish(ref, finish(fence))])).toEqual(['SUCCEEDED', 409, 404, 'SUCCEEDED']);

    const events = await t.db.jobEvent.findMany({ where: { jobId: jobs[1].id }, orderBy: { id: 'asc' } });
    expect(events.map((e) => `${e.fromState ?? ''}→${e.toState}`)).toEqual(['QUEUED→ASSIGNED', 'ASSIGNED→RUNNING', 'RUNNING→SUCCEEDED']);
  });
});
