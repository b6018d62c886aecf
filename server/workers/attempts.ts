// Starting and finishing an attempt, whichever way the daemon calls: over its socket.io
// connection (socket.ts) or over HTTP (api.ts). They are a running pool's most frequent
// calls, so each is first tried as one group-committed statement that checks the worker and the
// fence and makes the change with its JobEvent; calls that arrive together share a statement.
// When that matches nothing, the full path says why (401, 404, 409) or handles the rarer case.
import { type z } from 'zod';
import type { finishRequestSchema, startRequestSchema } from '../../sdk/worker-protocol';
import { type Db, rawQuery } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import { groupCommit } from '../db/group-commit';
import { applySaveAs } from '../runs/bases';
import type { JobChanged } from '../scheduler/job-changes';
import { notifyScheduler, SCHEDULER_CHANNEL } from '../scheduler/notify';
import { endAttemptAndRequeue, recordEvent, stoppedState } from '../scheduler/transitions';
import { attemptFenced, fencingTokenOf, notYourAttempt, Refusal } from './refusal';

/** Who calls: a worker known by its connection (socket.io), or by its credential's hash (HTTP). */
type WorkerRef = { workerId: string } | { credentialHash: string };

type StartRequest = z.infer<typeof startRequestSchema>;
type FinishRequest = z.infer<typeof finishRequestSchema>;

export interface AttemptCalls {
  start(worker: WorkerRef, input: StartRequest): Promise<{ state: 'RUNNING' }>;
  finish(worker: WorkerRef, input: FinishRequest): Promise<{ state: string }>;
}

/** The worker a reference names, unless revoked (401). */
export async function workerOf(db: Db, ref: WorkerRef) {
  const worker = await db.worker.findUnique({ where: 'workerId' in ref ? { id: ref.workerId } : { credentialHash: ref.credentialHash } });
  if (!worker || worker.state === 'REVOKED') throw new Refusal(401, 'This worker was revoked or is unknown: register it again');
  return worker;
}

export type WorkerRow = Awaited<ReturnType<typeof workerOf>>;

/** The attempt a fenced write is about, if it is still this worker's current lease; else 404 or 409. */
export async function fencedAttempt(db: Db, worker: WorkerRow, attemptId: string, fencingToken: string) {
  const attempt = await db.jobAttempt.findUnique({ where: { id: attemptId }, include: { job: true } });
  if (!attempt || attempt.workerId !== worker.id) throw notYourAttempt();
  if (attempt.fencingToken.toString() !== fencingToken || attempt.state !== 'ACTIVE') throw attemptFenced();
  return attempt;
}

/** A call as the group-committed statements take it: the whole identity of the caller and its fence. */
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
  /** The call's position in its batch. */
  call: number;
  jobId: string;
  teamId: string;
  changed: boolean;
  /** The job config's `saveAs`, so that only a job that asks for a base costs a query after its finish. */
  saveAs?: string | null;
}

function fastCall(ref: WorkerRef, input: { attemptId: string; fencingToken: string }): FastCall | null {
  const token = fencingTokenOf(input.fencingToken);
  if (token === null) return null;
  return { attemptId: input.attemptId, token, workerId: 'workerId' in ref ? ref.workerId : null, credentialHash: 'credentialHash' in ref ? ref.credentialHash : null };
}

/**
 * The CTEs a batch statement starts with: `p`, its calls (numbered from 1, in order, and with
 * `extra` columns of their own); `a`, those whose worker is the attempt's, not revoked, and whose
 * fencing token is the active attempt's (each call is checked on its own: a stale token and a
 * current one for the same attempt in one batch get different answers); and `one`, one call of
 * `a` per attempt, for the writes (a call sent twice, or over both HTTP and socket.io, changes
 * the job and writes its event once).
 */
function fencedCalls(calls: FastCall[], extra: Array<[column: string, values: Prisma.Sql]> = []): Prisma.Sql {
  const columns: Array<[string, Prisma.Sql]> = [
    ['"attemptId"', Prisma.sql`${calls.map((c) => c.attemptId)}::text[]`],
    ['token', Prisma.sql`${calls.map((c) => c.token)}::text[]`],
    ['"byWorker"', Prisma.sql`${calls.map((c) => c.workerId)}::text[]`],
    ['"byHash"', Prisma.sql`${calls.map((c) => c.credentialHash)}::text[]`],
    ...extra,
  ];
  return Prisma.sql`
    p AS (
      SELECT * FROM unnest(${Prisma.join(columns.map(([, values]) => values))})
             WITH ORDINALITY AS p(${Prisma.raw(columns.map(([column]) => column).join(', '))}, call)
    ), a AS (
      SELECT p.*, a."jobId", a.number, w.id AS "workerId", w.name AS "workerName", j."teamId", j.state, j.config->>'saveAs' AS "saveAs"
        FROM p JOIN "JobAttempt" a ON a.id = p."attemptId" JOIN "Worker" w ON w.id = a."workerId" JOIN "Job" j ON j.id = a."jobId"
       WHERE a."fencingToken" = p.token::bigint AND a.state = 'ACTIVE' AND w.state <> 'REVOKED'
         AND (w.id = p."byWorker" OR w."credentialHash" = p."byHash")
    ), one AS (
      SELECT DISTINCT ON ("attemptId") * FROM a ORDER BY "attemptId", call
    )`;
}

/** Each call's row (by its position in the batch), or null: the full path then says why. */
function answerEach(calls: FastCall[], rows: FastResult[]): Array<FastResult | null> {
  const byCall = new Map(rows.map((r) => [r.call, r]));
  return calls.map((_, i) => byCall.get(i + 1) ?? null);
}

