import type { Db } from '../db/client';

/**
 * Deletes a finished run and everything it streamed (metrics, rollups, rollouts, logs, matches,
 * events, attempts), giving its bytes back to its team's stream quota (stream-quota.ts). Its
 * checkpoints stay: they are the team's models, not stream data (their job is unset). Returns the
 * bytes the team's total went down by.
 */
export async function deleteRun(db: Db, run: { id: string; teamId: string }): Promise<bigint> {
  return db.$transaction(async (tx) => {
    // The team's total first, then the run's rows: the order ingest.ts locks them in.
    const [freed] = await tx.$queryRaw<Array<{ bytes: bigint }>>`
      WITH run AS (SELECT coalesce((SELECT bytes FROM "JobStreamUsage" WHERE "jobId" = ${run.id}), 0) AS bytes),
      team AS (
        UPDATE "TeamStreamUsage" t SET bytes = greatest(0, t.bytes - run.bytes) FROM run WHERE t."teamId" = ${run.teamId}
      )
      SELECT bytes FROM run`;
    // Matches would outlive their run (their jobId is set null), the rest goes with the job.
    await tx.match.deleteMany({ where: { jobId: run.id } });
    await tx.job.delete({ where: { id: run.id } });
    return freed?.bytes ?? 0n;
  });
}
