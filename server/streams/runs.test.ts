import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { io as connect, type Socket } from 'socket.io-client';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { createUserWithTeam, startTestServer } from '../test-support/test-server';
import { StreamCursor } from '../../sdk/stream-cursor';
import { metricSeries } from '../api/routers/runs';

async function query(base: string, cookie: string, path: string, input: unknown) {
  const res = await fetch(`${base}/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`, { headers: { cookie } });
  const body = (await res.json()) as any;
  if (body.error) throw new Error(body.error.json.message);
  return body.result.data.json;
}

describe('live run streams', () => {
  let t: TestDatabase;
  let server: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    t = await createTestDatabase();
    server = await startTestServer(t.db, { databaseUrl: t.url, tickMs: 100 });
  });
  afterAll(async () => {
    await server?.close();
    await t?.drop();
  });

  it('a browser that reconnects catches up from its last position with no gap and no duplicate', async () => {
    const owner = await createUserWithTeam(server.url, t.db);
    const teamId = owner.team.id;
    const token = await fetch(`${server.url}/api/trpc/workerTokens.create`, {
      method: 'POST', headers: { cookie: owner.cookie, origin: server.url, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { teamId, name: 'w' } }),
    }).then(async (r) => ((await r.json()) as any).result.data.json.token);
    const worker = await fetch(`${server.url}/api/workers/register`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, name: 'w', hostname: 'h', backend: 'wasm', version: '1', devices: [{ index: 0, kind: 'WASM', name: 'w', memoryBytes: 2 ** 30 }] }),
    }).then((r) => r.json() as Promise<{ credential: string }>);
    const env = await t.db.environment.create({
      data: { teamId, name: 'e', versions: { create: { version: 1, contentHash: 'h', files: { 'env.ts': '' }, entry: 'env.ts', manifest: {} } } },
      include: { versions: true },
    });
    const job = await fetch(`${server.url}/api/trpc/jobs.submit`, {
      method: 'POST', headers: { cookie: owner.cookie, origin: server.url, 'content-type': 'application/json' },
      body: JSON.stringify({ json: { teamId, kind: 'TRAIN', config: { environmentVersionId: env.versions[0].id } } }),
    }).then(async (r) => ((await r.json()) as any).result.data.json);
    let assignment: any;
    // Bounded by the test's time-out: a scheduler round on a loaded machine is no test's business.
    while (!assignment) {
      const hb = await fetch(`${server.url}/api/workers/heartbeat`, {
        method: 'POST', headers: { authorization: `Bearer ${worker.credential}`, 'content-type': 'application/json' }, body: '{}',
      }).then((r) => r.json() as Promise<any>);
      assignment = hb.assignments[0];
      if (!assignment) await new Promise((r) => setTimeout(r, 50));
    }
    const send = (seq: number, steps: number[]) =>
      fetch(`${server.url}/api/workers/stream`, {
        method: 'POST', headers: { authorization: `Bearer ${worker.credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ attemptId: assignment.attemptId, fencingToken: assignment.fencingToken, seq, kind: 'metrics', items: steps.map((step) => ({ step, key: 'reward/mean', value: step / 10 })) }),
      });

    // Every delivery counted, live or caught up: a duplicate shows as a count of 2.
    const seen = new Map<number, number>();
    const cursor = new StreamCursor();
    const open = () =>
      new Promise<Socket>((resolve, reject) => {
        const s = connect(server.url, { path: '/socket.io', transports: ['websocket'], extraHeaders: { cookie: owner.cookie }, reconnection: false });
        s.on('stream', (batch: any) => {
          cursor.saw(batch);
          if (batch.kind === 'metrics') batch.items.forEach((m: any) => seen.set(m.step, (seen.get(m.step) ?? 0) + 1));
        });
        s.on('connect', async () => {
          const ack = await s.emitWithAck('subscribe', { room: `run:${job.id}` });
          if (ack.ok) resolve(s);
          else reject(new Error(ack.error));
        });
        s.on('connect_error', reject);
      });

    let socket = await open();
    await send(0, [1, 2, 3]);
    await expect.poll(() => [...seen.keys()].sort((a, b) => a - b), { timeout: 30_000 }).toEqual([1, 2, 3]);
    expect(cursor.after).toEqual({ attempt: 1, seq: 0 });
    socket.close();
    await send(1, [4, 5]); // missed while disconnected
    await send(1, [4, 5]); // and a replayed batch: no duplicate
    socket = await open();
    const missed = await query(server.url, owner.cookie, 'runs.since', { teamId, jobId: job.id, after: cursor.after });
    expect(missed).toMatchObject({ through: { attempt: 1, seq: 1 }, complete: true });
    for (const m of missed.metrics) seen.set(m.step, (seen.get(m.step) ?? 0) + 1);
    await send(2, [6]);
    await expect.poll(() => seen.has(6), { timeout: 30_000 }).toBe(true);
    socket.close();
    expect([...seen.entries()].sort((a, b) => a[0] - b[0])).toEqual([1, 2, 3, 4, 5, 6].map((step) => [step, 1]));
    expect(await t.db.metricPoint.count({ where: { jobId: job.id } })).toBe(6);
  });

  it('serves a long series as min, max and last per bucket', async () => {
    const owner = await t.db.user.findFirstOrThrow();
    const team = await t.db.team.findFirstOrThrow();
    const job = await t.db.job.create({ data: { teamId: team.id, ownerId: owner.id, kind: 'TRAIN', config: {} } });
    await t.db.$executeRaw`
      INSERT INTO "MetricPoint" ("jobId", key, step, value, attempt)
      SELECT ${job.id}, 'loss/total', s, CASE WHEN s = 5000 THEN 100 ELSE sin(s / 100.0) END, 1 FROM generate_series(0, 99999) AS s`;
    const series = await metricSeries(t.db, job.id, 'loss/total', 100);
    expect(series).toHaveLength(100);
    expect(series.reduce((n, b) => n + b.count, 0)).toBe(100_000);
    expect(series[0]).toMatchObject({ fromStep: 0, toStep: 999 });
    expect(series[99].toStep).toBe(99_999);
    expect(series[99].last).toBeCloseTo(Math.sin(99_999 / 100), 6);
    // Each bucket carries the time of its last step (a chart's x axis by time).
    expect(series.every((b) => b.at instanceof Date)).toBe(true);
    // The spike survives downsampling.
    expect(series[5]).toMatchObject({ fromStep: 5000, max: 100 });
    const zoomed = await metricSeries(t.db, job.id, 'loss/total', 100, 4990, 5010);
    expect(zoomed).toHaveLength(21);
    expect(zoomed.find((b) => b.fromStep === 5000)?.last).toBe(100);
  });
});
