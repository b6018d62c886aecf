import { describe, expect, it } from 'vitest';
import { jobState, metricKeys, stepNumbers, seedTeam, startServer, startWorker, stepsOf, submitTrain, tempDir, waitUntil, watchRun, useReliabilityDatabase } from '../test-support/reliability/harness';

// Two server processes on one database: exactly one is the scheduler's leader, every job is
// placed once, live events reach browsers connected to either replica (the worker streams to
// one of them), and when the leader dies the other takes over.

describe('reliability: two server replicas', () => {
  const ctx = useReliabilityDatabase();

  it('exactly one schedules, and live events reach clients of both', async () => {
    const team = await seedTeam(ctx.t.db);
    const home = tempDir('whetstone-rel-home-');
    const [a, b] = await Promise.all([
      startServer({ databaseUrl: ctx.t.url, home, name: 'replica-a' }),
      startServer({ databaseUrl: ctx.t.url, home, name: 'replica-b' }),
    ]);
    const leaders = () => [a, b].filter((r) => /this server is the leader/.test(r.proc.output()));
    await waitUntil('a leader', async () => leaders().length > 0, 10_000);
    const [leader] = leaders();
    const other = leader === a ? b : a;
    // The worker talks to the replica that does not schedule: its assignment push crosses replicas.
    startWorker({ url: other.url, token: team.workerToken, name: 'w', home: tempDir('whetstone-rel-workers-') });

    const steps = 6;
    const job = await submitTrain(b.url, team, steps, 2);
    const watchers = [watchRun(a.url, team, job.id), watchRun(b.url, team, job.id)];
    await waitUntil('the job to succeed', async () => (await jobState(ctx.t.db, job.id)) === 'SUCCEEDED', 60_000, 200);
    expect(leaders()).toHaveLength(1);
    const events = await ctx.t.db.jobEvent.findMany({ where: { jobId: job.id }, orderBy: { id: 'asc' } });
    expect(events.map((e) => e.toState)).toEqual(['QUEUED', 'ASSIGNED', 'RUNNING', 'SUCCEEDED']);
    expect(await stepsOf(ctx.t.db, job.id)).toEqual(stepNumbers(steps));

    const stored = await metricKeys(ctx.t.db, job.id);
    for (const w of watchers) {
      await waitUntil('every metric at both clients', async () => stored.every((k) => w.metrics.has(k)), 10_000);
      w.close();
    }

    // The leader dies: the other replica takes the lock and places the next job.
    leader.proc.child.kill('SIGKILL');
    await other.proc.waitFor(/this server is the leader/, 15_000);
    const next = await submitTrain(other.url, team, 2, 2);
    await waitUntil('the next job placed by the new leader', async () => (await jobState(ctx.t.db, next.id)) === 'SUCCEEDED', 60_000, 200);
  }, 90_000);
});
