import { describe, expect, it } from 'vitest';
import { jobState, stepNumbers, seedTeam, startServer, startWorker, stepsOf, submitTrain, tempDir, waitUntil, useReliabilityDatabase } from '../test-support/reliability/harness';

// Preemption with a real daemon: one worker with one device runs a low-priority job; a
// high-priority job arrives; the low one checkpoints and stops, the high one runs, and then the
// low one resumes from the checkpoint it made and finishes with every step once.

describe('reliability: preemption on a full pool', () => {
  const ctx = useReliabilityDatabase();

  it('a high-priority job preempts a low one, which checkpoints and later resumes from it', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = await startServer({ databaseUrl: ctx.t.url, leaseSeconds: 10 });
    startWorker({ url, token: team.workerToken, name: 'only', home: tempDir('whetstone-rel-workers-') });
    await waitUntil('the worker online', async () => (await ctx.t.db.worker.count({ where: { teamId: team.teamId, state: 'ONLINE' } })) === 1);

    const lowSteps = 10;
    const low = await submitTrain(url, team, lowSteps, 100, { priority: 0 });
    await waitUntil('the low job to make progress', async () => (await ctx.t.db.metricPoint.count({ where: { jobId: low.id, key: 'reward/mean' } })) >= 1, 60_000, 50);
    const high = await submitTrain(url, team, 3, 100, { priority: 50 });

    await waitUntil('the high job to succeed', async () => (await jobState(ctx.t.db, high.id)) === 'SUCCEEDED', 60_000, 200);
    await waitUntil('the low job to succeed', async () => (await jobState(ctx.t.db, low.id)) === 'SUCCEEDED', 60_000, 200);

    const lowAttempts = await ctx.t.db.jobAttempt.findMany({ where: { jobId: low.id }, orderBy: { number: 'asc' }, include: { resumedFrom: true } });
    const highAttempt = await ctx.t.db.jobAttempt.findFirstOrThrow({ where: { jobId: high.id } });
    expect(lowAttempts).toHaveLength(2);
    expect(lowAttempts[0].preemptRequestedAt).not.toBeNull();
    expect(lowAttempts[0].exitReason).toMatch(/^preempted/);
    // The preempted attempt made a training checkpoint (checkpointEvery is 100: only the preemption makes one) …
    const made = await ctx.t.db.checkpoint.findFirstOrThrow({ where: { attemptId: lowAttempts[0].id, kind: 'TRAINING' } });
    expect(made.step).toBeGreaterThanOrEqual(1);
    expect(made.step).toBeLessThan(lowSteps);
    // … the second attempt resumed from it, after the high job had the device.
    expect(lowAttempts[1].resumedFromId).toBe(made.id);
    expect(highAttempt.startedAt.getTime()).toBeGreaterThanOrEqual(lowAttempts[0].endedAt!.getTime());
    expect(lowAttempts[1].startedAt.getTime()).toBeGreaterThanOrEqual(highAttempt.endedAt!.getTime());
    const events = await ctx.t.db.jobEvent.findMany({ where: { jobId: low.id }, orderBy: { id: 'asc' } });
    expect(events.map((e) => e.toState)).toEqual(expect.arrayContaining(['RUNNING', 'PREEMPTED', 'QUEUED', 'SUCCEEDED']));
    expect(await stepsOf(ctx.t.db, low.id)).toEqual(stepNumbers(lowSteps));
    expect(await stepsOf(ctx.t.db, high.id)).toEqual(stepNumbers(3));
  }, 90_000);
});
