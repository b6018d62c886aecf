// What a worker is told about a job placed on it (sdk/worker-protocol.ts's Assignment): the
// attempt with its lease and fencing token, the job's config, the checkpoint it resumes from and
// the environment it runs, and the storage keys of the blobs its config names. Built in one
// statement for any number of attempts, either by reading active attempts (heartbeats, which
// repeat assignments until started) or straight from the placement statement that opened them
// (place.ts), so that a round pushes what it placed without reading it back.
import type { Assignment } from '../../sdk/worker-protocol';
import { type Db, rawQuery } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';

export interface AssignmentRow {
  id: string;
  fencingToken: string;
  jobId: string;
  number: number;
  deviceIndexes: number[];
  leaseExpiresAt: string;
  kind: Assignment['kind'];
  config: Record<string, unknown>;
  timeLimitSeconds: number | null;
  teamId: string;
  resumeFrom: Assignment['resumeFrom'];
  environment: Assignment['environment'];
  blobKeys: Assignment['blobKeys'];
  baseModel: Assignment['baseModel'];
}

/**
 * An AssignmentRow's select list, over `a` (the attempt: id, "fencingToken", "jobId", number,
 * "deviceIndexes", "leaseExpiresAt", "resumedFromId") and `j` (its job: kind, config,
 * "timeLimitSeconds", "teamId"), with ASSIGNMENT_JOINS.
 *
 * The checkpoint resumed from carries its siblings by agent (`agents`): a run whose learners learn
 * independently writes one per learner at each step, all of which the attempt restores; whichever
 * of them the placement picked as the newest, the set is the same.
 *
 * The blob keys: the config names checkpoints (baseCheckpointId, checkpointId,
 * against.checkpointId, and "checkpoint:<id>" keys of training.opponents) and dataset versions (datasetVersionId, evalDatasetVersionId, training.warmStart.datasetVersionId)
 * by id, when those are strings;
 * the worker fetches blobs by storage key, of its job's team's only. The imported model the config
 * starts from (baseModelId), with its files' keys, is `baseModel`. Read in the same statement
 * (a few index lookups per row), so that placing a batch costs no query per job.
 */
export const ASSIGNMENT_COLUMNS = Prisma.raw(`
  a.id, a."fencingToken"::text AS "fencingToken", a."jobId", a.number, a."deviceIndexes",
  to_char(a."leaseExpiresAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "leaseExpiresAt",
  j.kind::text AS kind, j.config, j."timeLimitSeconds", j."teamId",
  CASE WHEN c.id IS NULL THEN NULL ELSE json_build_object('checkpointId', c.id, 'storageKey', c."storageKey", 'step', c.step,
    'agents', (SELECT json_object_agg(s.agent, json_build_object('checkpointId', s.id, 'storageKey', s."storageKey")) FROM "Checkpoint" s
                WHERE s."jobId" = c."jobId" AND s."attemptId" IS NOT DISTINCT FROM c."attemptId" AND s.kind = c.kind AND s.step = c.step AND s.agent <> '')) END AS "resumeFrom",
  CASE WHEN v.id IS NULL THEN NULL ELSE json_build_object('versionId', v.id, 'files', v.files, 'entry', v.entry, 'manifest', v.manifest) END AS environment,
  (SELECT coalesce(json_object_agg(k.id, k."storageKey"), '{}') FROM (
     SELECT c.id, c."storageKey" FROM "Checkpoint" c
      WHERE c.id = ANY(ARRAY(SELECT x #>> '{}' FROM unnest(ARRAY[j.config -> 'baseCheckpointId', j.config -> 'checkpointId', j.config -> 'against' -> 'checkpointId']) x
                              WHERE jsonb_typeof(x) = 'string'
                             UNION ALL
                             SELECT substr(k, 12) FROM jsonb_object_keys(CASE WHEN jsonb_typeof(j.config #> '{training,opponents}') = 'object'
                                                                              THEN j.config #> '{training,opponents}' ELSE '{}'::jsonb END) k
                              WHERE k LIKE 'checkpoint:%'))
        AND c."teamId" = j."teamId"
     UNION ALL
     SELECT d.id, d."storageKey" FROM "DatasetVersion" d JOIN "Dataset" s ON s.id = d."datasetId"
      WHERE d.id = ANY(ARRAY(SELECT x #>> '{}' FROM unnest(ARRAY[j.config -> 'datasetVersionId', j.config -> 'evalDatasetVersionId', j.config #> '{training,warmStart,datasetVersionId}']) x
                              WHERE jsonb_typeof(x) = 'string'))
        AND s."teamId" = j."teamId"
   ) k) AS "blobKeys",
  (SELECT json_build_object('modelId', m.id, 'contentHash', m."contentHash",
            'files', (SELECT json_agg(json_build_object('path', f->>'path', 'storageKey', f->>'storageKey', 'bytes', (f->>'bytes')::bigint)) FROM jsonb_array_elements(m.files) f))
     FROM "PretrainedModel" m
    WHERE jsonb_typeof(j.config -> 'baseModelId') = 'string' AND m.id = j.config ->> 'baseModelId' AND m."teamId" = j."teamId") AS "baseModel"`);

/** The checkpoint an attempt resumes from and the environment version its job's config names. */
export const ASSIGNMENT_JOINS = Prisma.raw(`
  LEFT JOIN "Checkpoint" c ON c.id = a."resumedFromId"
  LEFT JOIN "EnvironmentVersion" v
         ON jsonb_typeof(j.config -> 'environmentVersionId') = 'string' AND v.id = j.config ->> 'environmentVersionId'`);

/**
 * The assignments of active attempts (those no longer active are left out), in one statement for
 * any number of them, in the order asked.
 */
export async function buildAssignments(db: Db, attemptIds: string[]): Promise<Assignment[]> {
  if (attemptIds.length === 0) return [];
  const rows = await rawQuery<AssignmentRow>(db, Prisma.sql`
    SELECT ${ASSIGNMENT_COLUMNS}
      FROM "JobAttempt" a
      JOIN "Job" j ON j.id = a."jobId"
      ${ASSIGNMENT_JOINS}
     WHERE a.id = ANY(${attemptIds}::text[]) AND a.state = 'ACTIVE'`);
  const order = new Map(attemptIds.map((id, i) => [id, i]));
  rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  return assignmentsOf(rows);
}

/** Rows as assignments. */
export function assignmentsOf(rows: AssignmentRow[]): Assignment[] {
  return rows.map((row) => ({
    attemptId: row.id,
    fencingToken: row.fencingToken,
    jobId: row.jobId,
    attempt: row.number,
    kind: row.kind,
    config: row.config,
    deviceIndexes: row.deviceIndexes,
    leaseExpiresAt: row.leaseExpiresAt,
    timeLimitSeconds: row.timeLimitSeconds,
    resumeFrom: row.resumeFrom,
    environment: row.environment,
    blobKeys: row.blobKeys,
    baseModel: row.baseModel,
  }));
}
