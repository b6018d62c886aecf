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
import { notifyScheduler } from '../scheduler/loop';
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

/** The worker a request's `Authorization: Bearer wsw_…` belongs to, unless revoked. */
export async function authenticateWorker(db: Db, authorization: string | undefined) {
  const credential = /^Bearer\s+(wsw_\S+)$/.exec(authorization ?? '')?.[1];
  if (!credential || credential.length > 200) throw new HttpError(401, 'Missing worker credential');
  const worker = await db.worker.findUnique({ where: { credentialHash: hashSecret(credential) } });
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
  const attempt = await db.jobAttempt.findUnique({ where: { id: attemptId }, include: { job: true, resumedFrom: true } });
  if (!attempt || attempt.state !== 'ACTIVE') return null;
  const config = attempt.job.config as Record<string, unknown>;
  const versionId = typeof config.environmentVersionId === 'string' ? config.environmentVersionId : null;
  const version = versionId ? await db.environmentVersion.findUnique({ where: { id: versionId } }) : null;
  // The config names checkpoints and datasets by id; the worker fetches blobs by storage key.
  const blobKeys: Record<string, string> = {};
  const against = config.against as { checkpointId?: unknown } | undefined;
  const checkpointIds = [config.baseCheckpointId, config.checkpointId, against?.checkpointId].filter((id): id is string => typeof id === 'string');
  for (const c of await db.checkpoint.findMany({ where: { id: { in: checkpointIds }, teamId: attempt.job.teamId } })) blobKeys[c.id] = c.storageKey;
  if (typeof config.datasetVersionId === 'string') {
    const d = await db.datasetVersion.findFirst({ where: { id: config.datasetVersionId, dataset: { teamId: attempt.job.teamId } } });
    if (d) blobKeys[d.id] = d.storageKey;
  }
  return {
    attemptId: attempt.id,
    fencingToken: attempt.fencingToken.toString(),
    jobId: attempt.jobId,
    attempt: attempt.number,
    kind: attempt.job.kind,
    config,
    deviceIndexes: attempt.deviceIndexes,
    leaseExpiresAt: attempt.leaseExpiresAt.toISOString(),
    timeLimitSeconds: attempt.job.timeLimitSeconds,
    resumeFrom: attempt.resumedFrom ? { checkpointId: attempt.resumedFrom.id, storageKey: attempt.resumedFrom.storageKey, step: attempt.resumedFrom.step } : null,
    environment: version
      ? { versionId: version.id, files: version.files as Record<string, string>, entry: version.entry, manifest: version.manifest as Record<string, unknown> }
      : null,
    blobKeys,
  };
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
  const assignments = [];
  for (const { id } of pending) {
    if (known.has(id)) continue;
    const assignment = await buildAssignment(db, id);
    if (assignment) assignments.push(assignment);
  }
  return { workerId: worker.id, state: updated.state, leases, assignments, heartbeatSeconds: HEARTBEAT_SECONDS };
}

async function start(deps: WorkerApiDeps, worker: WorkerRow, req: IncomingMessage) {
  const input = parse(startRequestSchema, await readJson(req));
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

async function finish(deps: WorkerApiDeps, worker: WorkerRow, req: IncomingMessage) {
  const { db } = deps;
  const input = parse(finishRequestSchema, await readJson(req));
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
    const worker = await authenticateWorker(deps.db, req.headers.authorization);
    if (req.method === 'GET' && path.startsWith(BLOB_ROUTE)) return await readBlob(deps, worker, res, decodeURIComponent(path.slice(BLOB_ROUTE.length)));
    if (req.method === 'PUT' && path === '/api/workers/checkpoints') return send(res, 201, await uploadCheckpoint(deps, worker, req, url));
    if (req.method !== 'POST') throw new HttpError(405, 'Method not allowed');
    if (path === '/api/workers/heartbeat') return send(res, 200, await heartbeat(deps, worker, req));
    if (path === '/api/workers/attempts/start') return send(res, 200, await start(deps, worker, req));
    if (path === '/api/workers/attempts/finish') return send(res, 200, await finish(deps, worker, req));
    if (path === '/api/workers/stream') return send(res, 200, await stream(deps, worker, req));
    throw new HttpError(404, `No route ${path}`);
  } catch (error) {
    if (error instanceof HttpError) return send(res, error.status, { error: error.message, issues: error.details });
    throw error;
  }
}
