import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamBatch } from '../../sdk/worker-protocol';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { type LiveBatch, liveBatchSchema } from '../../sdk/live';
import { ingestBatch } from './ingest';
import { Refusal } from '../workers/refusal';
import { readSince } from './positions';
import { activeAttempt } from '../test-support/test-attempts';
import { StreamCursor } from '../../sdk/stream-cursor';

// The live path: batches are published before their rows commit (ingest.ts), and a catch-up
// (positions.ts) must neither repeat what a watcher saw live nor miss what went out while it
// was away.

describe('live stream batches', () => {
  let t: TestDatabase;
  let job: { id: string; teamId: string };
  let attempt: Awaited<ReturnType<typeof activeAttempt>>;
  const published: LiveBatch[] = [];
  let onPublish: (b: LiveBatch) => void = () => {};
  const publish = (_job: unknown, b: LiveBatch) => {
    published.push(b);
    onPublish(b);
  };
  const metrics = (seq: number, steps: number[], a = attempt): StreamBatch => ({
    attemptId: a.attemptId, fencingToken: a.fencingToken, seq, kind: 'metrics', items: steps.map((step) => ({ step, key: 'loss/total', value: step / 10 })),
  });

  /** Another transaction holding a metric's row (uncommitted), so a batch writing it waits. */
  const holdRow = async (step: number) => {
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    await client.query('BEGIN');
    await client.query(`INSERT INTO "MetricPoint" ("jobId", key, step, value, attempt) VALUES ($1, 'loss/total', $2, 0, 1)`, [job.id, step]);
    return client;
  };
  const release = async (client: pg.Client) => {
    await client.query('ROLLBACK');
    await client.end();
  };

  beforeAll(async () => {
    t = await createTestDatabase();
    const user = await t.db.user.create({ data: { email: 'live@example.test', name: 'L' } });
    const team = await t.db.team.create({ data: { name: 'L', slug: 'l-live' } });
    job = await t.db.job.create({ data: { teamId: team.id, ownerId: user.id, kind: 'TRAIN', config: {} }, select: { id: true, teamId: true } });
    attempt = await activeAttempt(t.db, job, 1);
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('publishes a batch before its rows commit, and a catch-up from its position does not repeat it', async () => {
    // Another transaction holds step 2's row, so the batch's write waits after it was published.
    const blocker = await holdRow(2);
    const ingest = ingestBatch(t.db, attempt.workerId, metrics(0, [0, 1, 2]), publish);
    while (published.length === 0) await new Promise((r) => setTimeout(r, 10));
    expect(await t.db.metricPoint.count({ where: { jobId: job.id } })).toBe(0); // published, not yet stored
    await release(blocker);
    await ingest;
    expect(published.at(-1)).toEqual({ jobId: job.id, attempt: 1, seq: 0, stored: -1, kind: 'metrics', items: [0, 1, 2].map((step) => ({ key: 'loss/total', step, value: step / 10 })) });
    const after = await readSince(t.db, job.id, { attempt: 1, seq: 0 }, 100);
    expect(after).toEqual({ metrics: [], rollouts: [], logs: [], through: null, complete: true });
    const all = await readSince(t.db, job.id, null, 100);
    expect(all.metrics.map((m) => [m.attempt, m.seq, m.step])).toEqual([[1, 0, 0], [1, 0, 1], [1, 0, 2]]);
    expect(all.through).toEqual({ attempt: 1, seq: 0 });
  });

  it('does not publish a replayed batch again', async () => {
    const before = published.length;
    expect(await ingestBatch(t.db, attempt.workerId, metrics(0, [0, 1, 2]), publish)).toEqual({ duplicate: true });
    expect(published.length).toBe(before);
  });

  it("publishes nothing of a stale attempt's batch, nor of another worker's", async () => {
    const before = published.length;
    await expect(ingestBatch(t.db, attempt.workerId, { ...metrics(1, [3]), fencingToken: '999999' }, publish)).rejects.toMatchObject({ status: 409 });
    // Nineteen digits, past the bigint column's range: a refusal too, not a database error.
    await expect(ingestBatch(t.db, attempt.workerId, { ...metrics(1, [3]), fencingToken: '9999999999999999999' }, publish)).rejects.toMatchObject({ status: 409 });
    const other = await activeAttempt(t.db, job, 99);
    await expect(ingestBatch(t.db, other.workerId, metrics(1, [3]), publish)).rejects.toMatchObject({ status: 404 });
    await t.db.jobAttempt.update({ where: { id: other.attemptId }, data: { state: 'ENDED' } });
    await expect(ingestBatch(t.db, other.workerId, metrics(0, [3], other), publish)).rejects.toBeInstanceOf(Refusal);
    expect(published.length).toBe(before);
    expect(await t.db.metricPoint.count({ where: { jobId: job.id, step: 3 } })).toBe(0);
  });

  it('a catch-up that starts while a published batch is still being written waits for it: no gap', async () => {
    const blocker = await holdRow(11);
    const pending: { catchUp?: ReturnType<typeof readSince> } = {};
    // A watcher that was away while the batch went out re-joins and asks for what came after
    // the last position it saw (seq 0).
    onPublish = () => (pending.catchUp = readSince(t.db, job.id, { attempt: 1, seq: 0 }, 100));
    const ingest = ingestBatch(t.db, attempt.workerId, metrics(1, [10, 11]), publish);
    while (!pending.catchUp) await new Promise((r) => setTimeout(r, 10));
    onPublish = () => {};
    let answered = false;
    void pending.catchUp.then(() => (answered = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(answered).toBe(false); // waiting for the batch's transaction
    await release(blocker);
    await ingest;
    const got = await pending.catchUp;
    expect(got.metrics.map((m) => m.step)).toEqual([10, 11]);
    expect(got.through).toEqual({ attempt: 1, seq: 1 });
  });

  it('a published batch that fails to commit holds `stored` back, so no cursor passes it until it is sent again', async () => {
    const logs = (seq: number, message: string): StreamBatch => ({ attemptId: attempt.attemptId, fencingToken: attempt.fencingToken, seq, kind: 'logs', items: [{ line: 0, level: 'info', message }] });
    // PostgreSQL refuses a NUL in text: this batch is published, then its write fails.
    await expect(ingestBatch(t.db, attempt.workerId, logs(2, 'bad \u0000 byte'), publish)).rejects.toThrow();
    expect(published.at(-1)).toMatchObject({ seq: 2, stored: 1 });
    await ingestBatch(t.db, attempt.workerId, logs(3, 'fine'), publish);
    expect(published.at(-1)).toMatchObject({ seq: 3, stored: 1 });
    // A watcher that re-joined between the two saw only seq 3 live: it catches up after seq 1.
    const cursor = new StreamCursor();
    cursor.saw({ attempt: 1, seq: 1, stored: 0 });
    cursor.saw(published.at(-1)!);
    expect(cursor.after).toEqual({ attempt: 1, seq: 1 });
    // Sent again, batch 2 is stored; the next batch says so, and the cursor moves past both.
    await ingestBatch(t.db, attempt.workerId, logs(2, 'fixed'), publish);
    expect(published.at(-1)).toMatchObject({ seq: 2, stored: 1 });
    const caughtUp = await readSince(t.db, job.id, cursor.after!, 100);
    expect(caughtUp.logs.map((l) => [l.seq, l.message])).toEqual([[2, 'fixed'], [3, 'fine']]);
    await ingestBatch(t.db, attempt.workerId, metrics(4, [12]), publish);
    expect(published.at(-1)).toMatchObject({ seq: 4, stored: 3 });
    cursor.saw(published.at(-1)!);
    expect(cursor.after).toEqual({ attempt: 1, seq: 4 });
  });

  it('pages whole batches, across attempts, in position order', async () => {
    await ingestBatch(t.db, attempt.workerId, metrics(5, [20, 21, 22]), publish);
    await ingestBatch(t.db, attempt.workerId, metrics(6, [30, 31, 32]), publish);
    // A resumed attempt replays step 31: the row moves to the new attempt's position.
    await t.db.jobAttempt.update({ where: { id: attempt.attemptId }, data: { state: 'ENDED' } });
    const second = await activeAttempt(t.db, job, 2, attempt.workerId);
    await ingestBatch(t.db, second.workerId, metrics(0, [31, 40], second), publish);
    const pages = [];
    let from = { attempt: 1, seq: 4 };
    for (;;) {
      const page = await readSince(t.db, job.id, from, 4);
      pages.push(page.metrics.map((m) => `${m.attempt}/${m.seq}:${m.step}`));
      if (page.complete) break;
      from = page.through!;
    }
    // Four rows a page, but never a batch cut in two; a batch larger than the limit comes whole.
    expect(pages).toEqual([['1/5:20', '1/5:21', '1/5:22'], ['1/6:30', '1/6:32', '2/0:31', '2/0:40']]);
    const big = await readSince(t.db, job.id, { attempt: 1, seq: 4 }, 2);
    expect(big.metrics.map((m) => m.step)).toEqual([20, 21, 22]);
    expect(big).toMatchObject({ through: { attempt: 1, seq: 5 }, complete: false });
  });

  it('publishes only batches of the live contract (sdk/live.ts), exactly as declared', () => {
    expect(published.length).toBeGreaterThan(0);
    for (const b of published) expect(liveBatchSchema.parse(JSON.parse(JSON.stringify(b)))).toEqual(b);
  });
});
