import type { Db } from '../db/client';

export interface EnvironmentLastRun {
  environmentId: string;
  jobId: string;
  kind: string;
  state: string;
  createdAt: Date;
  /** The job's last `reward/mean` (null before its first step, or for a job that reports none). */
  reward: number | null;
  rewardStep: number | null;
}

/**
 * The newest train, SFT or eval job of each of a team's environments, with its last mean reward:
 * the environments list's "last run" column. One query: jobs name their environment version in
 * their config, so the join goes through it.
 */
export async function lastRunsOfEnvironments(db: Db, teamId: string): Promise<EnvironmentLastRun[]> {
  return db.$queryRaw<EnvironmentLastRun[]>`
    SELECT DISTINCT ON (v."environmentId")
      v."environmentId" AS "environmentId", j.id AS "jobId", j.kind::text AS kind, j.state::text AS state, j."createdAt" AS "createdAt",
      m.value AS reward, m.step AS "rewardStep"
    FROM "Job" j
    JOIN "EnvironmentVersion" v ON v.id = j.config->>'environmentVersionId'
    LEFT JOIN LATERAL (
      SELECT value, step FROM "MetricPoint" mp WHERE mp."jobId" = j.id AND mp.key = 'reward/mean' ORDER BY mp.step DESC LIMIT 1
    ) m ON true
    WHERE j."teamId" = ${teamId}
    ORDER BY v."environmentId", j."createdAt" DESC`;
}
