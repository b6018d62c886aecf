import { describe, expect, it } from 'vitest';
import { jobState, stepNumbers, stepsOf, twoWorkersMidRun, waitUntil, useReliabilityDatabase } from '../test-support/reliability/harness';

// kill -9 a worker daemon (and its runner) mid-run: the lease expires, the job is requeued and
// resumes on the other worker from its last checkpoint, and every step is in the series once.

const LEASE_SECONDS = 3;

describe('reliability: a worker killed mid-run', () => {
  const ctx = useReliabilityDatabase();

  it('resumes on another worker from its last checkpoint, every step exactly once', async () => {
    const steps = 8;
    const { job, holderName: victimName, holder: victim, runnerPids: children } = await twoWorkersMidRun(ctx.t.db, ctx.t.url, { leaseSeconds: LEASE_SECONDS, steps, checkpointEvery: 2 });
    // The machine dies: the daemon and its runner, with no chance to say anything.
    victim.child.kill('SIGKILL');
    for (const pid of children) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already exited with its parent
      }
    }
    expect(await jobState(ctx.t.db, job.id)).not.toBe('SUCCEEDED');
    const killedAt = Date.now();

    await waitUntil('the job to succeed', async () => (await jobState(ctx.t.db, job.id)) === 'SUCCEEDED', 60_000, 200);
    const attempts = await ctx.t.db.jobAttempt.findMany({ where: { jobId: job.id }, orderBy: { number: 'asc' }, include: { worker: true, resumedFrom: true } });
    const last = attempts.at(-1)!;
    expect(attempts[0].exitReason).toMatch(/lease expired/);
    expect(last.worker!.name).not.toBe(victimName);
    expect(last.resumedFrom?.kind).toBe('TRAINING');
    expect(last.resumedFrom!.step).toBeGreaterThanOrEqual(2);
    // Every step once, for every metric the runner writes per step.
    expect(await stepsOf(ctx.t.db, job.id, 'reward/mean')).toEqual(stepNumbers(steps));
    expect(await stepsOf(ctx.t.db, job.id, 'loss/total')).toEqual(stepNumbers(steps));
    // The resumed attempt wrote only the steps after its checkpoint.
    const rewritten = await ctx.t.db.metricPoint.findMany({ where: { jobId: job.id, key: 'reward/mean', attempt: last.number }, select: { step: true }, orderBy: { step: 'asc' } });
    expect(rewritten[0].step).toBeGreaterThanOrEqual(last.resumedFrom!.step);
    console.log(`[worker-kill] resumed from step ${last.resumedFrom!.step} on ${last.worker!.name} after attempt(s) ${attempts.map((a) => a.number).join(',')}; recovered in ${Date.now() - killedAt} ms`);
  }, 90_000);
});
