import type { IncomingMessage, ServerResponse } from 'node:http';
import { type z } from 'zod';
import {
  checkpointQuerySchema,
  finishRequestSchema,
  heartbeatRequestSchema,
  registerRequestSchema,
  startRequestSchema,
  streamBatchSchema,
  BLOB_ROUTE,
  type Assignment,
} from '../../sdk/worker-protocol';
import { audit } from '../auth/audit';
import { hashSecret, newSecret } from '../auth/tokens';
import type { BlobStore } from '../blobs/store';
import type { Db } from '../db/client';
import type { Prisma } from '../db/generated/prisma/client';
import { notifyScheduler, SCHEDULER_CHANNEL } from '../scheduler/loop';
import { HEARTBEAT_SECONDS, LEASE_SECONDS } from '../scheduler/timing';
import { recordEvent, stoppedState } from '../scheduler/transitions';
import { ingestBatch, StreamRefused, type Publish } from '../streams/ingest';
import { WORKER_CREDENTIAL_PREFIX } from './credentials';

// The worker protocol's HTTP side (sdk/worker-protocol.ts). A daemon registers with a pool's
// registration token and gets a credential of its own, which it presents on every later call.
// Every write about a job carries the attempt's fencing token; a stale one gets 409.

const MAX_JSON_BYTES = 8_000_000;
const MAX_CHECKPOINT_BYTES = 2 * 1024 ** 3;

export interface WorkerApiDeps {
  db: Db;
  blobs: BlobStore;
  /** Fans a stream batch out to the run's watchers. */
  publish: Publish;
  /** A job changed state (for live job lists). */
  jobChanged: (teamId: string, jobId: string) => void;
}

export class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly details?: unknown) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new HttpError(413, 'Request body too large');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new HttpError(413, 'Request body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const text = (await readBody(req, MAX_JSON_BYTES)).toString('utf8');
  try {
    return JSON.parse(text || 'null');
  } catch {
    throw new HttpError(400, 'Body is not JSON');
  }
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body);
  if (!result.success) throw new HttpError(400, 'Invalid request', result.error.issues);
  return result.data;
}

/** The hash of a request's `Authorization: Bearer wsw_…` credential; 401 when there is none. */
function credentialHash(authorization: string | undefined): string {
  const credential = /^Bearer\s+(wsw_\S+)$/.exec(authorization ?? '')?.[1];
  if (!credential || credential.length > 200) throw new HttpError(401, 'Missing worker credential');
  return hashSecret(credential);
}

/** The worker a request's `Authorization: Bearer wsw_…` belongs to, unless revoked. */
export async function authenticateWorker(db: Db, authorization: string | undefined) {
  const hash = credentialHash(authorization);
  const worker = await db.worker.findUnique({ where: { credentialHash: hash } });
  if (!worker || worker.state === 'REVOKED') throw new HttpError(401, 'This worker was revoked or is unknown: register it again');
  return worker;
}

type WorkerRow = Awaited<ReturnType<typeof authenticateWorker>>;

/** The attempt a fenced write is about, if it is still this worker's current lease; else 409. */
async function fencedAttempt(db: Db, worker: WorkerRow, attemptId: string, fencingToken: string) {
  const attempt = await db.jobAttempt.findUnique({ where: { id: attemptId }, include: { job: true } });
  if (!attempt || attempt.workerId !== worker.id) throw new HttpError(404, 'No such attempt on this worker');
  if (attempt.fencingToken.toString() !== fencingToken || attempt.state !== 'ACTIVE') {
    throw new HttpError(409, 'This attempt no longer holds the job (lease lost or superseded): stop it and write nothing more');
  }
  return attempt;
}

export async function buildAssignment(db: Db, attemptId: string): Promise<Assignment | null> {
  return (await buildAssignments(db, [attemptId]))[0] ?? null;
}

