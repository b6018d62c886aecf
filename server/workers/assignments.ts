// What a worker is told about a job placed on it (sdk/worker-protocol.ts's Assignment): the
// attempt with its lease and fencing token, the job's config, the checkpoint it resumes from and
// the environment it runs. Built in one statement for any number of attempts, either by reading
// active attempts (heartbeats, which repeat assignments until started) or straight from the
// placement statement that opened them (server/scheduler/place.ts), so that a round pushes what
// it placed without reading it back.
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
}

/**
 * An AssignmentRow's select list, over `a` (the attempt: id, "fencingToken", "jobId", number,
 * "deviceIndexes", "leaseExpiresAt", "resumedFromId") and `j` (its job: kind, config,
 * "timeLimitSeconds", "teamId"), with ASSIGNMENT_JOINS.
 */
export const ASSIGNMENT_COLUMNS = Prisma.raw(`
  a.id, a."fencingToken"::text AS "fencingToken", a."jobId", a.number, a."deviceIndexes",
  to_char(a."leaseExpiresAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "leaseExpiresAt",
  j.kind::text AS kind, j.config, j."timeLimitSeconds", j."teamId",
  CASE WHEN c.id IS NULL THEN NULL ELSE json_build_object('checkpointId', c.id, 'storageKey', c."storageKey", 'step', c.step) END AS "resumeFrom",
  CASE WHEN v.id IS NULL THEN NULL ELSE json_build_object('versionId', v.id, 'files', v.files, 'entry', v.entry, 'manifest', v.manifest) END AS environment`);

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
  return assignmentsOf(db, rows);
}

/** Rows as assignments, plus a lookup for the few configs that name checkpoints or datasets. */
export async function assignmentsOf(db: Db, rows: AssignmentRow[]): Promise<Assignment[]> {
  const assignments: Assignment[] = [];
  for (const row of rows) {
    assignments.push({
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
      blobKeys: await blobKeysOf(db, row.teamId, row.config),
    });
  }
  return assignments;
}

/** The config names checkpoints and datasets by id; the worker fetches blobs by storage key (its team's only). */
async function blobKeysOf(db: Db, teamId: string, config: Record<string, unknown>): Promise<Record<string, string>> {
  const blobKeys: Record<string, string> = {};
  const against = config.against as { checkpointId?: unknown } | undefined;
  const checkpointIds = [config.baseCheckpointId, config.checkpointId, against?.checkpointId].filter((id): id is string => typeof id === 'string');
  if (checkpointIds.length) {
    for (const c of await db.checkpoint.findMany({ where: { id: { in: checkpointIds }, teamId } })) blobKeys[c.id] = c.storageKey;
  }
  if (typeof config.datasetVersionId === 'string') {
    const d = await db.datasetVersion.findFirst({ where: { id: config.datasetVersionId, dataset: { teamId } } });
    if (d) blobKeys[d.id] = d.storageKey;
  }
  return blobKeys;
}
