import type { LiveBatch, LiveItems } from '../../sdk/live';
import type { StreamBatch } from '../../sdk/worker-protocol';
import { type Db, poolOf } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import { storedJson } from '../db/stored-json';
import { foldSql, recomputeSql, ROLLUP_STEPS } from './rollup';
import { SHARED_WRITE_LOCK } from './positions';
import { type PreparedCall, type PreparedStatement, pooledTransaction, type Query, unprepared } from './pooled-transaction';
import { settled, stored } from './stored-marks';
import { countStored, DEFAULT_STREAM_STORAGE_BYTES, streamBytes, tellQuotaReached } from './stream-quota';
import { attemptFenced, fencingTokenOf, notYourAttempt, Refusal } from '../workers/refusal';

// Stream batches from job runners. A batch is fenced, claimed and published to the run's
// watchers before its rows are written, all in one transaction:
//
//   1. one statement checks the fencing token, claims (job, attempt, seq) in StreamBatch, takes
//      the job's catch-up lock in shared mode (positions.ts) and reads whether its team is within
//      its stream quota (stream-quota.ts);
//   2. the batch goes out live, positioned by (attempt, seq), unless it was a replay or the team
//      is past its quota (then it is dropped, and the run told once);
//   3. its rows are written, its bytes added to its run's and its team's totals, and the
//      transaction commits before the worker is answered.
//
// So browsers see a batch about one database round trip after it arrives instead of after the
// whole write, and nothing the worker was told is stored can be lost. A stale attempt's batch is
// refused at step 1 and never published. A replayed batch (a retry after a lost answer) finds
// its claim taken and changes nothing, nor is it published again. If the write fails, the claim
// rolls back with it and the worker retries the same seq: watchers then get the batch twice
// with the same position and keep it once (items are keyed, see sdk/live.ts). Metrics are unique
// per (job, key, step): a resumed attempt that replays steps after its last checkpoint
// overwrites them, so no step is ever counted twice.

export type Publish = (job: { id: string; teamId: string }, batch: LiveBatch) => void;

interface Fence {
  jobId: string;
  teamId: string;
  number: number;
  mine: boolean;
  current: boolean;
  claimed: boolean;
  /** The team stores less than its stream quota (or the batch stores nothing): the batch is stored. */
  admitted: boolean;
  /** The team's quota in bytes (bigint as text), for a batch with bytes to store. */
  quota: string | null;
}

/**
 * One statement: the attempt must be this worker's, still ACTIVE, with this fencing token, and
 * the worker not revoked; then the job's shared catch-up lock and the batch's claim; and whether
 * its team stores less than its stream quota, read without a lock (the totals grow at the end of
 * the batch's transaction, countStored), so that batches of one team never wait for each other
 * here. Prepared once per connection: it is on every batch's way to its watchers.
 */
const FENCE_AND_CLAIM: PreparedStatement = {
  name: 'whetstone_fence_claim_count',
  types: ['text', 'text', 'bigint', 'int', 'text', 'boolean', 'bigint', 'bigint'],
  text: `
    WITH a AS MATERIALIZED (
      SELECT a."jobId", j."teamId", a.number,
             a."workerId" IS NOT DISTINCT FROM $1::text AS mine,
             a.state = 'ACTIVE' AND a."fencingToken" = $3::bigint AND w.state <> 'REVOKED' AS current
        FROM "JobAttempt" a JOIN "Job" j ON j.id = a."jobId" JOIN "Worker" w ON w.id = $1::text
       WHERE a.id = $2::text
    ), locked AS MATERIALIZED (
      SELECT a.*, pg_advisory_xact_lock_shared(${SHARED_WRITE_LOCK}, hashtext(a."jobId")) IS NULL AS locked FROM a WHERE $6::boolean AND mine AND current
    ), claim AS (
      INSERT INTO "StreamBatch" ("jobId", attempt, seq, kind)
      SELECT "jobId", number, $4::int, $5::text FROM locked
      ON CONFLICT DO NOTHING RETURNING 1
    ), quota AS MATERIALIZED (
      SELECT coalesce(q."streamStorageBytes", $8::bigint) AS bytes, coalesce(u.bytes, 0) AS used
        FROM a LEFT JOIN "TeamQuota" q ON q."teamId" = a."teamId" LEFT JOIN "TeamStreamUsage" u ON u."teamId" = a."teamId"
       WHERE $7::bigint > 0
    )
    SELECT "jobId", "teamId", number, mine, current, EXISTS (SELECT 1 FROM claim) AS claimed,
           NOT EXISTS (SELECT 1 FROM quota WHERE used >= bytes) AS admitted, (SELECT bytes FROM quota)::text AS quota
      FROM a`,
};

