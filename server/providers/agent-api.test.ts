import { beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_POLL_ROUTE } from '../../sdk/provider-protocol';
import { applyPlan, scheduleOnce } from '../scheduler/loop';
import type { SchedulerEvents } from '../scheduler/loop';
import { createUserWithTeam, useTestServer } from '../test-support/test-server';
import { backoffSeconds, launchesWanted } from './launches';

// The provider agent's side of issue 22 without a cluster: an agent's polls as HTTP calls, with
// the reports a real agent (gpu-worker/provider-agent.ts) sends. The same flow against a real
// Slurm is gpu-worker/cluster/provider.test.ts.

async function trpc(base: string, cookie: string, path: string, input: unknown, kind: 'query' | 'mutation' = 'mutation') {
  const res =
    kind === 'query'
      ? await fetch(`${base}/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`, { headers: { cookie } })
      : await fetch(`${base}/api/trpc/${path}`, { method: 'POST', headers: { cookie, origin: base, 'content-type': 'application/json' }, body: JSON.stringify({ json: input }) });
  const body = (await res.json()) as { result?: { data: { json: any } }; error?: { json: { message: string } } };
  return { status: res.status, data: body.result?.data.json, error: body.error?.json.message };
}

async function poll(base: string, token: string, reports: unknown[] = []) {
  const res = await fetch(`${base}${PROVIDER_POLL_ROUTE}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ agent: { host: 'login-1', version: '1' }, reports }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const events: SchedulerEvents = { assigned() {}, signal() {}, jobChanged() {} };

describe('launch arithmetic', () => {
  it('launches for the waiting demand, less what is coming, within both limits', () => {
    const s = { devicesPerWorker: 2, maxWorkers: 5, maxPendingLaunches: 2 };
    expect(launchesWanted(s, { demandDevices: 0, coming: 0, live: 0, pending: 0 })).toBe(0);
    expect(launchesWanted(s, { demandDevices: 3, coming: 0, live: 0, pending: 0 })).toBe(2);
    expect(launchesWanted(s, { demandDevices: 3, coming: 1, live: 1, pending: 1 })).toBe(1);
    expect(launchesWanted(s, { demandDevices: 20, coming: 0, live: 0, pending: 0 })).toBe(2);
    expect(launchesWanted(s, { demandDevices: 20, coming: 0, live: 4, pending: 0 })).toBe(1);
    expect(launchesWanted(s, { demandDevices: 20, coming: 2, live: 5, pending: 0 })).toBe(0);
  });

  it('backs off 10 s, doubling, up to 10 minutes', () => {
    expect([0, 1, 2, 3, 7, 20].map(backoffSeconds)).toEqual([0, 10, 20, 40, 600, 600]);
  });
});

describe('a Slurm provider and its agent', () => {
  const ctx = useTestServer();
  let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
  let teamId: string;
  let token: string;
  let providerId: string;
  const settings = { partition: 'gpu', installPath: '/shared/whetstone', deviceKind: 'CPU', maxWorkers: 3, maxPendingLaunches: 2, registerTimeoutSeconds: 60 };

  beforeAll(async () => {
    await createUserWithTeam(ctx.server.url, ctx.t.db); // the installation's first account
    owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    teamId = owner.team.id;
  });

  it('refuses settings with the field named, and creates a provider whose credential is shown once', async () => {
    const bad = await trpc(ctx.server.url, owner.cookie, 'providers.create', { teamId, name: 'cluster', kind: 'SLURM', settings: { ...settings, partition: 'gpu; rm -rf /' } });
    expect(bad.status).toBe(400);
    expect(bad.error).toMatch(/partition/);
    const gres = await trpc(ctx.server.url, owner.cookie, 'providers.create', { teamId, name: 'cluster', kind: 'SLURM', settings: { ...settings, gres: 'gpu:2', devicesPerWorker: 1 } });
    expect(gres.error).toMatch(/devicesPerWorker/);
    const created = await trpc(ctx.server.url, owner.cookie, 'providers.create', { teamId, name: 'cluster', kind: 'SLURM', settings });
    expect(created.data.token).toMatch(/^wsp_/);
    token = created.data.token;
    providerId = created.data.id;
    expect(await ctx.t.db.clusterProvider.count({ where: { tokenHash: token } })).toBe(0);
  });

  it('refuses a poll without a valid credential', async () => {
    expect((await poll(ctx.server.url, 'wsp_not-a-real-one')).status).toBe(401);
    expect((await poll(ctx.server.url, 'wst_wrong-kind')).status).toBe(401);
  });

  it('launches nothing while no job waits for capacity, then up to its pending limit', async () => {
    expect((await poll(ctx.server.url, token)).body).toMatchObject({ orders: [], watch: [] });
    // Three jobs of one kind wait for a worker: the planner's code on the first, the others behind it.
    const jobs = [];
    for (let i = 0; i < 3; i += 1) jobs.push(await ctx.t.db.job.create({ data: { teamId, ownerId: owner.user.id, kind: 'TRAIN', config: {}, deviceKind: 'CPU' } }));
    await applyPlan(ctx.t.db, { placements: [], preemptions: [], waiting: [{ jobId: jobs[0].id, code: 'NO_WORKER', reason: 'waiting: no worker', estimatedStartAt: null, target: null }] }, new Date(), events);
    expect((await ctx.t.db.job.findUniqueOrThrow({ where: { id: jobs[0].id } })).waitingCode).toBe('NO_WORKER');
    // A job another team's provider would serve, or one these workers cannot hold, is not this provider's demand.
    await ctx.t.db.job.create({ data: { teamId, ownerId: owner.user.id, kind: 'TRAIN', config: {}, deviceKind: 'CUDA', waitingCode: 'NO_WORKER' } });

    const first = await poll(ctx.server.url, token);
    expect(first.status).toBe(200);
    const launches = first.body.orders.filter((o: any) => o.type === 'launch');
    expect(launches).toHaveLength(2);
    for (const o of launches) {
      expect(o.workerToken).toMatch(/^wst_/);
      expect(o.settings).toMatchObject({ partition: 'gpu', installPath: '/shared/whetstone', idleSeconds: 300 });
    }
    const rows = await ctx.t.db.clusterLaunch.findMany({ where: { providerId }, include: { workerToken: true } });
    expect(rows.map((r) => r.state)).toEqual(['SUBMITTING', 'SUBMITTING']);
    expect(rows.every((r) => r.workerToken.teamId === teamId && r.workerToken.revokedAt === null)).toBe(true);
    // Two are pending: the limit on pending launches holds the third back.
    expect((await poll(ctx.server.url, token)).body.orders).toEqual([]);
  });

  it('a second provider of the same pool and kind launches only for the demand the first does not cover', async () => {
    const second = await trpc(ctx.server.url, owner.cookie, 'providers.create', { teamId, name: 'cluster-b', kind: 'SLURM', settings: { ...settings, partition: 'gpu-b' } });
    // Three devices wait; the first provider's two launches are coming: one is left for this one.
    const first = await poll(ctx.server.url, second.data.token);
    expect(first.body.orders.filter((o: any) => o.type === 'launch')).toHaveLength(1);
    expect((await poll(ctx.server.url, second.data.token)).body.orders).toEqual([]);
    expect((await trpc(ctx.server.url, owner.cookie, 'providers.delete', { teamId, providerId: second.data.id })).data).toEqual({ ok: true });
  });

  it("stops launching when the cluster refuses, saying why in the cluster's words, and backs off", async () => {
    const [a, b] = await ctx.t.db.clusterLaunch.findMany({ where: { providerId }, orderBy: { createdAt: 'asc' } });
    const refused = 'sbatch: error: Batch job submission failed: Invalid partition name specified';
    const answer = await poll(ctx.server.url, token, [
      { launchId: a.id, externalId: '101', state: 'PENDING', reason: 'Resources' },
      { launchId: b.id, state: 'FAILED', reason: refused },
    ]);
    expect(answer.body.orders).toEqual([]);
    expect(answer.body.watch).toEqual([{ launchId: a.id, externalId: '101' }]);
    const provider = await ctx.t.db.clusterProvider.findUniqueOrThrow({ where: { id: providerId } });
    expect(provider.failures).toBe(1);
    expect(provider.lastError).toContain('Invalid partition name specified');
    expect(provider.backoffUntil!.getTime()).toBeGreaterThan(Date.now());
    // The refused launch's token can register nothing.
    expect((await ctx.t.db.workerToken.findUniqueOrThrow({ where: { id: b.workerTokenId } })).revokedAt).not.toBeNull();

    const listed = await trpc(ctx.server.url, owner.cookie, 'providers.list', { teamId }, 'query');
    expect(listed.data[0]).toMatchObject({ name: 'cluster', failures: 1, lastError: expect.stringContaining('Invalid partition') });
    expect(listed.data[0].launches.map((l: any) => [l.state, l.externalId, l.reason])).toEqual(
      expect.arrayContaining([
        ['PENDING', '101', 'Resources'],
        ['FAILED', null, refused],
      ]),
    );
    // The jobs waiting for a worker say so, in Slurm's words.
    await scheduleOnce(ctx.t.db, events);
    const waiting = await ctx.t.db.job.findFirstOrThrow({ where: { teamId, deviceKind: 'CPU', waitingCode: 'NO_WORKER' } });
    expect(waiting.waitingReason).toMatch(/waiting for Slurm \(cluster\): launches stopped until .* UTC: the cluster refused the launch: sbatch: error: .*Invalid partition name specified/);
    // An admin's fix ends the backoff: the next poll launches again.
    expect((await trpc(ctx.server.url, owner.cookie, 'providers.update', { teamId, providerId, settings })).data).toEqual({ ok: true });
    const again = await poll(ctx.server.url, token);
    expect(again.body.orders.filter((o: any) => o.type === 'launch')).toHaveLength(1);
  });

  it('cancels a launch whose worker does not register in time, and counts it', async () => {
    const a = await ctx.t.db.clusterLaunch.findFirstOrThrow({ where: { providerId, externalId: '101' } });
    await poll(ctx.server.url, token, [{ launchId: a.id, externalId: '101', state: 'RUNNING', reason: 'RUNNING' }]);
    expect((await ctx.t.db.clusterLaunch.findUniqueOrThrow({ where: { id: a.id } })).runningAt).not.toBeNull();
    await ctx.t.db.clusterLaunch.update({ where: { id: a.id }, data: { runningAt: new Date(Date.now() - 61_000) } });
    const answer = await poll(ctx.server.url, token);
    expect(answer.body.orders).toContainEqual({ type: 'cancel', launchId: a.id, externalId: '101', reason: expect.stringMatching(/did not register within 60 s/) });
    const row = await ctx.t.db.clusterLaunch.findUniqueOrThrow({ where: { id: a.id }, include: { workerToken: true } });
    expect(row.state).toBe('CANCELLED');
    expect(row.workerToken.revokedAt).not.toBeNull();
    expect((await ctx.t.db.clusterProvider.findUniqueOrThrow({ where: { id: providerId } })).lastError).toMatch(/did not register/);
  });

  it("another team's admin sees none of it", async () => {
    const other = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const listed = await trpc(ctx.server.url, other.cookie, 'providers.list', { teamId: other.team.id }, 'query');
    expect(listed.data).toEqual([]);
    const del = await trpc(ctx.server.url, other.cookie, 'providers.delete', { teamId: other.team.id, providerId });
    expect(del.status).toBe(404);
    expect(await ctx.t.db.clusterProvider.count({ where: { id: providerId } })).toBe(1);
  });

  it('deleted, its launches cannot register workers any more, and its agent is shut out', async () => {
    const live = await ctx.t.db.clusterLaunch.findMany({ where: { providerId, state: 'SUBMITTING' }, select: { workerTokenId: true } });
    expect(live.length).toBeGreaterThan(0);
    expect((await trpc(ctx.server.url, owner.cookie, 'providers.delete', { teamId, providerId })).data).toEqual({ ok: true });
    const tokens = await ctx.t.db.workerToken.findMany({ where: { id: { in: live.map((l) => l.workerTokenId) } } });
    expect(tokens.every((t) => t.revokedAt !== null)).toBe(true);
    expect((await poll(ctx.server.url, token)).status).toBe(401);
  });
});