/** ASSIGNED → RUNNING for a batch of fenced starts, each with its JobEvent, in one statement. */
async function startBatch(db: Db, calls: FastCall[]): Promise<Array<FastResult | null>> {
  const now = new Date();
  const rows = await rawQuery<FastResult>(db, Prisma.sql`
    WITH ${fencedCalls(calls)}, job AS (
      UPDATE "Job" j SET state = 'RUNNING', "startedAt" = coalesce(j."startedAt", ${now}), "updatedAt" = ${now}
        FROM one WHERE j.id = one."jobId" AND j.state = 'ASSIGNED'
      RETURNING j.id
    ), event AS (
      INSERT INTO "JobEvent" ("jobId", "fromState", "toState", "actorType", "actorId", reason, at)
      SELECT one."jobId", 'ASSIGNED'::"JobState", 'RUNNING'::"JobState", 'WORKER'::"ActorType", one."workerId",
             'attempt ' || one.number || ' started on ' || one."workerName", ${now}
        FROM one JOIN job ON job.id = one."jobId"
    )
    SELECT a.call::int AS call, a."jobId", a."teamId", EXISTS (SELECT 1 FROM job WHERE job.id = a."jobId") AS changed FROM a`);
  return answerEach(calls, rows);
}

/** Succeeded attempts in one statement: each ended, its job SUCCEEDED with its event, and one scheduler wakeup. */
async function finishSucceededBatch(db: Db, calls: FastFinish[]): Promise<Array<FastResult | null>> {
  const now = new Date();
  const extra: Array<[string, Prisma.Sql]> = [
    ['reason', Prisma.sql`${calls.map((c) => c.reason)}::text[]`],
    ['"exitCode"', Prisma.sql`${calls.map((c) => c.exitCode)}::int[]`],
  ];
  const rows = await rawQuery<FastResult>(db, Prisma.sql`
    WITH ${fencedCalls(calls, extra)}, ended AS (
      UPDATE "JobAttempt" e SET state = 'ENDED', "endedAt" = ${now}, "exitReason" = 'succeeded: ' || one.reason, "exitCode" = one."exitCode"
        FROM one WHERE e.id = one."attemptId" AND e.state = 'ACTIVE'
      RETURNING e."jobId"
    ), job AS (
      UPDATE "Job" j SET state = 'SUCCEEDED', "finishedAt" = ${now}, "updatedAt" = ${now}
        FROM ended WHERE j.id = ended."jobId"
      RETURNING j.id
    ), event AS (
      INSERT INTO "JobEvent" ("jobId", "fromState", "toState", "actorType", "actorId", reason, at)
      SELECT one."jobId", one.state, 'SUCCEEDED'::"JobState", 'WORKER'::"ActorType", one."workerId", coalesce(nullif(one.reason, ''), 'finished'), ${now}
        FROM one JOIN job ON job.id = one."jobId"
    ), wake AS (
      SELECT pg_notify(${SCHEDULER_CHANNEL}, (SELECT count(*) FROM job) || ' jobs SUCCEEDED') WHERE EXISTS (SELECT 1 FROM job)
    )
    SELECT a.call::int AS call, a."jobId", a."teamId", a."saveAs", EXISTS (SELECT 1 FROM job WHERE job.id = a."jobId") AS changed
      FROM a, (SELECT count(*) FROM wake) w`);
  return answerEach(calls, rows);
}

/**
 * Start and finish for one database. Build one per server and hand it to both the HTTP and the
 * socket.io sides (realtime/gateway.ts does), so that their calls share batches and a finish
 * waits for a start sent the other way.
 */
export function createAttemptCalls(db: Db, jobChanged: JobChanged): AttemptCalls {
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

  // A succeeded run's `saveAs` names its checkpoint after the state is recorded: the run has
  // finished either way, so a problem here is logged and never turns into the worker's answer.
  const saveAs = async (jobId: string) => {
    try {
      await applySaveAs(db, jobId);
    } catch (e) {
      console.error(`[attempts] job ${jobId}: could not apply saveAs`, e);
    }
  };

  const finish: AttemptCalls['finish'] = async (ref, input) => {
    await starting.get(input.attemptId)?.catch(() => undefined);
    const call = input.outcome === 'succeeded' ? fastCall(ref, input) : null;
    const fast = call && (await finishFast({ ...call, reason: input.reason, exitCode: input.exitCode }));
    if (fast?.changed) {
      if (fast.saveAs) await saveAs(fast.jobId);
      jobChanged(fast.teamId, fast.jobId);
      return { state: 'SUCCEEDED' };
    }
    const worker = await workerOf(db, ref);
    const attempt = await fencedAttempt(db, worker, input.attemptId, input.fencingToken);
    const now = new Date();
    const actor = { type: 'WORKER' as const, id: worker.id };
    const from = attempt.job.state;
    if (input.outcome === 'lost') {
      const requeued = await db.$transaction((tx) => endAttemptAndRequeue(tx, attempt, `lost: ${input.reason || 'the device failed'}`, actor, now));
      jobChanged(attempt.job.teamId, attempt.jobId);
      await notifyScheduler(db, `job ${attempt.jobId} ${requeued}`);
      return { state: requeued };
    }
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
    if (state === 'SUCCEEDED' && (attempt.job.config as { saveAs?: unknown } | null)?.saveAs) await saveAs(attempt.jobId);
    jobChanged(attempt.job.teamId, attempt.jobId);
    await notifyScheduler(db, `job ${attempt.jobId} ${state}`);
    return { state };
  };

  return { start, finish };
}
