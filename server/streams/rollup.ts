import type { Db } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';

// Metric rollups: each metric summarised per 256 steps (first and last step, min, max, the last
// value, count), kept in step with the points at ingest. A curve of a million points is then
// drawn from about 4,000 rows instead of a million (server/api/routers/runs.ts).

export const ROLLUP_STEPS = 256;

type Tx = Prisma.TransactionClient | Db;

/**
 * The statement that folds points into their rollups, reading them from `source`: any relation
 * with columns k (key), s (step) and v (value), such as a CTE of the rows an insert just made.
 */
export function foldSql(jobId: string, source: Prisma.Sql): Prisma.Sql {
  // A literal, not a parameter: GROUP BY must see the same expression as the select list.
  const bucket = Prisma.raw(`s / ${ROLLUP_STEPS}`);
  return Prisma.sql`
    INSERT INTO "MetricRollup" AS r ("jobId", key, bucket, "firstStep", "lastStep", min, max, last, count)
    SELECT ${jobId}, k, ${bucket}, min(s), max(s), min(v), max(v), (array_agg(v ORDER BY s DESC))[1], count(*)::int
      FROM ${source}
     GROUP BY k, ${bucket}
    ON CONFLICT ("jobId", key, bucket) DO UPDATE SET
      "firstStep" = LEAST(r."firstStep", EXCLUDED."firstStep"),
      last = CASE WHEN EXCLUDED."lastStep" > r."lastStep" THEN EXCLUDED.last ELSE r.last END,
      "lastStep" = GREATEST(r."lastStep", EXCLUDED."lastStep"),
      min = LEAST(r.min, EXCLUDED.min),
      max = GREATEST(r.max, EXCLUDED.max),
      count = r.count + EXCLUDED.count`;
}

const REPLACE_FROM_EXCLUDED = `ON CONFLICT ("jobId", key, bucket) DO UPDATE SET
  "firstStep" = EXCLUDED."firstStep", "lastStep" = EXCLUDED."lastStep", min = EXCLUDED.min,
  max = EXCLUDED.max, last = EXCLUDED.last, count = EXCLUDED.count`;

/**
 * The statement that recomputes the rollups of some buckets from their points (null if there
 * are none): those where a value was replaced (a resumed attempt replaying the steps after its
 * checkpoint), since folding would keep a stale min or max. Each bucket is an index range scan
 * of at most 256 points.
 */
export function recomputeSql(jobId: string, buckets: Array<{ key: string; bucket: number }>): Prisma.Sql | null {
  const unique = [...new Map(buckets.map((b) => [`${b.key}\u0000${b.bucket}`, b])).values()];
  if (unique.length === 0) return null;
  const width = Prisma.raw(String(ROLLUP_STEPS));
  return Prisma.sql`
    INSERT INTO "MetricRollup" ("jobId", key, bucket, "firstStep", "lastStep", min, max, last, count)
    SELECT p."jobId", p.key, t.b, min(p.step), max(p.step), min(p.value), max(p.value),
           (array_agg(p.value ORDER BY p.step DESC))[1], count(*)::int
      FROM unnest(${unique.map((b) => b.key)}::text[], ${unique.map((b) => b.bucket)}::int[]) AS t(k, b)
      JOIN "MetricPoint" p ON p."jobId" = ${jobId} AND p.key = t.k AND p.step >= t.b * ${width} AND p.step < (t.b + 1) * ${width}
     GROUP BY p."jobId", p.key, t.b
    ${Prisma.raw(REPLACE_FROM_EXCLUDED)}`;
}

/** Rebuilds every rollup of a job from its points (after points were written by other means). */
export async function rebuildRollups(tx: Tx, jobId: string): Promise<void> {
  await tx.$executeRawUnsafe(
    `INSERT INTO "MetricRollup" ("jobId", key, bucket, "firstStep", "lastStep", min, max, last, count)
     SELECT "jobId", key, step / ${ROLLUP_STEPS}, min(step), max(step), min(value), max(value),
            (array_agg(value ORDER BY step DESC))[1], count(*)::int
       FROM "MetricPoint" WHERE "jobId" = $1
      GROUP BY "jobId", key, step / ${ROLLUP_STEPS}
     ${REPLACE_FROM_EXCLUDED}`,
    jobId,
  );
}
