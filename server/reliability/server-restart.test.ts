import { describe, expect, it } from 'vitest';
import { freePort } from '../db/embedded';
import { jobState, metricKeys, stepNumbers, seedTeam, sleep, startServer, startWorker, stepsOf, submitTrain, tempDir, waitUntil, watchRun, useReliabilityDatabase } from '../test-support/reliability/harness';

// The server process dies (kill -9) mid-run and a new one starts on the same address: the
// worker keeps its job running and reconnects, the run finishes, and a watching browser
// (socket.io client) that reconnects and catches up with runs.since has no gap.

describe('reliability: the server restarts mid-run', () => {
  const ctx = useReliabilityDatabase();

  it('the run continues and a reconnecting client sees every metric', async () => {
    const team = await seedTeam(ctx.t.db);
    const port = await freePort();
    const home = tempDir('whetstone-rel-home-');
    const first = await startServer({ databaseUrl: ctx.t.url, port, home, name: 'server-1' });
    startWorker({ url: first.url, token: team.workerToken, name: 'w', home: tempDir('whetstone-rel-workers-') });
    const steps = 10;
    const job = await submitTrain(first.url, team, steps, 2);
    const watcher = watchRun(first.url, team, job.id);
    await waitUntil('live metrics', async () => watcher.metrics.size > 0, 60_000, 50);
    expect(await jobState(ctx.t.db, job.id)).toBe('RUNNING');

    first.proc.child.kill('SIGKILL');
    await first.proc.exited;
    const downAt = Date.now();
    await sleep(1_500); // the worker's writes fail meanwhile and wait in its queue
    const second = await startServer({ databaseUrl: ctx.t.url, port, home, name: 'server-2' });
    expect(second.url).toBe(first.url);

    await waitUntil('the job to succeed', async () => (await jobState(ctx.t.db, job.id)) === 'SUCCEEDED', 60_000, 200);
    await waitUntil('the client to have reconnected and caught up', async () => watcher.caughtUp() >= 2, 20_000);
    const stored = await metricKeys(ctx.t.db, job.id);
    await waitUntil('every stored metric at the client', async () => stored.every((k) => watcher.metrics.has(k)), 10_000);
    watcher.close();
    expect([...watcher.metrics.keys()].sort()).toEqual([...stored].sort());
    expect(await stepsOf(ctx.t.db, job.id)).toEqual(stepNumbers(steps));
    // One attempt: the lease (30 s) outlived the outage, so the job never moved.
    expect(await ctx.t.db.jobAttempt.count({ where: { jobId: job.id } })).toBe(1);
    console.log(`[server-restart] ${stored.length} metrics, none missed; back ${Date.now() - downAt} ms after the crash until done`);
  }, 90_000);
});
