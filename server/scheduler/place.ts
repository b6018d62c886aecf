import type { Assignment } from '../../sdk/worker-protocol';
import type pg from 'pg';
import { type Db, poolOf, rawQuery } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import { newId } from '../db/ids';
import { ASSIGNMENT_COLUMNS, ASSIGNMENT_JOINS, type AssignmentRow, assignmentsOf } from './assignments';
import type { Placement } from './types';
import { LEASE_SECONDS } from './timing';

export interface Placed {
  jobId: string;
  workerId: string;
  attemptId: string;
  teamId: string;
  /** What the worker is told, read from the statement that placed it. */
  assignment: Assignment;
}

/**
 * Applies a round's placements in one statement: lock the jobs still QUEUED (SKIP LOCKED: a job
 * being cancelled right now is skipped this round rather than waited for), open an attempt with
 * its lease on each (resuming from the job's latest TRAINING checkpoint: the highest step, and of
 * several at one step the newest, as a warm start's checkpoints all are at step 0), mark the jobs ASSIGNED
 * and record a JobEvent with the planner's reason for each. Returns the placements that took,
 * each with its assignment (so that the round pushes it without reading it back).
 *
 * One statement is one transaction: a placement that fails (a worker deleted meanwhile) fails the
 * batch, so `placeAll` then retries them one by one, and that one costs only itself.
 */
export async function placeBatch(db: Db, placements: Placement[], now: Date, connection?: pg.PoolClient): Promise<Placed[]> {
  if (placements.length === 0) return [];
  const leaseExpiresAt = new Date(now.getTime() + LEASE_SECONDS * 1000);
  const rows = await rawQuery<AssignmentRow & { workerId: string }>(db, Prisma.sql`
    WITH p AS (
      SELECT * FROM unnest(
        ${placements.map((p) => p.jobId)}::text[], ${placements.map((p) => p.workerId)}::text[],
        ${placements.map((p) => `{${p.deviceIndexes.join(',')}}`)}::text[], ${placements.map((p) => p.reason)}::text[],
        ${placements.map(() => newId())}::text[]
      ) AS p("jobId", "workerId", devices, reason, "attemptId")
    ), locked AS (
      SELECT j.id, j."teamId", j.attempts, j.kind, j.config, j."timeLimitSeconds" FROM "Job" j
       WHERE j.id IN (SELECT "jobId" FROM p) AND j.state = 'QUEUED'
         FOR UPDATE SKIP LOCKED
    ), attempt AS (
      INSERT INTO "JobAttempt" (id, "jobId", number, "workerId", "deviceIndexes", "leaseExpiresAt", "startedAt", "resumedFromId")
      SELECT p."attemptId", l.id, l.attempts + 1, p."workerId", p.devices::int[], ${leaseExpiresAt}, ${now},
             (SELECT c.id FROM "Checkpoint" c WHERE c."jobId" = l.id AND c.kind = 'TRAINING' ORDER BY c.step DESC, c."createdAt" DESC LIMIT 1)
        FROM locked l JOIN p ON p."jobId" = l.id
      RETURNING id, "jobId", "workerId", number, "deviceIndexes", "fencingToken", "leaseExpiresAt", "resumedFromId"
    ), job AS (
      UPDATE "Job" j SET state = 'ASSIGNED', attempts = l.attempts + 1, "waitingReason" = NULL, "notBefore" = NULL, "updatedAt" = ${now}
        FROM locked l WHERE j.id = l.id
    ), event AS (
      INSERT INTO "JobEvent" ("jobId", "fromState", "toState", "actorType", reason, at)
      SELECT l.id, 'QUEUED'::"JobState", 'ASSIGNED'::"JobState", 'SCHEDULER'::"ActorType", p.reason, ${now}
        FROM locked l JOIN p ON p."jobId" = l.id
    )
    SELECT ${ASSIGNMENT_COLUMNS}, a."workerId" FROM attempt a JOIN locked j ON j.id = a."jobId" ${ASSIGNMENT_JOINS}`, connection);
  const assignments = assignmentsOf(rows);
  return rows.map((row, i) => ({ jobId: row.jobId, workerId: row.workerId, attemptId: row.id, teamId: row.teamId, assignment: assignments[i] }));
}

/**
 * `placeBatch`, falling back to one statement per placement when the batch fails as a whole.
 *
 * All on one connection: node-postgres reports a failed statement as soon as the error arrives,
 * before PostgreSQL has rolled its transaction back and released the rows it locked; on another
 * connection, the one-by-one statements could still find those rows locked and skip them (SKIP
 * LOCKED). On the same connection they run only after the rollback.
 */
export async function placeAll(db: Db, placements: Placement[], now: Date, log: (line: string) => void = () => {}): Promise<Placed[]> {
  if (placements.length === 0) return [];
  const connection = await poolOf(db).connect();
  try {
    try {
      return await placeBatch(db, placements, now, connection);
    } catch (error) {
      if (placements.length === 1) throw error;
      log(`scheduler: batch placement failed (${(error as Error).message}); placing one by one`);
    }
    const placed: Placed[] = [];
    for (const p of placements) {
      try {
        placed.push(...(await placeBatch(db, [p], now, connection)));
      } catch (error) {
        log(`scheduler: could not place job ${p.jobId} on ${p.workerId}: ${(error as Error).message}`);
      }
    }
    return placed;
  } finally {
    connection.release();
  }
}
