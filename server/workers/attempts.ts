// Starting and finishing an attempt, whichever way the daemon calls: over its socket.io
// connection (realtime/gateway.ts) or over HTTP (api.ts). They are a running pool's most frequent
// calls, so each is first tried as one group-committed statement that checks the worker and the
// fence and makes the change with its JobEvent; calls that arrive together share a statement.
// When that matches nothing, the full path says why (401, 404, 409) or handles the rarer case.
import { type z } from 'zod';
import type { finishRequestSchema, startRequestSchema } from '../../sdk/worker-protocol';
import { type Db, rawQuery } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import { groupCommit } from '../db/group-commit';
import type { JobChanged } from '../scheduler/job-changes';
import { notifyScheduler, SCHEDULER_CHANNEL } from '../scheduler/loop';
import { recordEvent, stoppedState } from '../scheduler/transitions';

export class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly details?: unknown) {
    super(message);
  }
}

/** Who calls: a worker known by its connection (socket.io), or by its credential's hash (HTTP). */
export type WorkerRef = { workerId: string } | { credentialHash: string };

export type StartRequest = z.infer<typeof startRequestSchema>;
export type FinishRequest = z.infer<typeof finishRequestSchema>;

export interface AttemptCalls {
  start(worker: WorkerRef, input: StartRequest): Promise<{ state: 'RUNNING' }>;
  finish(worker: WorkerRef, input: FinishRequest): Promise<{ state: string }>;
}

/** The worker a reference names, unless revoked (401). */
export async function workerOf(db: Db, ref: WorkerRef) {
  const worker = await db.worker.findUnique({ where: 'workerId' in ref ? { id: ref.workerId } : { credentialHash: ref.credentialHash } });
  if (!worker || worker.state === 'REVOKED') throw new HttpError(401, 'This worker was revoked or is unknown: register it again');
  return worker;
}

type WorkerRow = Awaited<ReturnType<typeof workerOf>>;

/** The attempt a fenced write is about, if it is still this worker's current lease; else 409. */
export async function fencedAttempt(db: Db, worker: WorkerRow, attemptId: string, fencingToken: string) {
  const attempt = await db.jobAttempt.findUnique({ where: { id: attemptId }, include: { job: true } });
  if (!attempt || attempt.workerId !== worker.id) throw new HttpError(404, 'No such attempt on this worker');
  if (attempt.fencingToken.toString() !== fencingToken || attempt.state !== 'ACTIVE') {
    throw new HttpError(409, 'This attempt no longer holds the job (lease lost or superseded): stop it and write nothing more');
  }
  return attempt;
}

/** A fencing token as the column's bigint text, or null when it cannot be one (the full path answers 409). */
function tokenOf(fencingToken: string): string | null {
  return /^\d{1,19}$/.test(fencingToken) && BigInt(fencingToken) < 2n ** 63n ? fencingToken : null;
}

interface FastCall {
  attemptId: string;
  token: string;
  workerId: string | null;
  credentialHash: string | null;
}
interface FastFinish extends FastCall {
  reason: string;
  exitCode: number | null;
}
interface FastResult {
  attemptId: string;
  jobId: string;
  teamId: string;
  changed: boolean;
}

function fastCall(ref: WorkerRef, input: { attemptId: string; fencingToken: string }): FastCall | null {
  const token = tokenOf(input.fencingToken);
  if (token === null) return null;
  return { attemptId: input.attemptId, token, workerId: 'workerId' in ref ? ref.workerId : null, credentialHash: 'credentialHash' in ref ? ref.credentialHash : null };
}

/** Each call's row, or null; a call repeated within a batch (a retry) shares the first one's. */
function answerEach<C extends FastCall>(calls: C[], rows: FastResult[]): Array<FastResult | null> {
  const byAttempt = new Map(rows.map((r) => [r.attemptId, r]));
  return calls.map((c) => byAttempt.get(c.attemptId) ?? null);
}

/** Calls for distinct attempts (the statement would otherwise write one event per copy). */
function distinct<C extends FastCall>(calls: C[]): C[] {
  return [...new Map(calls.map((c) => [c.attemptId, c])).values()];
}

