import { describe, expect, it } from 'vitest';
import { LEAVE_ROUTE } from '../../sdk/worker-protocol';
import { seedTeam } from '../test-support/reliability/harness';
import { useTestServer } from '../test-support/test-server';

// A daemon that exits says so (LEAVE_ROUTE): it is OFFLINE at once, and a job placed on it while
// it drained goes back to the queue, with the attempt counted as a preemption, not a loss.

describe('a worker that leaves', () => {
  const ctx = useTestServer();

  it('is offline at once, and what was placed on it is queued again', async () => {
    const team = await seedTeam(ctx.t.db);
    const reg = await fetch(`${ctx.server.url}/api/workers/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: team.workerToken, name: 'leaver', hostname: 'h', backend: 'wasm', version: '0', devices: [{ index: 0, kind: 'WASM', name: 'wasm', memoryBytes: 1 << 30 }] }),
    });
    const { workerId, credential } = (await reg.json()) as { workerId: string; credential: string };
    const job = await ctx.t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', config: {}, state: 'ASSIGNED', attempts: 1 } });
    await ctx.t.db.jobAttempt.create({ data: { jobId: job.id, number: 1, workerId, deviceIndexes: [0], leaseExpiresAt: new Date(Date.now() + 60_000) } });

    expect((await fetch(`${ctx.server.url}${LEAVE_ROUTE}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(401);
    const left = await fetch(`${ctx.server.url}${LEAVE_ROUTE}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}` }, body: '{}' });
    expect(left.status).toBe(200);
    expect(await left.json()).toEqual({ ok: true, requeued: 1 });

    expect((await ctx.t.db.worker.findUniqueOrThrow({ where: { id: workerId } })).state).toBe('OFFLINE');
    expect((await ctx.t.db.job.findUniqueOrThrow({ where: { id: job.id } })).state).toBe('QUEUED');
    const attempt = await ctx.t.db.jobAttempt.findFirstOrThrow({ where: { jobId: job.id } });
    expect(attempt).toMatchObject({ state: 'ENDED', exitReason: 'preempted: its worker left' });
  });
});
