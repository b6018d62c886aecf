import { io as connect, type Socket } from 'socket.io-client';
import { describe, expect, it } from 'vitest';
import { type ClientToServerEvents, type LiveBatch, runRoom, type ServerToClientEvents } from '../../sdk/live';
import { apiCall } from '../test-support/api-call';
import { seedTeam, type Team, waitUntil } from '../test-support/reliability/harness';
import { activeAttempt, postBatch } from '../test-support/test-attempts';
import { useTestServer } from '../test-support/test-server';
import { quotaReached } from './stream-quota';

// A team's stream storage quota through the worker's stream endpoint, the live room and the API:
// past a tiny quota a run's further stream data is neither stored nor published, the run is told
// once in its log and its events, the Quotas page's numbers say how much is used of how much, and
// deleting a run gives its bytes back.

/** Log lines as a runner sends them: each costs 500 + 4 ("info") + 64 bytes of the quota. */
const lines = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ line: from + i, level: 'info' as const, message: 'x'.repeat(500) }));
const LINE_BYTES = 500 + 4 + 64;

interface Quota {
  streamStorageBytes: bigint;
  usage: { streamStorageBytes: bigint };
}

async function watch(url: string, team: Team, jobId: string) {
  const seen: LiveBatch[] = [];
  const socket: Socket<ServerToClientEvents, ClientToServerEvents> = connect(url, { path: '/socket.io', transports: ['websocket'], extraHeaders: { authorization: `Bearer ${team.apiKey}` }, reconnection: false });
  socket.on('stream', (batch) => seen.push(batch));
  await new Promise<void>((resolve, reject) => {
    socket.on('connect', () => void socket.emitWithAck('subscribe', { room: runRoom(jobId) }).then((ack) => (ack.ok ? resolve() : reject(new Error(ack.error)))));
    socket.on('connect_error', reject);
  });
  return { seen, close: () => socket.close() };
}

describe('team stream storage quota', () => {
  const ctx = useTestServer();

  it("past a tiny quota a run's stream data is dropped, it is told once, usage is visible, and deleting a run frees its bytes", async () => {
    const db = ctx.t.db;
    const url = ctx.server.url;
    const team = await seedTeam(db);
    const other = await seedTeam(db);
    const quota = 3 * LINE_BYTES; // two batches of two lines pass (the second starts below it), the third does not
    await db.teamQuota.update({ where: { teamId: team.teamId }, data: { streamStorageBytes: BigInt(quota) } });
    const call = <T>(procedure: string, input: object, kind: 'query' | 'mutation' = 'query') => apiCall<T>(url, team.apiKey, procedure, { teamId: team.teamId, ...input }, kind);

    const job = await db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', state: 'RUNNING', config: {} }, select: { id: true, teamId: true } });
    const attempt = await activeAttempt(db, job, 1);
    const live = await watch(url, team, job.id);
    try {
      expect((await postBatch(url, attempt, 0, 'logs', lines(0, 2))).status).toBe(200);
      expect((await postBatch(url, attempt, 1, 'logs', lines(2, 2))).status).toBe(200);
      // Over the quota now: the worker is answered as usual (it trains on), nothing is stored.
      expect((await postBatch(url, attempt, 2, 'logs', lines(4, 2))).status).toBe(200);
      expect((await postBatch(url, attempt, 3, 'metrics', [{ step: 1, key: 'reward/mean', value: 1 }])).status).toBe(200);
      expect((await postBatch(url, attempt, 2, 'logs', lines(4, 2))).status).toBe(200); // a retry changes nothing

      const notice = quotaReached(quota);
      expect(notice).toBe('team stream storage quota of 1.7 KiB reached: stream data of this job is no longer stored (it trains on); delete old runs or ask an admin to raise it');
      const logs = await call<Array<{ line: number; level: string; message: string }>>('runs.logs', { jobId: job.id });
      expect(logs.map((l) => [l.line, l.level, l.message === notice ? 'notice' : l.message.length])).toEqual([
        [0, 'info', 500], [1, 'info', 500], [2, 'info', 500], [3, 'info', 500], [0, 'warn', 'notice'],
      ]);
      expect(await db.metricPoint.count({ where: { jobId: job.id } })).toBe(0);
      const detail = await call<{ events: Array<{ fromState: string; toState: string; actorType: string; reason: string }> }>('jobs.get', { jobId: job.id });
      expect(detail.events.filter((e) => e.reason === notice)).toEqual([expect.objectContaining({ fromState: 'RUNNING', toState: 'RUNNING', actorType: 'SYSTEM' })]);

      // Watchers got the stored batches and the notice, never the dropped data.
      await waitUntil('the notice published', async () => live.seen.some((b) => b.kind === 'logs' && b.items.some((l) => l.message === notice)));
      expect(live.seen.map((b) => [b.seq, b.kind, b.items.length])).toEqual([[0, 'logs', 2], [1, 'logs', 2], [2, 'logs', 1]]);
    } finally {
      live.close();
    }

    // Usage, as the Quotas page reads it: used and limit in bytes.
    const used = 4 * LINE_BYTES;
    expect(await call<Quota>('quotas.get', {})).toMatchObject({ streamStorageBytes: BigInt(quota), usage: { streamStorageBytes: BigInt(used) } });

    // Another team's quota is its own: its run stores what it streams.
    const theirs = await db.job.create({ data: { teamId: other.teamId, ownerId: other.userId, kind: 'TRAIN', state: 'RUNNING', config: {} }, select: { id: true, teamId: true } });
    expect((await postBatch(url, await activeAttempt(db, theirs, 1), 0, 'logs', lines(0, 4))).status).toBe(200);
    expect(await db.logLine.count({ where: { jobId: theirs.id } })).toBe(4);

    // A running run cannot be deleted; an ended one can, and its bytes go back to the team.
    await expect(call('runs.delete', { jobId: job.id }, 'mutation')).rejects.toThrow(/is RUNNING: cancel it first/);
    await db.job.update({ where: { id: job.id }, data: { state: 'CANCELLED' } });
    expect(await call('runs.delete', { jobId: job.id }, 'mutation')).toEqual({ deleted: true, freedBytes: BigInt(used) });
    expect((await call<Quota>('quotas.get', {})).usage.streamStorageBytes).toBe(0n);
    expect(await db.logLine.count({ where: { jobId: job.id } })).toBe(0);

    // Below the quota again, a new run's data is stored; an admin raises the quota from the API.
    await call('quotas.update', { maxConcurrentDevices: 8, maxQueuedJobs: 100, maxPriority: 100, streamStorageBytes: 2 ** 30 }, 'mutation');
    const next = await db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', state: 'RUNNING', config: {} }, select: { id: true, teamId: true } });
    const nextAttempt = await activeAttempt(db, next, 1);
    for (let seq = 0; seq < 4; seq++) expect((await postBatch(url, nextAttempt, seq, 'logs', lines(seq * 2, 2))).status).toBe(200);
    expect(await db.logLine.count({ where: { jobId: next.id } })).toBe(8);
    expect(await call<Quota>('quotas.get', {})).toMatchObject({ streamStorageBytes: 2n ** 30n, usage: { streamStorageBytes: BigInt(8 * LINE_BYTES) } });
  });
});
