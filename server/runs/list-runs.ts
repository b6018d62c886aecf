import type { Db } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import type { JobKind, JobState } from '../db/generated/prisma/enums';

/**
 * A job as the runs list, the run status page and the cluster's queue show it: its state and
 * why, what it trains on (environment and dataset versions, named from its config), where it runs,
 * and how far it got (its last step and reward, from the newest metric points).
 */
export interface RunSummary {
  id: string;
  kind: JobKind;
  state: JobState;
  /** TRAIN and SFT: the resolved training config's algorithm ("grpo", "ppo", "sft"); else null. */
  algorithm: string | null;
  priority: number;
  deviceCount: number;
  attempts: number;
  maxAttempts: number;
  /** The scheduler's words while the job waits ("waiting: team quota of 2 devices reached"). */
  waitingReason: string | null;
  failureReason: string | null;
  cancelRequested: boolean;
  owner: { id: string; name: string };
  environment: { id: string; name: string; versionId: string; version: number } | null;
  dataset: { id: string; name: string; versionId: string; version: number } | null;
  /** The worker of the job's active attempt (ASSIGNED or RUNNING). */
  worker: { id: string; name: string } | null;
  createdAt: Date;
  queuedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** TRAIN and SFT: the newest step with a reward or loss (null before the first); EVAL: null. */
  step: number | null;
  /** TRAIN and SFT: the config's training steps; EVAL: the games asked for. */
  totalSteps: number | null;
  /** TRAIN: the last `reward/mean`; EVAL: the last `eval/score`. */
  reward: number | null;
  /** The last `loss/total` (SFT's progress measure; RL runs report it too). */
  loss: number | null;
  /** The config's tags ("baseline", "lr-sweep"). */
  tags: string[];
}

export type RunOrder = 'newest' | 'queue';

export interface RunFilter {
  states?: JobState[];
  kinds: JobKind[];
  /** newest first, or the scheduler's order: running, assigned, then waiting by priority and age. */
  order: RunOrder;
  offset: number;
  limit: number;
  jobIds?: string[];
  /** Runs on any version of this environment. */
  environmentId?: string;
  /** Runs this member submitted. */
  ownerId?: string;
  /** Runs whose config carries this tag. */
  tag?: string;
}

interface Row {
  id: string;
  kind: JobKind;
  state: JobState;
  algorithm: string | null;
  priority: number;
  deviceCount: number;
  attempts: number;
  maxAttempts: number;
  waitingReason: string | null;
  failureReason: string | null;
  cancelRequested: boolean;
  ownerId: string;
  ownerName: string;
  environmentId: string | null;
  environmentName: string | null;
  environmentVersionId: string | null;
  environmentVersion: number | null;
  datasetId: string | null;
  datasetName: string | null;
  datasetVersionId: string | null;
  datasetVersion: number | null;
  workerId: string | null;
  workerName: string | null;
  createdAt: Date;
  queuedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  totalSteps: number | null;
  rewardStep: number | null;
  reward: number | null;
  lossStep: number | null;
  loss: number | null;
  score: number | null;
  tags: unknown;
}

function where(teamId: string, filter: Pick<RunFilter, 'states' | 'kinds' | 'jobIds' | 'environmentId' | 'ownerId' | 'tag'>): Prisma.Sql {
  const parts = [Prisma.sql`j."teamId" = ${teamId}`, Prisma.sql`j.kind::text = ANY(${filter.kinds}::text[])`];
  if (filter.states?.length) parts.push(Prisma.sql`j.state::text = ANY(${filter.states}::text[])`);
  if (filter.jobIds) parts.push(Prisma.sql`j.id = ANY(${filter.jobIds}::text[])`);
  if (filter.environmentId) {
    parts.push(Prisma.sql`j.config->>'environmentVersionId' IN (SELECT v.id FROM "EnvironmentVersion" v JOIN "Environment" e ON e.id = v."environmentId" WHERE e.id = ${filter.environmentId} AND e."teamId" = ${teamId})`);
  }
  if (filter.ownerId) parts.push(Prisma.sql`j."ownerId" = ${filter.ownerId}`);
  if (filter.tag) parts.push(Prisma.sql`j.config->'tags' @> jsonb_build_array(${filter.tag}::text)`);
  return Prisma.join(parts, ' AND ');
}

/**
 * One page of a team's jobs as summaries, and how many match in all. One statement: each last
 * metric is a backward scan of the (job, key, step) index, so the page costs a few index lookups
 * per job however long the runs are.
 */