/** ASSIGNED → RUNNING for a batch of fenced starts, each with its JobEvent, in one statement. */
async function startBatch(db: Db, calls: FastCall[]): Promise<Array<FastResult | null>> {
  const unique = distinct(calls);
  const now = new Date();
  const rows = await rawQuery<FastResult>(db, Prisma.sql`
    WITH p AS (
      SELECT * FROM unnest(${unique.map((c) => c.attemptId)}::text[], ${unique.map((c) => c.token)}::text[],
                           ${unique.map((c) => c.workerId)}::text[], ${unique.map((c) => c.credentialHash)}::text[])
             AS p("attemptId", token, "workerId", hash)
    ), a AS (
      SELECT a.id AS "attemptId", a."jobId", a.number, w.id AS "workerId", w.name AS "workerName", j."teamId"
        FROM p JOIN "JobAttempt" a ON a.id = p."attemptId" JOIN "Worker" w ON w.id = a."workerId" JOIN "Job" j ON j.id = a."jobId"
       WHERE a."fencingToken" = p.token::bigint AND a.state = 'ACTIVE' AND w.state <> 'REVOKED'
         AND (w.id = p."workerId" OR w."credentialHash" = p.hash)
    ), job AS (
      UPDATE "Job" j SET state = 'RUNNING', "startedAt" = coalesce(j."startedAt", ${now}), "updatedAt" = ${now}
        FROM a WHERE j.id = a."jobId" AND j.state = 'ASSIGNED'
      RETURNING j.id
    ), event AS (
      INSERT INTO "JobEvent" ("jobId", "fromState", "toState", "actorType", "actorId", reason, at)
      SELECT a."jobId", 'ASSIGNED'::"JobState", 'RUNNING'::"JobState", 'WORKER'::"ActorType", a."workerId",
             'attempt ' || a.number || ' started on ' || a."workerName", ${now}
        FROM a JOIN job ON job.id = a."jobId"
    )
    SELECT a."attemptId", a."jobId", a."teamId", EXISTS (SELECT 1 FROM job WHERE job.id = a."jobId") AS changed FROM a`);
  return answerEach(calls, rows);
}

/** Succeeded attempts in one statement: each ended, its job SUCCEEDED with its event, and one scheduler wakeup. */
async function finishSucceededBatch(db: Db, calls: FastFinish[]): Promise<Array<FastResult | null>> {
  const unique = distinct(calls);
  const now = new Date();
  const rows = await rawQuery<FastResult>(db, Prisma.sql`
    WITH p AS (
      SELECT * FROM unnest(${unique.map((c) => c.attemptId)}::text[], ${unique.map((c) => c.token)}::text[],
                           ${unique.map((c) => c.workerId)}::text[], ${unique.map((c) => c.credentialHash)}::text[],
                           ${unique.map((c) => c.reason)}::text[], ${unique.map((c) => c.exitCode)}::int[])
             AS p("attemptId", token, "workerId", hash, reason, "exitCode")
    ), a AS (
      SELECT a.id AS "attemptId", a."jobId", w.id AS "workerId", j."teamId", j.state, p.reason, p."exitCode"
        FROM p JOIN "JobAttempt" a ON a.id = p."attemptId" JOIN "Worker" w ON w.id = a."workerId" JOIN "Job" j ON j.id = a."jobId"
       WHERE a."fencingToken" = p.token::bigint AND a.state = 'ACTIVE' AND w.state <> 'REVOKED'
         AND (w.id = p."workerId" OR w."credentialHash" = p.hash)
    ), ended AS (
      UPDATE "JobAttempt" e SET state = 'ENDED', "endedAt" = ${now}, "exitReason" = 'succeeded: ' || a.reason, "exitCode" = a."exitCode"
        FROM a WHERE e.id = a."attemptId" AND e.state = 'ACTIVE'
      RETURNING e."jobId"
    ), job AS (
      UPDATE "Job" j SET state = 'SUCCEEDED', "finishedAt" = ${now}, "updatedAt" = ${now}
        FROM ended WHERE j.id = ended."jobId"
      RETURNING j.id
    ), event AS (
      INSERT INTO "JobEvent" ("jobId", "fromState", "toState", "actorType", "actorId", reason, at)
      SELECT a."jobId", a.state, 'SUCCEEDED'::"JobState", 'WORKER'::"ActorType", a."workerId", coalesce(nullif(a.reason, ''), 'finished'), ${now}
        FROM a JOIN job ON job.id = a."jobId"
    ), wake AS (
      SELECT pg_notify(${SCHEDULER_CHANNEL}, (SELECT count(*) FROM job) || ' jobs SUCCEEDED') WHERE EXISTS (SELECT 1 FROM job)
    )
    SELECT a."attemptId", a."jobId", a."teamId", EXISTS (SELECT 1 FROM job WHERE job.id = a."jobId") AS changed
      FROM a, (SELECT count(*) FROM wake) w`);
  return answerEach(calls, rows);
}

const shared = new WeakMap<Db, AttemptCalls>();