function fenceAndClaim(workerId: string, batch: StreamBatch, claim: boolean, bytes: number): PreparedCall {
  // A token that cannot be the column's (out of bigint range, say) matches no attempt: 409.
  const token = fencingTokenOf(batch.fencingToken) ?? '-1';
  return { prepared: FENCE_AND_CLAIM, values: [workerId, batch.attemptId, token, batch.seq, batch.kind, claim, bytes, DEFAULT_STREAM_STORAGE_BYTES] };
}

function checked(rows: Fence[]): Fence {
  const fence = rows[0];
  if (!fence?.mine) throw notYourAttempt();
  if (!fence.current) throw attemptFenced();
  return fence;
}

/** An attempt's batches are published in the order they arrived (workers send them in seq order). */
const turns = new Map<string, Promise<void>>();
async function takeTurn(key: string): Promise<() => void> {
  const previous = turns.get(key);
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  turns.set(key, mine);
  await previous;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    release();
    if (turns.get(key) === mine) turns.delete(key);
  };
}

/** What is stored and published of a batch: metrics deduplicated (the last of a (key, step) wins), finite values only. */
export function liveItems(batch: StreamBatch): LiveItems {
  switch (batch.kind) {
    case 'metrics': {
      const unique = new Map(batch.items.filter((m) => Number.isFinite(m.value)).map((m) => [`${m.key}\u0000${m.step}`, m]));
      return { kind: 'metrics', items: [...unique.values()].map(({ key, step, value }) => ({ key, step, value })) };
    }
    case 'rollouts':
      return { kind: 'rollouts', items: batch.items.map((r) => ({ step: r.step, agent: r.agent, index: r.index, reward: Number.isFinite(r.reward) ? r.reward : 0 })) };
    case 'logs':
      return { kind: 'logs', items: batch.items.map((l) => ({ line: l.line, level: l.level, message: l.message, time: validTime(l.time) })) };
    case 'matches':
      return { kind: 'matches', items: batch.items.map((m) => ({ step: m.step, winner: m.winner })) };
    case 'boards':
      return { kind: 'boards', items: batch.items };
  }
}

function validTime(time: string | undefined): string {
  const t = time ? new Date(time) : new Date();
  return (Number.isNaN(t.getTime()) ? new Date() : t).toISOString();
}

/** Statements in Prisma's interactive transaction (rollouts and matches). */
const inPrisma =
  (tx: Prisma.TransactionClient): Query =>
  <T>(sql: Prisma.Sql | PreparedCall) => {
    const { text, values } = unprepared(sql);
    return tx.$queryRawUnsafe<T[]>(text, ...values);
  };

/**
 * Fences, claims, publishes and stores one batch of `workerId`'s. Resolves once the rows are
 * committed (duplicate: a replay, nothing changed); throws a Refusal (409 for a stale attempt,
 * 404 for a foreign one), or the database's error if the write failed (the worker retries the
 * same seq).
 */
export async function ingestBatch(db: Db, workerId: string, batch: StreamBatch, publish: Publish): Promise<{ duplicate: boolean }> {
  const live = liveItems(batch);
  const { attemptId, seq } = batch;
  const release = await takeTurn(attemptId);
  try {
    // Live boards are not stored: they are a view of a game whose match is stored when it ends.
    if (live.kind === 'boards') {
      const { text, values } = unprepared(fenceAndClaim(workerId, batch, false, 0));
      const fence = checked((await poolOf(db).query<Fence>(text, values)).rows);
      settled(attemptId, seq);
      publish({ id: fence.jobId, teamId: fence.teamId }, { jobId: fence.jobId, attempt: fence.number, seq, stored: stored(attemptId, seq), ...live });
      return { duplicate: false };
    }
    const bytes = streamBytes(batch);
    const store = async (query: Query, tx?: Prisma.TransactionClient) => {
      const fence = checked(await query<Fence>(fenceAndClaim(workerId, batch, true, bytes)));
      if (!fence.claimed) return { duplicate: true };
      const job = { id: fence.jobId, teamId: fence.teamId };
      if (!fence.admitted) {
        // Over the team's quota: claimed and dropped; the run trains on and is told once.
        const notice = await tellQuotaReached(query, job.id, fence.number, seq, BigInt(fence.quota ?? DEFAULT_STREAM_STORAGE_BYTES));
        if (notice) publish(job, { jobId: job.id, attempt: fence.number, seq, stored: stored(attemptId, seq), kind: 'logs', items: [notice] });
        return { duplicate: false };
      }
      publish(job, { jobId: job.id, attempt: fence.number, seq, stored: stored(attemptId, seq), ...live });
      // The next batch of this attempt may go out while this one is written.
      release();
      if (tx) await writeRecords(tx, job, fence.number, seq, batch);
      else await writeRows(query, job.id, fence.number, seq, live);
      // Last, so that the team's total is locked only until the commit that follows.
      if (bytes > 0) await query(countStored(job, bytes));
      return { duplicate: false };
    };
    const result =
      live.kind === 'metrics' || live.kind === 'logs'
        ? await pooledTransaction(db, (query) => store(query))
        : await db.$transaction((tx) => store(inPrisma(tx), tx));
    settled(attemptId, seq);
    return result;
  } catch (error) {
    // A stale attempt's batch is refused for good; any other failure holds `stored` back until the
    // batch is sent again (and a 404 may come from another worker naming this attempt).
    if (error instanceof Refusal && error.status === 409) settled(attemptId, seq);
    throw error;
  } finally {
    release();
  }
}