export async function listRuns(db: Db, teamId: string, filter: RunFilter): Promise<{ runs: RunSummary[]; total: number }> {
  const order =
    filter.order === 'queue'
      ? Prisma.sql`CASE j.state WHEN 'RUNNING' THEN 0 WHEN 'ASSIGNED' THEN 1 ELSE 2 END, j.priority DESC, j."queuedAt" ASC, j.id`
      : Prisma.sql`j."createdAt" DESC, j.id DESC`;
  const [rows, [{ total }]] = await Promise.all([
    db.$queryRaw<Row[]>`
      SELECT j.id, j.kind::text AS kind, j.state::text AS state, j.config->'training'->>'algorithm' AS algorithm,
             j.priority, j."deviceCount", j.attempts, j."maxAttempts", j."waitingReason", j."failureReason",
             (j."cancelRequestedAt" IS NOT NULL) AS "cancelRequested",
             u.id AS "ownerId", u.name AS "ownerName",
             e.id AS "environmentId", e.name AS "environmentName", v.id AS "environmentVersionId", v.version AS "environmentVersion",
             d.id AS "datasetId", d.name AS "datasetName", dv.id AS "datasetVersionId", dv.version AS "datasetVersion",
             w.id AS "workerId", w.name AS "workerName",
             j."createdAt", j."queuedAt", j."startedAt", j."finishedAt",
             CASE WHEN j.kind = 'EVAL' THEN (j.config->>'games')::int ELSE (j.config->'training'->>'steps')::int END AS "totalSteps",
             r.step AS "rewardStep", r.value AS reward, l.step AS "lossStep", l.value AS loss, s.value AS score,
             j.config->'tags' AS tags
        FROM "Job" j
        JOIN "User" u ON u.id = j."ownerId"
        LEFT JOIN "EnvironmentVersion" v ON v.id = j.config->>'environmentVersionId'
        LEFT JOIN "Environment" e ON e.id = v."environmentId" AND e."teamId" = j."teamId"
        LEFT JOIN "DatasetVersion" dv ON dv.id = j.config->>'datasetVersionId'
        LEFT JOIN "Dataset" d ON d.id = dv."datasetId" AND d."teamId" = j."teamId"
        LEFT JOIN LATERAL (
          SELECT wk.id, wk.name FROM "JobAttempt" a JOIN "Worker" wk ON wk.id = a."workerId"
           WHERE a."jobId" = j.id AND a.state = 'ACTIVE' ORDER BY a.number DESC LIMIT 1
        ) w ON true
        LEFT JOIN LATERAL (SELECT step, value FROM "MetricPoint" WHERE "jobId" = j.id AND key = 'reward/mean' ORDER BY step DESC LIMIT 1) r ON true
        LEFT JOIN LATERAL (SELECT step, value FROM "MetricPoint" WHERE "jobId" = j.id AND key = 'loss/total' ORDER BY step DESC LIMIT 1) l ON true
        LEFT JOIN LATERAL (SELECT value FROM "MetricPoint" WHERE "jobId" = j.id AND key = 'eval/score' ORDER BY step DESC LIMIT 1) s ON true
       WHERE ${where(teamId, filter)}
       ORDER BY ${order}
      OFFSET ${filter.offset} LIMIT ${filter.limit}`,
    db.$queryRaw<Array<{ total: number }>>`SELECT count(*)::int AS total FROM "Job" j WHERE ${where(teamId, filter)}`,
  ]);
  return { runs: rows.map(summary), total };
}

function summary(r: Row): RunSummary {
  // An evaluation reports its score once, at step 0: it has games, not steps.
  const steps = r.kind === 'EVAL' ? [] : [r.rewardStep, r.lossStep].filter((s): s is number => s !== null);
  return {
    id: r.id,
    kind: r.kind,
    state: r.state,
    algorithm: r.kind === 'TRAIN' || r.kind === 'SFT' ? r.algorithm : null,
    priority: r.priority,
    deviceCount: r.deviceCount,
    attempts: r.attempts,
    maxAttempts: r.maxAttempts,
    waitingReason: r.waitingReason,
    failureReason: r.failureReason,
    cancelRequested: r.cancelRequested,
    owner: { id: r.ownerId, name: r.ownerName },
    environment:
      r.environmentId && r.environmentName && r.environmentVersionId && r.environmentVersion !== null
        ? { id: r.environmentId, name: r.environmentName, versionId: r.environmentVersionId, version: r.environmentVersion }
        : null,
    dataset:
      r.datasetId && r.datasetName && r.datasetVersionId && r.datasetVersion !== null
        ? { id: r.datasetId, name: r.datasetName, versionId: r.datasetVersionId, version: r.datasetVersion }
        : null,
    worker: r.workerId && r.workerName ? { id: r.workerId, name: r.workerName } : null,
    createdAt: r.createdAt,
    queuedAt: r.queuedAt,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    step: steps.length ? Math.max(...steps) : null,
    totalSteps: r.totalSteps,
    reward: r.kind === 'EVAL' ? r.score : r.reward,
    loss: r.loss,
    tags: Array.isArray(r.tags) ? r.tags.filter((t): t is string => typeof t === 'string') : [],
  };
}
