import type { LiveItem } from '../../sdk/live';
import type { Db } from '../db/client';

// Catching up after a reconnect. Every stored row carries the position (attempt, seq) of the
// batch that last wrote it, and live batches carry theirs, so a watcher asks for everything
// after the last position it saw (runs.since).
//
// Batches are published before their rows commit (ingest.ts), so a watcher that was away while
// one went out could ask before that batch's rows are visible and miss it. Each batch therefore
// holds this job's lock in shared mode from before it is published until it commits, and a
// catch-up first takes the lock exclusively (and lets go at once): every batch published before
// the watcher re-joined the room is then committed, or rolled back and to be retried by its
// worker, which publishes it again to the room the watcher is now in. PostgreSQL queues a new
// shared request behind a waiting exclusive one, so a busy run cannot starve a catch-up.

/** The first key of the (int, int) advisory lock: (SHARED_WRITE_LOCK, hashtext(jobId)). */
export const SHARED_WRITE_LOCK = 0x57535452; // 'WSTR'

export interface Position {
  attempt: number;
  seq: number;
}

/** Waits until every batch of the job published so far is committed or rolled back. */
async function waitForPublishedWrites(db: Db, jobId: string): Promise<void> {
  await db.$transaction(
    async (tx) => {
      await tx.$executeRaw`SET LOCAL lock_timeout = '10s'`;
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(${SHARED_WRITE_LOCK}::int, hashtext(${jobId}))`;
    },
    { timeout: 15_000 },
  );
}

/** Stored rows come back as the live items they were published as, with their position. */
export type MetricRow = Position & LiveItem<'metrics'>;
export type RolloutRow = Position & LiveItem<'rollouts'>;
export interface LogRow extends Position {
  id: string;
  line: number;
  level: string;
  message: string;
  time: Date;
}

export interface CatchUp {
  metrics: MetricRow[];
  rollouts: RolloutRow[];
  logs: LogRow[];
  /** The position to ask after next time (the last batch included), or null if nothing came. */
  through: Position | null;
  /** False: there is more after `through`; ask again. */
  complete: boolean;
}

const after = (a: Position, b: Position) => a.attempt > b.attempt || (a.attempt === b.attempt && a.seq > b.seq);

/**
 * Whole batches only: of `limit + 1` rows in position order, keeps those before the last row's
 * batch (which may be cut short). A single batch larger than the limit is read whole.
 */
async function wholeBatches<T extends Position>(rows: T[], limit: number, readBatch: (p: Position) => Promise<T[]>): Promise<{ rows: T[]; complete: boolean }> {
  if (rows.length <= limit) return { rows, complete: true };
  const cut = rows[limit];
  const kept = rows.filter((r) => after(cut, r));
  return { rows: kept.length > 0 ? kept : await readBatch(cut), complete: false };
}

/**
 * Everything stored for a job after `from` (or from the start), in position order, at most
 * about `limit` rows of each kind. Items a watcher got live before the reconnect are not sent
 * again, nor is anything left out: see the lock above.
 */
export async function readSince(db: Db, jobId: string, from: Position | null, limit: number): Promise<CatchUp> {
  await waitForPublishedWrites(db, jobId);
  const a = from?.attempt ?? -1;
  const s = from?.seq ?? -1;
  const rolloutLimit = Math.min(limit, 500);
  const [metrics, rollouts, logs] = await Promise.all([
    db.$queryRaw<MetricRow[]>`
      SELECT attempt, seq, key, step, value FROM "MetricPoint"
       WHERE "jobId" = ${jobId} AND (attempt, seq) > (${a}::int, ${s}::int) ORDER BY attempt, seq, key, step LIMIT ${limit + 1}`.then((rows) =>
      wholeBatches(rows, limit, (p) => db.$queryRaw<MetricRow[]>`
        SELECT attempt, seq, key, step, value FROM "MetricPoint" WHERE "jobId" = ${jobId} AND attempt = ${p.attempt} AND seq = ${p.seq} ORDER BY key, step`),
    ),
    db.$queryRaw<RolloutRow[]>`
      SELECT attempt, seq, step, agent, index, reward FROM "RolloutSample"
       WHERE "jobId" = ${jobId} AND (attempt, seq) > (${a}::int, ${s}::int) ORDER BY attempt, seq, step, agent, index LIMIT ${rolloutLimit + 1}`.then((rows) =>
      wholeBatches(rows, rolloutLimit, (p) => db.$queryRaw<RolloutRow[]>`
        SELECT attempt, seq, step, agent, index, reward FROM "RolloutSample" WHERE "jobId" = ${jobId} AND attempt = ${p.attempt} AND seq = ${p.seq} ORDER BY step, agent, index`),
    ),
    db.$queryRaw<Array<Omit<LogRow, 'id'> & { id: bigint }>>`
      SELECT id, attempt, seq, line, level, message, time FROM "LogLine"
       WHERE "jobId" = ${jobId} AND (attempt, seq) > (${a}::int, ${s}::int) ORDER BY attempt, seq, line LIMIT ${limit + 1}`.then((rows) =>
      wholeBatches(rows, limit, (p) => db.$queryRaw<Array<Omit<LogRow, 'id'> & { id: bigint }>>`
        SELECT id, attempt, seq, line, level, message, time FROM "LogLine" WHERE "jobId" = ${jobId} AND attempt = ${p.attempt} AND seq = ${p.seq} ORDER BY line`),
    ),
  ]);
  const kinds = [metrics, rollouts, logs];
  const complete = kinds.every((k) => k.complete);
  // Every kind is whole up to the earliest place where one of them was cut: stop there.
  let through: Position | null = null;
  for (const k of kinds) {
    const last = k.rows.at(-1);
    if (!last) continue;
    if (complete ? !through || after(last, through) : !k.complete && (!through || after(through, last))) through = { attempt: last.attempt, seq: last.seq };
  }
  const upTo = <T extends Position>(rows: T[]) => (complete || !through ? rows : rows.filter((r) => !after(r, through!)));
  return {
    metrics: upTo(metrics.rows),
    rollouts: upTo(rollouts.rows),
    logs: upTo(logs.rows).map((l) => ({ ...l, id: l.id.toString() })),
    through,
    complete,
  };
}
