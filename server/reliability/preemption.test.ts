import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../db/test-database';
import { jobState, killAll, range, seedTeam, startServer, startWorker, stepsOf, submitTrain, tempDir, waitUntil } from './harness';

// Preemption with a real daemon: one worker with one device runs a low-priority job; a
// high-priority job arrives; the low one checkpoints and stops, the high one runs, and then the
// low one resumes from the checkpoint it made and finishes with every step once.

describe('reliability: preemption on a full pool', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await killAll();
    await t?.drop();
  });

  it('a high-priority job preempts a low one, which checkpoints and later resumes from it', async () => {
    const team = await seedTeam(t.db);
    const { url } = await startServer({ databaseUrl: t.url, leaseSeconds: 10 });
    startWorker({ url, token: team.workerToken, name: 'only', home: tempDir('whetstone-rel-workers-') });
    await waitUntil('the worker online', async () => (await t.db.worker.count({ where: { teamId: team.teamId, state: 'ONLINE' } })) === 1);

    const lowSteps = 10;
    const low = await submitTrain(url, team, lowSteps, 100, { priority: 0 });
    await waitUntil('the low job to make progress', async () => (await t.db.metricPoint.count({ where: { jobId: low.id, key: 'reward' } })) >= 1, 60_000, 50);
    const high = await submitTrain(url, team, 3, 100, { priority: 50 });

    await waitUntil('the high job to succeed', async () => (await jobState(t.db, high.id)) === 'SUCCEEDED', 60_000, 200);
    await waitUntil('the low job to succeed', async () => (await jobState(t.db, low.id)) === 'SUCCEEDED', 60_000, 200);

    const lowAttempts = await t.db.jobAttempt.findMany({ where: { jobId: low.id }, orderBy: { number: 'asc' }, include: { resumedFrom: true } });
    const highAttempt = await t.db.jobAttempt.findFirstOrThrow({ where: { jobId: high.id } });
    expect(lowAttempts).toHaveLength(2);
    expect(lowAttempts[0].preemptRequestedAt).not.toBeNull();
    expect(lowAttempts[0].exitReason).toMatch(/^preempted/);
    // The preempted attempt made a training checkpoint (checkpointEvery is 100: only the preemption makes one) …
    const made = await t.db.checkpoint.findFirstOrThrow({ where: { attemptId: lowAttempts[0].id, kind: 'TRAINING' } });
    expect(made.step).toBeGreaterThanOrEqual(1);
    expect(made.step).toBeLessThan(lowSteps);
    // … the second attempt resumed from it, after the high job had the device.
    expect(lowAttempts[1].resumedFromId).toBe(made.id);
    expect(highAttempt.startedAt.getTime()).toBeGreaterThanOrEqual(lowAttempts[0].endedAt!.getTime());
    expect(lowAttempts[1].startedAt.getTime()).toBeGreaterThanOrEqual(highAttempt.endedAt!.getTime());
    const events = await t.db.jobEvent.findMany({ where: { jobId: low.id }, orderBy: { id: 'asc' } });
    expect(events.map((e) => e.toState)).toEqual(expect.arrayContaining(['RUNNING', 'PREEMPTED', 'QUEUED', 'SUCCEEDED']));
    expect(await stepsOf(t.db, low.id)).toEqual(range(lowSteps));
    expect(await stepsOf(t.db, high.id)).toEqual(range(3));
  }, 90_000);
});
