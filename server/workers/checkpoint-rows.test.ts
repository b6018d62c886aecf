import { describe, expect, it } from 'vitest';
import { hashSecret } from '../auth/tokens';
import { seedTeam, seedWorker, trpc, type Team } from '../test-support/reliability/harness';
import { useTestServer } from '../test-support/test-server';

// Two jobs in two teams upload checkpoints with identical bytes (the same template, seed and
// config do that): the blob may be shared on disk, the rows never are.

describe('checkpoints belong to the job that wrote them', () => {
  const ctx = useTestServer();

  /** A running job of the team with an active attempt on a worker whose credential is returned. */
  async function runningJob(team: Team) {
    const credential = `wsw_${team.teamId}`;
    const worker = await seedWorker(ctx.t.db, team);
    await ctx.t.db.worker.update({ where: { id: worker.id }, data: { credentialHash: hashSecret(credential) } });
    const job = await ctx.t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', state: 'RUNNING', config: {} } });
    const attempt = await ctx.t.db.jobAttempt.create({ data: { jobId: job.id, number: 1, workerId: worker.id, deviceIndexes: [0], leaseExpiresAt: new Date(Date.now() + 600_000) } });
    const upload = async (bytes: Uint8Array, step = 5, agent?: string) => {
      const query = new URLSearchParams({ attemptId: attempt.id, fencingToken: attempt.fencingToken.toString(), kind: 'TRAINING', step: String(step), ...(agent ? { agent } : {}) });
      const res = await fetch(`${ctx.server.url}/api/workers/checkpoints?${query}`, { method: 'PUT', headers: { authorization: `Bearer ${credential}` }, body: bytes as BodyInit });
      expect(res.status).toBe(201);
      return (await res.json()) as { checkpointId: string; storageKey: string };
    };
    return { job, upload };
  }

  it('identical bytes from two teams make two rows, each listed by its own job only', async () => {
    const [a, b] = [await seedTeam(ctx.t.db), await seedTeam(ctx.t.db)];
    const [jobA, jobB] = [await runningJob(a), await runningJob(b)];
    const bytes = new TextEncoder().encode('the same checkpoint bytes');
    const upA = await jobA.upload(bytes);
    const upB = await jobB.upload(bytes);
    expect(upB.checkpointId).not.toBe(upA.checkpointId);
    expect(upB.storageKey).toBe(upA.storageKey); // one blob on disk

    const listed = async (team: Team, jobId: string) => (await trpc<Array<{ id: string }>>(ctx.server.url, team.apiKey, 'runs.checkpoints', { teamId: team.teamId, jobId }, 'query')).map((c) => c.id);
    expect(await listed(a, jobA.job.id)).toEqual([upA.checkpointId]);
    expect(await listed(b, jobB.job.id)).toEqual([upB.checkpointId]);
    // Neither team sees the other's row.
    expect(await listed(a, jobB.job.id)).toEqual([]);
    expect(await listed(b, jobA.job.id)).toEqual([]);

    // A retried upload of the same step finds its own row again.
    expect((await jobA.upload(bytes)).checkpointId).toBe(upA.checkpointId);
    expect(await ctx.t.db.checkpoint.count()).toBe(2);
  });

  it("independent learners: one row per agent at a step, each with its agent; a retried upload finds its own", async () => {
    const job = await runningJob(await seedTeam(ctx.t.db));
    const bytes = new TextEncoder().encode('a learner');
    const black = await job.upload(bytes, 3, 'black');
    const white = await job.upload(bytes, 3, 'white');
    expect(white.checkpointId).not.toBe(black.checkpointId);
    expect((await job.upload(bytes, 3, 'white')).checkpointId).toBe(white.checkpointId);
    const rows = await ctx.t.db.checkpoint.findMany({ where: { jobId: job.job.id }, orderBy: { agent: 'asc' }, select: { id: true, agent: true, step: true } });
    expect(rows).toEqual([{ id: black.checkpointId, agent: 'black', step: 3 }, { id: white.checkpointId, agent: 'white', step: 3 }]);
  });
});