/** Metrics and logs, in one statement each. */
async function writeRows(query: Query, jobId: string, attempt: number, seq: number, live: LiveItems): Promise<void> {
  if (live.kind === 'metrics') {
    if (live.items.length === 0) return;
    // One statement inserts the points and folds the new ones into their rollups; points that
    // replaced a value (xmax <> 0: updated, not inserted) come back to have theirs recomputed.
    const replaced = await query<{ key: string; step: number }>(Prisma.sql`
      WITH p AS (
        INSERT INTO "MetricPoint" ("jobId", key, step, value, attempt, seq, time)
        SELECT ${jobId}, k, s, v, ${attempt}::int, ${seq}::int, now()
          FROM unnest(${live.items.map((m) => m.key)}::text[], ${live.items.map((m) => m.step)}::int[], ${live.items.map((m) => m.value)}::float8[]) AS t(k, s, v)
        ON CONFLICT ("jobId", key, step) DO UPDATE SET value = EXCLUDED.value, attempt = EXCLUDED.attempt, seq = EXCLUDED.seq, time = EXCLUDED.time
        RETURNING key AS k, step AS s, value AS v, (xmax = 0) AS inserted
      ), folded AS (${foldSql(jobId, Prisma.sql`p WHERE inserted`)})
      SELECT k AS key, s AS step FROM p WHERE NOT inserted`, 'whetstone_write_metrics');
    const recompute = recomputeSql(jobId, replaced.map((r) => ({ key: r.key, bucket: Math.floor(r.step / ROLLUP_STEPS) })));
    if (recompute) await query(recompute);
  } else if (live.kind === 'logs') {
    if (live.items.length === 0) return;
    // Times are UTC, as Prisma keeps DateTime in a timestamp without time zone.
    await query(Prisma.sql`
      INSERT INTO "LogLine" ("jobId", attempt, seq, line, level, message, time)
      SELECT ${jobId}, ${attempt}::int, ${seq}::int, l, lv, m, t
        FROM unnest(${live.items.map((l) => l.line)}::int[], ${live.items.map((l) => l.level)}::text[], ${live.items.map((l) => l.message)}::text[],
                    ${live.items.map((l) => l.time.replace('Z', ''))}::timestamp(3)[]) AS u(l, lv, m, t)
      ON CONFLICT DO NOTHING`, 'whetstone_write_logs');
  }
}

/** Rollouts and matches: larger and rarer, through Prisma's models. */
async function writeRecords(tx: Prisma.TransactionClient, job: { id: string; teamId: string }, attempt: number, seq: number, batch: StreamBatch): Promise<void> {
  if (batch.kind === 'rollouts') {
    for (const r of batch.items) {
      // storedJson: the environment's keys are stored as they are, "__proto__" included.
      const data = {
        segments: storedJson(r.segments), reward: Number.isFinite(r.reward) ? r.reward : 0,
        turnRewards: r.turnRewards, endReason: r.endReason, info: storedJson(r.info), attempt, seq,
      };
      await tx.rolloutSample.upsert({
        where: { jobId_step_agent_index: { jobId: job.id, step: r.step, agent: r.agent, index: r.index } },
        update: data,
        create: { jobId: job.id, step: r.step, agent: r.agent, index: r.index, ...data },
        select: { id: true },
      });
    }
  } else if (batch.kind === 'matches') {
    for (const m of batch.items) {
      await tx.match.create({
        data: {
          teamId: job.teamId, jobId: job.id, step: m.step, agents: m.agents, moves: storedJson(m.moves),
          result: storedJson(m.result), winner: m.winner,
        },
      });
    }
  }
}
