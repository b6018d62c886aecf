import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { jobState, stepNumbers, sleep, stepsOf, twoWorkersMidRun, waitUntil, useReliabilityDatabase } from '../test-support/reliability/harness';

// A worker paused (SIGSTOP: the daemon and its runner) past its lease, then resumed (SIGCONT):
// the job has meanwhile moved to another worker; the stale one's writes are refused (409) and
// it stops that job, and nothing it sends lands in the new attempt.

const LEASE_SECONDS = 3;

describe('reliability: a stale worker', () => {
  const ctx = useReliabilityDatabase();

  it('cannot write into the new attempt after being paused past its lease', async () => {
    const steps = 8;
    const { url, home, job, attempt: stale, holderName: name, holder: daemon, runnerPids: runners } = await twoWorkersMidRun(ctx.t.db, ctx.t.url, { leaseSeconds: LEASE_SECONDS, steps, checkpointEvery: 2 });
    const pids = [daemon.child.pid!, ...runners];
    for (const pid of pids) process.kill(pid, 'SIGSTOP');

    // The lease runs out; the job is requeued and started on the other worker.
    const next = await waitUntil('the job running on the other worker', () =>
      ctx.t.db.jobAttempt.findFirst({ where: { jobId: job.id, number: { gt: stale.number }, state: 'ACTIVE', job: { state: 'RUNNING' } }, include: { worker: true } }), 30_000, 100);
    expect(next.worker!.name).not.toBe(name);
    const ended = await ctx.t.db.jobAttempt.findUniqueOrThrow({ where: { id: stale.id } });
    expect(ended.state).toBe('ENDED');
    expect(ended.exitReason).toMatch(/lease expired/);

    for (const pid of pids) process.kill(pid, 'SIGCONT');
    // The stale daemon learns it lost the lease (a 409 on a write, or its heartbeat) and stops the job.
    await daemon.waitFor(/lease lost/, 20_000);
    await waitUntil('the stale runner to exit', async () => runners.every((pid) => !alive(pid)), 10_000);
    // Its credential with the old fencing token: every kind of write is refused.
    const { credential } = JSON.parse(fs.readFileSync(path.join(home, `worker-${name}.json`), 'utf8')) as { credential: string };
    const headers = { authorization: `Bearer ${credential}`, 'content-type': 'application/json' };
    const fence = { attemptId: stale.id, fencingToken: stale.fencingToken.toString() };
    const write = await fetch(`${url}/api/workers/stream`, { method: 'POST', headers, body: JSON.stringify({ ...fence, seq: 10_000, kind: 'metrics', items: [{ step: 0, key: 'reward/mean', value: -999 }] }) });
    expect(write.status).toBe(409);
    const finish = await fetch(`${url}/api/workers/attempts/finish`, { method: 'POST', headers, body: JSON.stringify({ ...fence, outcome: 'succeeded' }) });
    expect(finish.status).toBe(409);
    const upload = await fetch(`${url}/api/workers/checkpoints?${new URLSearchParams({ ...fence, kind: 'TRAINING', step: '7' })}`, { method: 'PUT', headers: { authorization: headers.authorization }, body: Buffer.from('stale') });
    expect(upload.status).toBe(409);
    await sleep(500);
    expect(daemon.child.exitCode).toBeNull(); // the daemon itself lives on, for other work

    await waitUntil('the job to succeed', async () => (await jobState(ctx.t.db, job.id)) === 'SUCCEEDED', 60_000, 200);
    // Nothing the stale attempt sent after its lease ended was stored.
    const late = await ctx.t.db.metricPoint.count({ where: { jobId: job.id, attempt: stale.number, time: { gt: ended.endedAt! } } });
    expect(late).toBe(0);
    expect(await ctx.t.db.checkpoint.count({ where: { attemptId: stale.id, createdAt: { gt: ended.endedAt! } } })).toBe(0);
    expect(await ctx.t.db.metricPoint.count({ where: { jobId: job.id, value: -999 } })).toBe(0);
    expect(await stepsOf(ctx.t.db, job.id)).toEqual(stepNumbers(steps));
    const final = await ctx.t.db.jobAttempt.findMany({ where: { jobId: job.id, state: 'ENDED', exitReason: { startsWith: 'succeeded' } } });
    expect(final.map((a) => a.workerId)).toEqual([next.workerId]);
  }, 90_000);
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
