import type { Db } from '../db/client';

/** One hour of a team's device use: the devices its jobs held, averaged over the hour. */
export interface UsageHour {
  hourStart: Date;
  /** Device-hours used in the hour (2 devices for half an hour: 1). */
  devices: number;
}

/**
 * A team's device use over the last 24 hours, hour by hour (the current hour so far, counted to
 * now): every attempt of its jobs weighs its devices by how long it held them within each hour. An
 * attempt still running counts to now.
 */
export async function usageHistory(db: Db, teamId: string): Promise<UsageHour[]> {
  const rows = await db.$queryRaw<Array<{ hourStart: Date; deviceSeconds: number }>>`
    SELECT h.start AS "hourStart",
           COALESCE(SUM(cardinality(a."deviceIndexes") * EXTRACT(EPOCH FROM (
             LEAST(COALESCE(a."endedAt", now()), h.start + interval '1 hour') - GREATEST(a."startedAt", h.start)
           ))), 0)::float8 AS "deviceSeconds"
      FROM generate_series(date_trunc('hour', now()) - interval '23 hours', date_trunc('hour', now()), interval '1 hour') AS h(start)
      LEFT JOIN "JobAttempt" a
        ON a."startedAt" < h.start + interval '1 hour'
       AND COALESCE(a."endedAt", now()) > h.start
       AND a."jobId" IN (SELECT j.id FROM "Job" j WHERE j."teamId" = ${teamId})
     GROUP BY h.start
     ORDER BY h.start`;
  return rows.map((r) => ({ hourStart: r.hourStart, devices: Number((r.deviceSeconds / 3600).toFixed(3)) }));
}
