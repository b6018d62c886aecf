import { Prisma } from '../db/generated/prisma/client';
import type { LiveItem } from '../../sdk/live';
import type { StreamBatch } from '../../sdk/worker-protocol';
import { formatBytes } from '../../sdk/bytes';
import type { Query } from './pooled-transaction';

// A team's storage quota for stream data (TeamQuota.streamStorageBytes). Every stored batch adds
// its size to two running totals, its run's (JobStreamUsage) and its team's (TeamStreamUsage), as
// the last statement of its transaction (ingest.ts), and the statement that fences and claims a
// batch reads the team's total: the quota costs a row read and two row updates per batch, whatever
// the number of runs and rows, where a sum over the stored rows would grow with them. The team's
// row is locked only from that last statement to the commit, so a team's batches hardly wait for
// each other, and the read before publishing takes no lock at all. A batch is stored while the
// team's total is below its quota, so a team may pass it by the batches in flight at that moment.
// Past it, a run's batches are claimed (a retry changes nothing) and dropped: the run trains on
// and is told once.

/** The quota of a team that never set one: TeamQuota.streamStorageBytes's default in prisma/schema.prisma. */
export const DEFAULT_STREAM_STORAGE_BYTES = 2 ** 30;

/**
 * What a stored row costs beyond its texts: the tuple header, the fixed columns and the index
 * entries, roughly. The migration that brought the quota counted the rows stored before it the
 * same way (prisma/migrations/*_stream_storage_quota).
 */
const ROW_BYTES = 64;

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');
const json = (value: unknown) => utf8(JSON.stringify(value) ?? '');
const sum = <T>(items: readonly T[], size: (item: T) => number) => items.reduce((n, item) => n + size(item), 0);

/**
 * The bytes a batch adds to what its run stores: texts and JSON as UTF-8, and ROW_BYTES a row.
 * An estimate of the table space (PostgreSQL compresses large values; a metric replayed after a
 * resume is counted again), cheap enough for every batch. Boards are not stored.
 */
export function streamBytes(batch: StreamBatch): number {
  switch (batch.kind) {
    case 'metrics':
      return sum(batch.items, (m) => utf8(m.key) + ROW_BYTES);
    case 'logs':
      return sum(batch.items, (l) => utf8(l.message) + utf8(l.level) + ROW_BYTES);
    case 'rollouts':
      return sum(batch.items, (r) => json(r.segments) + json(r.info) + json(r.turnRewards) + utf8(r.endReason ?? '') + ROW_BYTES);
    case 'matches':
      return sum(batch.items, (m) => json(m.agents) + json(m.moves) + json(m.result) + ROW_BYTES);
    case 'boards':
      return 0;
  }
}

/**
 * Adds a stored batch's bytes to its team's total and its run's. The team's row first (the outer
 * insert reads the team's), the order runs.delete locks them in (delete-run.ts).
 */
export function countStored(job: { id: string; teamId: string }, bytes: number): Prisma.Sql {
  return Prisma.sql`
    WITH team AS (
      INSERT INTO "TeamStreamUsage" AS u ("teamId", bytes) VALUES (${job.teamId}, ${bytes}::bigint)
      ON CONFLICT ("teamId") DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes
      RETURNING 1
    )
    INSERT INTO "JobStreamUsage" AS u ("jobId", bytes) SELECT ${job.id}, ${bytes}::bigint FROM team
    ON CONFLICT ("jobId") DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes`;
}

/** What a run is told when its team's quota drops its stream data. */
export function quotaReached(limit: bigint | number): string {
  return (
    `team stream storage quota of ${formatBytes(limit)} reached: stream data of this job is no longer stored (it trains on); ` +
    'delete old runs or ask an admin to raise it'
  );
}

/**
 * A batch dropped by the quota, in its transaction: the first for its run stores a notice in the
 * run's log (at the batch's position, which holds nothing else) and its events. Returns the
 * notice's log item, to publish, or null when the run was told before.
 */
export async function tellQuotaReached(query: Query, jobId: string, attempt: number, seq: number, limit: bigint): Promise<LiveItem<'logs'> | null> {
  // Of concurrent batches, one sets droppedAt (the other waits for its row and finds it set).
  const first = await query<{ told: boolean }>(Prisma.sql`
    INSERT INTO "JobStreamUsage" AS u ("jobId", bytes, "droppedAt") VALUES (${jobId}, 0, now() AT TIME ZONE 'UTC')
    ON CONFLICT ("jobId") DO UPDATE SET "droppedAt" = EXCLUDED."droppedAt" WHERE u."droppedAt" IS NULL
    RETURNING true AS told`);
  if (first.length === 0) return null;
  const notice = { line: 0, level: 'warn' as const, message: quotaReached(limit), time: new Date().toISOString() };
  // Times are UTC, as Prisma keeps DateTime in a timestamp without time zone.
  const at = notice.time.replace('Z', '');
  await query(Prisma.sql`
    WITH line AS (
      INSERT INTO "LogLine" ("jobId", attempt, seq, line, level, message, time)
      VALUES (${jobId}, ${attempt}::int, ${seq}::int, ${notice.line}::int, ${notice.level}, ${notice.message}, ${at}::timestamp(3))
      ON CONFLICT DO NOTHING
    )
    INSERT INTO "JobEvent" ("jobId", "fromState", "toState", "actorType", reason, at)
    SELECT id, state, state, 'SYSTEM'::"ActorType", ${notice.message}, ${at}::timestamp(3) FROM "Job" WHERE id = ${jobId}`);
  return notice;
}
