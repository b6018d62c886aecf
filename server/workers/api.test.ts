import { beforeAll, describe, expect, it } from 'vitest';
import { io as connect } from 'socket.io-client';
import { addMember, createUserWithTeam, useTestServer } from '../test-support/test-server';

async function post(base: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

async function mutate(base: string, cookie: string, path: string, input: unknown) {
  const res = await fetch(`${base}/api/trpc/${path}`, {
    method: 'POST',
    headers: { cookie, origin: base, 'content-type': 'application/json' },
    body: JSON.stringify({ json: input }),
  });
  return ((await res.json()) as any).result?.data.json;
}

const device = { index: 0, kind: 'CPU', name: 'cpu', memoryBytes: 1 << 30 };
const registration = (token: string) => ({ token, name: 'w1', hostname: 'host-1', backend: 'wasm', version: '0.1.0', devices: [device] });

describe('worker tokens and registration', () => {
  const ctx = useTestServer();
  let installationAdmin: Awaited<ReturnType<typeof createUserWithTeam>>;
  beforeAll(async () => {
    installationAdmin = await createUserWithTeam(ctx.server.url, ctx.t.db); // the first account
  });

  it('registers with a team token, heartbeats, drains, and is shut out once revoked', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const teamId = owner.team.id;
    const created = await mutate(ctx.server.url, owner.cookie, 'workerTokens.create', { teamId, name: 'rack 1' });
    expect(created.token).toMatch(/^wst_/);
    expect(await ctx.t.db.workerToken.count({ where: { tokenHash: created.token } })).toBe(0);

    const reg = await post(ctx.server.url, '/api/workers/register', registration(created.token));
    expect(reg.status).toBe(201);
    expect(reg.body).toMatchObject({ pool: 'team', credential: expect.stringMatching(/^wsw_/) });
    const worker = await ctx.t.db.worker.findUniqueOrThrow({ where: { id: reg.body.workerId }, include: { devices: true } });
    expect(worker.teamId).toBe(teamId);
    expect(worker.devices).toHaveLength(1);
    expect(worker.credentialHash).not.toBe(reg.body.credential);

    const auth = { authorization: `Bearer ${reg.body.credential}` };
    expect(await post(ctx.server.url, '/api/workers/heartbeat', {}, auth)).toMatchObject({ status: 200, body: { state: 'ONLINE', leases: [], assignments: [] } });
    // A worker marked OFFLINE (silent too long) is back ONLINE with its next heartbeat; an attempt
    // it does not hold is no lease of its.
    await ctx.t.db.worker.update({ where: { id: worker.id }, data: { state: 'OFFLINE', lastHeartbeatAt: new Date(0) } });
    const back = await post(ctx.server.url, '/api/workers/heartbeat', { attempts: [{ attemptId: 'not-mine', fencingToken: '1' }] }, auth);
    expect(back).toMatchObject({ status: 200, body: { state: 'ONLINE', leases: [{ attemptId: 'not-mine', valid: false, leaseExpiresAt: null }] } });
    expect((await ctx.t.db.worker.findUniqueOrThrow({ where: { id: worker.id } })).lastHeartbeatAt!.getTime()).toBeGreaterThan(Date.now() - 60_000);
    await mutate(ctx.server.url, owner.cookie, 'workers.drain', { teamId, workerId: worker.id });
    expect(await post(ctx.server.url, '/api/workers/heartbeat', {}, auth)).toMatchObject({ status: 200, body: { state: 'DRAINING' } });
    // Resumed, it takes work again; a worker that is not draining is no resume's business.
    await mutate(ctx.server.url, owner.cookie, 'workers.resume', { teamId, workerId: worker.id });
    expect(await post(ctx.server.url, '/api/workers/heartbeat', {}, auth)).toMatchObject({ status: 200, body: { state: 'ONLINE' } });
    const twice = await fetch(`${ctx.server.url}/api/trpc/workers.resume`, {
      method: 'POST',
      headers: { cookie: owner.cookie, origin: ctx.server.url, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { teamId, workerId: worker.id } }),
    });
    expect(twice.status).toBe(404);
    expect(JSON.stringify(await twice.json())).toMatch(/No draining worker/);
    await mutate(ctx.server.url, owner.cookie, 'workers.drain', { teamId, workerId: worker.id });
    await mutate(ctx.server.url, owner.cookie, 'workers.revoke', { teamId, workerId: worker.id });
    expect((await post(ctx.server.url, '/api/workers/heartbeat', {}, auth)).status).toBe(401);

    // A revoked token registers nothing more, and says so.
    await mutate(ctx.server.url, owner.cookie, 'workerTokens.revoke', { teamId, tokenId: created.id });
    const again = await post(ctx.server.url, '/api/workers/register', registration(created.token));
    expect(again.status).toBe(401);
    expect(again.body.error).toMatch(/not valid/);
    const actions = (await ctx.t.db.auditLog.findMany({ where: { teamId }, select: { action: true } })).map((a) => a.action);
    expect(actions).toEqual(expect.arrayContaining(['worker_token.created', 'worker.registered', 'worker.drained', 'worker.resumed', 'worker.revoked', 'worker_token.revoked', 'worker.registration_refused']));
  });

  it('checks the token before the rest: a forged one learns nothing; a valid one gets 400 and the reasons', async () => {
    const forged = await post(ctx.server.url, '/api/workers/register', { token: 'wst_x', name: '', devices: [device, device] });
    expect(forged.status).toBe(401);
    expect(forged.body.issues).toBeUndefined();
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const { token } = await mutate(ctx.server.url, owner.cookie, 'workerTokens.create', { teamId: owner.team.id, name: 'malformed' });
    const bad = await post(ctx.server.url, '/api/workers/register', { token, name: '', devices: [device, device] });
    expect(bad.status).toBe(400);
    expect(bad.body.issues.length).toBeGreaterThan(0);
    const notJson = await fetch(`${ctx.server.url}/api/workers/register`, { method: 'POST', body: '{' });
    expect(notJson.status).toBe(400);
    const huge = await fetch(`${ctx.server.url}/api/workers/register`, { method: 'POST', body: 'x'.repeat(9_000_000) });
    expect(huge.status).toBe(413);
  });

  it('limits refused registrations per address, as sign-in does', async () => {
    await ctx.t.db.auditLog.deleteMany({ where: { action: 'worker.registration_refused' } });
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await post(ctx.server.url, '/api/workers/register', { token: `wst_guess${i}` })).status);
    expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true);
    expect(statuses[20]).toBe(429);
    await ctx.t.db.auditLog.deleteMany({ where: { action: 'worker.registration_refused' } });
  });

  it('shared-pool tokens are for installation admins and register shared workers', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const refused = await fetch(`${ctx.server.url}/api/trpc/workerTokens.createShared`, {
      method: 'POST',
      headers: { cookie: owner.cookie, origin: ctx.server.url, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { name: 'shared' } }),
    });
    expect(refused.status).toBe(403);
    const created = await mutate(ctx.server.url, installationAdmin.cookie, 'workerTokens.createShared', { name: 'shared' });
    const reg = await post(ctx.server.url, '/api/workers/register', registration(created.token));
    expect(reg.body.pool).toBe('shared');
    expect((await ctx.t.db.worker.findUniqueOrThrow({ where: { id: reg.body.workerId } })).teamId).toBeNull();

    // A shared worker is the installation admins' to drain, resume and revoke (from any team they
    // admin); a team's admin who is not one cannot touch it, and learns nothing of it.
    const shared = { workerId: reg.body.workerId };
    const refusedDrain = await fetch(`${ctx.server.url}/api/trpc/workers.drain`, {
      method: 'POST',
      headers: { cookie: owner.cookie, origin: ctx.server.url, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { teamId: owner.team.id, ...shared } }),
    });
    expect(refusedDrain.status).toBe(404);
    expect(JSON.stringify(await refusedDrain.json())).not.toMatch(/shared one/);
    const stateOf = async () => (await ctx.t.db.worker.findUniqueOrThrow({ where: { id: shared.workerId } })).state;
    expect(await stateOf()).toBe('ONLINE');
    expect(await mutate(ctx.server.url, installationAdmin.cookie, 'workers.drain', { teamId: installationAdmin.team.id, ...shared })).toEqual({ ok: true });
    expect(await stateOf()).toBe('DRAINING');
    expect(await mutate(ctx.server.url, installationAdmin.cookie, 'workers.resume', { teamId: installationAdmin.team.id, ...shared })).toEqual({ ok: true });
    expect(await stateOf()).toBe('ONLINE');
    const audited = await ctx.t.db.auditLog.findMany({ where: { targetId: shared.workerId, action: { in: ['worker.drained', 'worker.resumed'] } } });
    expect(audited.map((a) => [a.action, a.teamId, a.details])).toEqual(
      expect.arrayContaining([
        ['worker.drained', null, { pool: 'shared' }],
        ['worker.resumed', null, { pool: 'shared' }],
      ]),
    );
  });
});