interface AssignmentRow {
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
 * The assignments of active attempts (those no longer active are left out), in one statement for
 * any number of them (a scheduling round places many at once), plus a lookup for the few configs
 * that name checkpoints or datasets.
 */
export async function buildAssignments(db: Db, attemptIds: string[]): Promise<Assignment[]> {
  if (attemptIds.length === 0) return [];
  const rows = await db.$queryRaw<AssignmentRow[]>`
    SELECT a.id, a."fencingToken"::text AS "fencingToken", a."jobId", a.number, a."deviceIndexes",
           to_char(a."leaseExpiresAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "leaseExpiresAt",
           j.kind::text AS kind, j.config, j."timeLimitSeconds", j."teamId",
           CASE WHEN c.id IS NULL THEN NULL ELSE json_build_object('checkpointId', c.id, 'storageKey', c."storageKey", 'step', c.step) END AS "resumeFrom",
           CASE WHEN v.id IS NULL THEN NULL ELSE json_build_object('versionId', v.id, 'files', v.files, 'entry', v.entry, 'manifest', v.manifest) END AS environment
      FROM "JobAttempt" a
      JOIN "Job" j ON j.id = a."jobId"
      LEFT JOIN "Checkpoint" c ON c.id = a."resumedFromId"
      LEFT JOIN "EnvironmentVersion" v
             ON jsonb_typeof(j.config -> 'environmentVersionId') = 'string' AND v.id = j.config ->> 'environmentVersionId'
     WHERE a.id = ANY(${attemptIds}::text[]) AND a.state = 'ACTIVE'`;
  const order = new Map(attemptIds.map((id, i) => [id, i]));
  rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
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

async function register(deps: WorkerApiDeps, req: IncomingMessage) {
  const { db } = deps;
  const input = parse(registerRequestSchema, await readJson(req));
  const token = await db.workerToken.findUnique({ where: { tokenHash: hashSecret(input.token) } });
  if (!token || token.revokedAt || (token.expiresAt && token.expiresAt < new Date())) {
    await audit(db, { teamId: token?.teamId, action: 'worker.registration_refused', details: { name: input.name, hostname: input.hostname }, ipAddress: req.socket.remoteAddress });
    throw new HttpError(401, 'The registration token is not valid (wrong, revoked or expired)');
  }
  const credential = `${WORKER_CREDENTIAL_PREFIX}${newSecret()}`;
  const worker = await db.worker.create({
    data: {
      teamId: token.teamId, tokenId: token.id, name: input.name, hostname: input.hostname, backend: input.backend,
      version: input.version, labels: input.labels, credentialHash: hashSecret(credential),
      devices: { create: input.devices.map((d) => ({ ...d, memoryBytes: BigInt(d.memoryBytes) })) },
    },
  });
  await audit(db, { teamId: token.teamId, action: 'worker.registered', targetType: 'worker', targetId: worker.id, details: { name: input.name, hostname: input.hostname, token: token.prefix }, ipAddress: req.socket.remoteAddress });
  await notifyScheduler(db, `worker ${worker.id} registered`);
  return { workerId: worker.id, credential, pool: token.teamId ? 'team' : 'shared' };
}

/** Renews leases of the attempts the worker says it runs, and hands out attempts not yet started. */
async function heartbeat(deps: WorkerApiDeps, worker: WorkerRow, req: IncomingMessage) {
  const { db } = deps;
  const input = parse(heartbeatRequestSchema, await readJson(req));
  const now = new Date();
  const cameBack = worker.state === 'OFFLINE';
  const updated = await db.worker.update({
    where: { id: worker.id },
    data: { lastHeartbeatAt: now, ...(cameBack ? { state: 'ONLINE' } : {}) },
  });
  if (cameBack) await notifyScheduler(db, `worker ${worker.id} back online`);
  const leaseExpiresAt = new Date(now.getTime() + LEASE_SECONDS * 1000);
  const leases = [];
  for (const { attemptId, fencingToken } of input.attempts) {
    // Renew only a lease that is still this worker's, in one guarded statement.
    const renewed = await db.jobAttempt.updateMany({
      where: { id: attemptId, workerId: worker.id, state: 'ACTIVE', fencingToken: BigInt(/^\d{1,19}$/.test(fencingToken) ? fencingToken : '0') },
      data: { leaseExpiresAt },
    });
    const attempt = renewed.count ? await db.jobAttempt.findUnique({ where: { id: attemptId }, include: { job: true } }) : null;
    leases.push({
      attemptId,
      valid: Boolean(attempt),
      leaseExpiresAt: attempt ? leaseExpiresAt.toISOString() : null,
      cancel: Boolean(attempt?.job.cancelRequestedAt),
      preempt: Boolean(attempt?.preemptRequestedAt),
    });
  }
  const known = new Set(input.attempts.map((a) => a.attemptId));
  const pending = await db.jobAttempt.findMany({ where: { workerId: worker.id, state: 'ACTIVE', job: { state: 'ASSIGNED' } }, select: { id: true } });
  const assignments = await buildAssignments(db, pending.map((a) => a.id).filter((id) => !known.has(id)));
  return { workerId: worker.id, state: updated.state, leases, assignments, heartbeatSeconds: HEARTBEAT_SECONDS };
}

/**
 * Start and finish (succeeded) are a running daemon's most frequent calls: each is first tried as
 * one statement that checks the credential and the fence and makes the change with its JobEvent.
 * When that matches nothing, the full path below says why (401, 404, 409) or handles the case.
 */
interface FastResult {
  jobId: string;
  teamId: string;
  changed: boolean;
}

/** A fencing token as the column's bigint, or null when it cannot be one (the full path answers 409). */
function tokenOf(fencingToken: string): bigint | null {
  return /^\d{1,19}$/.test(fencingToken) ? BigInt(fencingToken) : null;
}

async function startFast(db: Db, hash: string, input: { attemptId: string; fencingToken: string }): Promise<FastResult | null> {
  const token = tokenOf(input.fencingToken);
  if (token === null) return null;
  const now = new Date();
  const rows = await db.$queryRaw<FastResult[]>`
    WITH a AS (
      SELECT a."jobId", a.number, w.id AS "workerId", w.name AS "workerName", j."teamId"
        FROM "JobAttempt" a JOIN "Worker" w ON w.id = a."workerId" JOIN "Job" j ON j.id = a."jobId"
       WHERE a.id = ${input.attemptId} AND a."fencingToken" = ${token} AND a.state = 'ACTIVE'
         AND w."credentialHash" = ${hash} AND w.state <> 'REVOKED'
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
    SELECT a."jobId", a."teamId", EXISTS (SELECT 1 FROM job) AS changed FROM a`;
  return rows[0] ?? null;
}

async function start(deps: WorkerApiDeps, req: IncomingMessage) {
  const hash = credentialHash(req.headers.authorization);
  const input = await parseAuthenticated(deps.db, req, startRequestSchema);
  const fast = await startFast(deps.db, hash, input);
  if (fast) {
    if (fast.changed) deps.jobChanged(fast.teamId, fast.jobId);
    return { state: 'RUNNING' };
  }
  const worker = await authenticateWorker(deps.db, req.headers.authorization);
  const attempt = await fencedAttempt(deps.db, worker, input.attemptId, input.fencingToken);
  if (attempt.job.state === 'ASSIGNED') {
    await deps.db.$transaction(async (tx) => {
      await tx.job.update({ where: { id: attempt.jobId }, data: { state: 'RUNNING', startedAt: attempt.job.startedAt ?? new Date() } });
      await recordEvent(tx, attempt.jobId, 'ASSIGNED', 'RUNNING', { type: 'WORKER', id: worker.id }, `attempt ${attempt.number} started on ${worker.name}`);
    });
    deps.jobChanged(attempt.job.teamId, attempt.jobId);
  }
  return { state: 'RUNNING' };
}

/**
 * The request's body, parsed; an invalid one is refused as before only once the credential
 * checks out (an unknown worker learns nothing about the body it sent).
 */
async function parseAuthenticated<T>(db: Db, req: IncomingMessage, schema: z.ZodType<T>): Promise<T> {
  const result = schema.safeParse(await readJson(req));
  if (result.success) return result.data;
  await authenticateWorker(db, req.headers.authorization);
  throw new HttpError(400, 'Invalid request', result.error.issues);
}

/** A succeeded attempt in one statement: end it, the job SUCCEEDED, its event, and the scheduler's wakeup. */
async function finishSucceededFast(db: Db, hash: string, input: z.infer<typeof finishRequestSchema>): Promise<FastResult | null> {
  const token = tokenOf(input.fencingToken);
  if (token === null) return null;
  const now = new Date();
  const rows = await db.$queryRaw<FastResult[]>`
    WITH a AS (
      SELECT a.id, a."jobId", w.id AS "workerId", j."teamId", j.state
        FROM "JobAttempt" a JOIN "Worker" w ON w.id = a."workerId" JOIN "Job" j ON j.id = a."jobId"
       WHERE a.id = ${input.attemptId} AND a."fencingToken" = ${token} AND a.state = 'ACTIVE'
         AND w."credentialHash" = ${hash} AND w.state <> 'REVOKED'
    ), ended AS (
      UPDATE "JobAttempt" e SET state = 'ENDED', "endedAt" = ${now}, "exitReason" = ${`succeeded: ${input.reason}`}, "exitCode" = ${input.exitCode}
        FROM a WHERE e.id = a.id AND e.state = 'ACTIVE'
      RETURNING e."jobId"
    ), job AS (
      UPDATE "Job" j SET state = 'SUCCEEDED', "finishedAt" = ${now}, "updatedAt" = ${now}
        FROM ended WHERE j.id = ended."jobId"
      RETURNING j.id
    ), event AS (
      INSERT INTO "JobEvent" ("jobId", "fromState", "toState", "actorType", "actorId", reason, at)
      SELECT a."jobId", a.state, 'SUCCEEDED'::"JobState", 'WORKER'::"ActorType", a."workerId", ${input.reason || 'finished'}, ${now}
        FROM a JOIN job ON job.id = a."jobId"
    ), wake AS (
      SELECT pg_notify(${SCHEDULER_CHANNEL}, 'job ' || id || ' SUCCEEDED') FROM job
    )
    SELECT a."jobId", a."teamId", (SELECT count(*) FROM wake) > 0 AS changed FROM a`;
  return rows[0]?.changed ? rows[0] : null;
}

async function finish(deps: WorkerApiDeps, req: IncomingMessage) {
  const { db } = deps;
  const hash = credentialHash(req.headers.authorization);
  const input = await parseAuthenticated(db, req, finishRequestSchema);
  if (input.outcome === 'succeeded') {
    const fast = await finishSucceededFast(db, hash, input);
    if (fast) {
      deps.jobChanged(fast.teamId, fast.jobId);
      return { state: 'SUCCEEDED' };
    }
  }
  const worker = await authenticateWorker(db, req.headers.authorization);
  const attempt = await fencedAttempt(db, worker, input.attemptId, input.fencingToken);
  const now = new Date();
  const actor = { type: 'WORKER' as const, id: worker.id };
  const from = attempt.job.state;
  const state = await db.$transaction(async (tx) => {
    await tx.jobAttempt.update({
      where: { id: attempt.id },
      data: { state: 'ENDED', endedAt: now, exitReason: input.outcome === 'preempted' ? `preempted: ${input.reason}` : `${input.outcome}: ${input.reason}`, exitCode: input.exitCode },
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
  deps.jobChanged(attempt.job.teamId, attempt.jobId);
  await notifyScheduler(db, `job ${attempt.jobId} ${state}`);
  return { state };
}

/** The HTTP way to stream (daemons use their socket.io connection when it is up: realtime/gateway.ts). */
async function stream(deps: WorkerApiDeps, worker: WorkerRow, req: IncomingMessage) {
  const batch = parse(streamBatchSchema, await readJson(req));
  try {
    const result = await ingestBatch(deps.db, worker.id, batch, deps.publish);
    return { accepted: !result.duplicate, duplicate: result.duplicate };
  } catch (error) {
    if (error instanceof StreamRefused) throw new HttpError(error.status, error.message);
    throw error;
  }
}

async function uploadCheckpoint(deps: WorkerApiDeps, worker: WorkerRow, req: IncomingMessage, url: URL) {
  const query = parse(checkpointQuerySchema, Object.fromEntries(url.searchParams));
  const attempt = await fencedAttempt(deps.db, worker, query.attemptId, query.fencingToken);
  const data = await readBody(req, MAX_CHECKPOINT_BYTES);
  if (data.length === 0) throw new HttpError(400, 'Empty checkpoint');
  const stored = await deps.blobs.put(data, 'checkpoints');
  // The metrics of that step travel with the checkpoint, for listing and choosing one later.
  const metrics = await deps.db.metricPoint.findMany({ where: { jobId: attempt.jobId, step: query.step }, select: { key: true, value: true } });
  const checkpoint = await deps.db.checkpoint.upsert({
    where: { storageKey: stored.key },
    update: {},
    create: {
      teamId: attempt.job.teamId, jobId: attempt.jobId, experimentId: attempt.job.experimentId, attemptId: attempt.id,
      kind: query.kind, step: query.step, storageKey: stored.key, bytes: BigInt(stored.bytes), sha256: stored.sha256,
      isAdapter: query.adapter === '1', metrics: Object.fromEntries(metrics.map((m) => [m.key, m.value])) as Prisma.InputJsonObject,
    },
  });
  return { checkpointId: checkpoint.id, storageKey: stored.key };
}

/** A blob a worker may read: a checkpoint or dataset of a team whose job it is running. */
async function readBlob(deps: WorkerApiDeps, worker: WorkerRow, res: ServerResponse, key: string) {
  const active = await deps.db.jobAttempt.findMany({ where: { workerId: worker.id, state: 'ACTIVE' }, select: { job: { select: { teamId: true } } } });
  const teams = [...new Set(active.map((a) => a.job.teamId))];
  const allowed =
    (await deps.db.checkpoint.count({ where: { storageKey: key, teamId: { in: teams } } })) > 0 ||
    (await deps.db.datasetVersion.count({ where: { storageKey: key, dataset: { teamId: { in: teams } } } })) > 0;
  if (!allowed) throw new HttpError(404, 'No such blob for this worker');
  const data = await deps.blobs.get(key);
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': data.length, 'cache-control': 'no-store' });
  res.end(data);
}

export async function handleWorkerApi(deps: WorkerApiDeps, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  try {
    const path = url.pathname;
    if (path === '/api/workers/register' && req.method === 'POST') return send(res, 201, await register(deps, req));
    // These two check the credential themselves, in the statement that makes the change.
    if (path === '/api/workers/attempts/start' && req.method === 'POST') return send(res, 200, await start(deps, req));
    if (path === '/api/workers/attempts/finish' && req.method === 'POST') return send(res, 200, await finish(deps, req));
    const worker = await authenticateWorker(deps.db, req.headers.authorization);
    if (req.method === 'GET' && path.startsWith(BLOB_ROUTE)) return await readBlob(deps, worker, res, decodeURIComponent(path.slice(BLOB_ROUTE.length)));
    if (req.method === 'PUT' && path === '/api/workers/checkpoints') return send(res, 201, await uploadCheckpoint(deps, worker, req, url));
    if (req.method !== 'POST') throw new HttpError(405, 'Method not allowed');
    if (path === '/api/workers/heartbeat') return send(res, 200, await heartbeat(deps, worker, req));
    if (path === '/api/workers/stream') return send(res, 200, await stream(deps, worker, req));
    throw new HttpError(404, `No route ${path}`);
  } catch (error) {
    if (error instanceof HttpError) return send(res, error.status, { error: error.message, issues: error.details });
    throw error;
  }
}
