import { describe, expect, it } from 'vitest';
import { jobState, range, seedTeam, startServer, startWorker, stepsOf, submitTrain, tempDir, waitUntil, useReliabilityDatabase } from './harness';
import { execFileSync } from 'node:child_process';

// kill -9 a worker daemon (and its runner) mid-run: the lease expires, the job is requeued and
// resumes on the other worker from its last checkpoint, and every step is in the series once.

const LEASE_SECONDS = 3;

describe('reliability: a worker killed mid-run', () => {
  const ctx = useReliabilityDatabase();

  it('resumes on another worker from its last checkpoint, every step exactly once', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = await startServer({ databaseUrl: ctx.t.url, leaseSeconds: LEASE_SECONDS });
    const home = tempDir('whetstone-rel-workers-');
    const workers = { a: startWorker({ url, token: team.workerToken, name: 'a', home }), b: startWorker({ url, token: team.workerToken, name: 'b', home }) };
    await waitUntil('two workers online', async () => (await ctx.t.db.worker.count({ where: { teamId: team.teamId, state: 'ONLINE' } })) === 2);

    const steps = 8;
    const job = await submitTrain(url, team, steps, 2);
    const first = await waitUntil('a training checkpoint', () =>
      ctx.t.db.checkpoint.findFirst({ where: { jobId: job.id, kind: 'TRAINING' }, include: { attempt: { include: { worker: true } } } }),
      60_000, 50);
    const victimName = first.attempt!.worker!.name as 'a' | 'b';
    const victim = workers[victimName];
    // The machine dies: the daemon and its runner, with no chance to say anything.
    const children = execFileSync('pgrep', ['-P', String(victim.child.pid)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
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
    expect(await stepsOf(ctx.t.db, job.id, 'reward')).toEqual(range(steps));
    expect(await stepsOf(ctx.t.db, job.id, 'loss')).toEqual(range(steps));
    // The resumed attempt wrote only the steps after its checkpoint.
    const rewritten = await ctx.t.db.metricPoint.findMany({ where: { jobId: job.id, key: 'reward', attempt: last.number }, select: { step: true }, orderBy: { step: 'asc' } });
    expect(rewritten[0].step).toBeGreaterThanOrEqual(last.resumedFrom!.step);
    console.log(`[worker-kill] resumed from step ${last.resumedFrom!.step} on ${last.worker!.name} after attempt(s) ${attempts.map((a) => a.number).join(',')}; recovered in ${Date.now() - killedAt} ms`);
  }, 90_000);
});