describe('socket.io subscriptions', () => {
  const ctx = useTestServer();

  const open = (cookie?: string) =>
    connect(ctx.server.url, { path: '/socket.io', transports: ['websocket'], extraHeaders: cookie ? { cookie } : {}, reconnection: false });

  it('refuses a connection without a session', async () => {
    const socket = open();
    const error = await new Promise<Error>((resolve) => socket.on('connect_error', resolve));
    expect(error.message).toMatch(/UNAUTHORIZED/);
    socket.close();
  });

  it("lets a member join their own team's run room, and not another team's", async () => {
    const a = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const b = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const viewer = await addMember(ctx.server.url, ctx.t.db, a.team.id, 'VIEWER');
    const jobA = await ctx.t.db.job.create({ data: { teamId: a.team.id, ownerId: a.user.id, kind: 'TRAIN', config: {} } });
    const jobB = await ctx.t.db.job.create({ data: { teamId: b.team.id, ownerId: b.user.id, kind: 'TRAIN', config: {} } });
    const socket = open(viewer.cookie);
    await new Promise<void>((resolve, reject) => {
      socket.on('connect', () => resolve());
      socket.on('connect_error', reject);
    });
    const subscribe = (room: string) => socket.emitWithAck('subscribe', { room }) as Promise<{ ok: boolean; error?: string }>;
    expect(await subscribe(`run:${jobA.id}`)).toEqual({ ok: true });
    expect(await subscribe(`run:${jobB.id}`)).toEqual({ ok: false, error: 'NOT_FOUND: no such run' });
    expect(await subscribe('run:does-not-exist')).toEqual({ ok: false, error: 'NOT_FOUND: no such run' });
    expect((await subscribe('team:everything')).ok).toBe(false);
    socket.close();
  });
});