/** Start and finish for one database, shared by the HTTP and socket.io sides (their batches too). */
export function attemptCalls(db: Db, jobChanged: JobChanged): AttemptCalls {
  const known = shared.get(db);
  if (known) return known;
  const startFast = groupCommit((calls: FastCall[]) => startBatch(db, calls));
  const finishFast = groupCommit((calls: FastFinish[]) => finishSucceededBatch(db, calls));

  // A start still under way, by attempt: a finish of the same attempt waits for it, so that the
  // two are recorded in the order sent (an assignment's ack starts it, and a short job's finish
  // can follow at once on the same connection).
  const starting = new Map<string, Promise<unknown>>();

  const start: AttemptCalls['start'] = (ref, input) => {
    const started = startAttempt(ref, input);
    starting.set(input.attemptId, started);
    const settled = () => {
      if (starting.get(input.attemptId) === started) starting.delete(input.attemptId);
    };
    started.then(settled, settled);
    return started;
  };

  const startAttempt: AttemptCalls['start'] = async (ref, input) => {
    const call = fastCall(ref, input);
    const fast = call && (await startFast(call));
    if (fast) {
      if (fast.changed) jobChanged(fast.teamId, fast.jobId);
      return { state: 'RUNNING' };
    }
    const worker = await workerOf(db, ref);
    const attempt = await fencedAttempt(db, worker, input.attemptId, input.fencingToken);
    if (attempt.job.state === 'ASSIGNED') {
      await db.$transaction(async (tx) => {
        await tx.job.update({ where: { id: attempt.jobId }, data: { state: 'RUNNING', startedAt: attempt.job.startedAt ?? new Date() } });
        await recordEvent(tx, attempt.jobId, 'ASSIGNED', 'RUNNING', { type: 'WORKER', id: worker.id }, `attempt ${attempt.number} started on ${worker.name}`);
      });
      jobChanged(attempt.job.teamId, attempt.jobId);
    }
    return { state: 'RUNNING' };
  };

  const finish: AttemptCalls['finish'] = async (ref, input) => {
    await starting.get(input.attemptId)?.catch(() => undefined);
    const call = input.outcome === 'succeeded' ? fastCall(ref, input) : null;
    const fast = call && (await finishFast({ ...call, reason: input.reason, exitCode: input.exitCode }));
    if (fast?.changed) {
      jobChanged(fast.teamId, fast.jobId);
      return { state: 'SUCCEEDED' };
    }
    const worker = await workerOf(db, ref);
    const attempt = await fencedAttempt(db, worker, input.attemptId, input.fencingToken);
    const now = new Date();
    const actor = { type: 'WORKER' as const, id: worker.id };
    const from = attempt.job.state;
    const state = await db.$transaction(async (tx) => {
      await tx.jobAttempt.update({
        where: { id: attempt.id },
        data: { state: 'ENDED', endedAt: now, exitReason: `${input.outcome}: ${input.reason}`, exitCode: input.exitCode },
      });
      if (input.outcome === 'succeeded') {
        await tx.job.update({ where: { id: attempt.jobId }, data: { state: 'SUCCEEDED', finishedAt: now } });
        await recordEvent(tx, attempt.jobId, from, 'SUCCEEDED', actor, input.reason || 'finished');
        return 'SUCCEEDED';
      }
      if (input.outcome === 'cancelled' || attempt.job.cancelRequestedAt) {
        const state = stoppedState(attempt.job);
        await tx.job.update({ where: { id: attempt.jobId }, data: { state, finishedAt: now } });
        await recordEvent(tx, attempt.jobId, from, state, actor, attempt.job.failureReason ?? (input.reason || 'cancelled'));
        return state;
      }
      if (input.outcome === 'preempted') {
        await recordEvent(tx, attempt.jobId, from, 'PREEMPTED', actor, input.reason || 'checkpointed and stopped for a higher-priority job');
        await tx.job.update({ where: { id: attempt.jobId }, data: { state: 'QUEUED', queuedAt: now, notBefore: null } });
        await recordEvent(tx, attempt.jobId, 'PREEMPTED', 'QUEUED', { type: 'SCHEDULER' }, 'requeued after preemption; resumes from its last checkpoint');
        return 'QUEUED';
      }
      await tx.job.update({ where: { id: attempt.jobId }, data: { state: 'FAILED', finishedAt: now, failureReason: input.reason || `exit code ${input.exitCode}` } });
      await recordEvent(tx, attempt.jobId, from, 'FAILED', actor, input.reason || `exit code ${input.exitCode}`);
      return 'FAILED';
    });
    jobChanged(attempt.job.teamId, attempt.jobId);
    await notifyScheduler(db, `job ${attempt.jobId} ${state}`);
    return { state };
  };

  const calls = { start, finish };
  shared.set(db, calls);
  return calls;
}
