import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { io as connect } from 'socket.io-client';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { createUserWithTeam, startTestServer } from '../test-support/test-server';

describe('two server replicas', () => {
  let t: TestDatabase;
  const pools: pg.Pool[] = [];
  let a: Awaited<ReturnType<typeof startTestServer>>;
  let b: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    t = await createTestDatabase();
    for (let i = 0; i < 2; i++) pools.push(new pg.Pool({ connectionString: t.url, max: 2 }));
    a = await startTestServer(t.db, { pool: pools[0], databaseUrl: t.url, tickMs: 100 });
    b = await startTestServer(t.db, { pool: pools[1], databaseUrl: t.url, tickMs: 100 });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await Promise.all(pools.map((p) => p.end()));
    await t?.drop();
  });

  it('exactly one schedules, and events published on one reach clients of the other', async () => {
    // Exactly one, once either leads (how soon is the machine's business, not this test's).
    await expect.poll(() => a.scheduler!.isLeader || b.scheduler!.isLeader, { timeout: 30_000 }).toBe(true);
    expect([a.scheduler!.isLeader, b.scheduler!.isLeader].filter(Boolean)).toHaveLength(1);
    const owner = await createUserWithTeam(a.url, t.db);
    const job = await t.db.job.create({ data: { teamId: owner.team.id, ownerId: owner.user.id, kind: 'TRAIN', config: {}, state: 'CANCELLED' } });
    const socket = connect(a.url, { path: '/socket.io', transports: ['websocket'], extraHeaders: { cookie: owner.cookie }, reconnection: false });
    await new Promise<void>((resolve, reject) => {
      socket.on('connect', () => resolve());
      socket.on('connect_error', reject);
    });
    expect(await socket.emitWithAck('subscribe', { room: `run:${job.id}` })).toEqual({ ok: true });
    const received = new Promise<any>((resolve) => socket.on('stream', resolve));
    // Published by replica B (as if its worker API had stored the batch), a large one included.
    const big = 'x'.repeat(20_000);
    b.realtime.publishRun({ id: job.id, teamId: owner.team.id }, { jobId: job.id, attempt: 1, seq: 0, stored: 0, kind: 'logs', items: [{ line: 0, level: 'info', message: big, time: new Date().toISOString() }] });
    const batch = await received;
    expect(batch).toMatchObject({ jobId: job.id, kind: 'logs', attempt: 1, seq: 0 });
    expect(batch.items[0].message).toHaveLength(20_000);
    socket.close();
  });

  it("a round's pushes for a worker connected to the other replica reach it, all of them, in order", async () => {
    const owner = await createUserWithTeam(a.url, t.db);
    const made = await fetch(`${a.url}/api/trpc/workerTokens.create`, {
      method: 'POST',
      headers: { cookie: owner.cookie, origin: a.url, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { teamId: owner.team.id, name: 'replica-test' } }),
    });
    const token = ((await made.json()) as any).result.data.json.token as string;
    const registered = await fetch(`${a.url}/api/workers/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, name: 'sim', hostname: 'sim-host', backend: 'wasm', version: '0.1.0', devices: [{ index: 0, kind: 'WASM', name: 'wasm', memoryBytes: 1 << 30 }] }),
    });
    const worker = (await registered.json()) as { workerId: string; credential: string };
    // Connected to replica A; replica B's scheduler decides.
    const socket = connect(`${a.url}/workers`, { path: '/socket.io', transports: ['websocket'], auth: { credential: worker.credential }, reconnection: false });
    await new Promise<void>((resolve, reject) => {
      socket.on('connect', () => resolve());
      socket.on('connect_error', reject);
    });
    const signals: string[] = [];
    socket.on('signal', (payload: { attemptId: string }) => signals.push(payload.attemptId));
    const samples: string[] = [];
    socket.on('sample', (request: { requestId: string }) => samples.push(request.requestId));
    // A round preempting 2,000 attempts at once, and a sampling request.
    const sent = Array.from({ length: 2_000 }, (_, i) => `attempt-${i}`);
    for (const attemptId of sent) b.realtime.signalWorker(worker.workerId, { attemptId, preempt: true });
    b.realtime.requestSample(worker.workerId, { requestId: 'r1' } as never);
    await expect.poll(() => signals.length, { timeout: 30_000 }).toBe(2_000);
    expect(signals).toEqual(sent);
    await expect.poll(() => samples).toEqual(['r1']);
    socket.close();
  });
});
