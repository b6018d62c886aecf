import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { type z } from 'zod';
import {
  checkpointQuerySchema,
  finishRequestSchema,
  heartbeatRequestSchema,
  registerRequestSchema,
  startRequestSchema,
  streamBatchSchema,
  BLOB_ROUTE,
  ENVIRONMENT_SECRETS_ROUTE,
  LEAVE_ROUTE,
  DEVICES_ROUTE,
  devicesRequestSchema,
  environmentSecretsRequestSchema,
  type HeartbeatAnswer,
} from '../../sdk/worker-protocol';
import { audit } from '../auth/audit';
import { hashSecret, newSecret } from '../auth/tokens';
import type { BlobStore } from '../blobs/store';
import { type Db, rawQuery } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import { notifyScheduler } from '../scheduler/notify';
import { endAttemptAndRequeue } from '../scheduler/transitions';
import { HEARTBEAT_SECONDS, LEASE_SECONDS } from '../scheduler/timing';
import { ingestBatch, type Publish } from '../streams/ingest';
import { type AttemptCalls, fencedAttempt, workerOf, type WorkerRow } from './attempts';
import { buildAssignments } from '../scheduler/assignments';
import { WORKER_CREDENTIAL_PREFIX } from './credentials';
import { fencingTokenOf, Refusal } from './refusal';
import { SIGN_IN_WINDOW_MINUTES } from '../auth/throttle';
import { manifestSecrets } from '../secrets/environment-secrets';
import { SecretUnreadable } from '../secrets/secret-box';

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
  /** Start and finish: the server's one instance, shared with the socket.io side (socket.ts). */
  attempts: AttemptCalls;
  /** Decrypts the team secrets a job's environment sends as headers (secrets/secret-box.ts). */
  secretsKey: Buffer;
}

/** A JSON answer (the worker and provider protocols'). */
export function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new Refusal(413, 'Request body too large');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new Refusal(413, 'Request body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** A request's JSON body, refused (413, 400) past `limit` bytes or when it is not JSON. */
export async function readJson(req: IncomingMessage, limit = MAX_JSON_BYTES): Promise<unknown> {
  const text = (await readBody(req, limit)).toString('utf8');
  try {
    return JSON.parse(text || 'null');
  } catch {
    throw new Refusal(400, 'Body is not JSON');
  }
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body);
  if (!result.success) throw new Refusal(400, 'Invalid request', result.error.issues);
  return result.data;
}

/** The hash of a request's `Authorization: Bearer wsw_…` credential; 401 when there is none. */
function credentialHash(authorization: string | undefined): string {
  const credential = /^Bearer\s+(wsw_\S+)$/.exec(authorization ?? '')?.[1];
  if (!credential || credential.length > 200) throw new Refusal(401, 'Missing worker credential');
  return hashSecret(credential);
}

/** The worker a request's `Authorization: Bearer wsw_…` belongs to, unless revoked. */
export async function authenticateWorker(db: Db, authorization: string | undefined) {
  return workerOf(db, { credentialHash: credentialHash(authorization) });
}

/** Failed registrations per address in a window, as sign-in limits failed passwords (auth/throttle.ts). */
const REGISTRATION_REFUSED = 'worker.registration_refused';
const MAX_REFUSED_REGISTRATIONS = 20;

async function register(deps: WorkerApiDeps, req: IncomingMessage) {
  const { db } = deps;
  const ip = req.socket.remoteAddress ?? null;
  const since = new Date(Date.now() - SIGN_IN_WINDOW_MINUTES * 60_000);
  if (ip && (await db.auditLog.count({ where: { action: REGISTRATION_REFUSED, ipAddress: ip, at: { gt: since } } })) >= MAX_REFUSED_REGISTRATIONS) {
    throw new Refusal(429, `Too many refused registrations from this address. Try again in ${SIGN_IN_WINDOW_MINUTES} minutes.`);
  }
  // The token first: a caller without a valid one learns nothing about what else the body lacks.
  const body = await readJson(req);
  const given = (body as { token?: unknown } | null)?.token;
  const token = typeof given === 'string' && given.length <= 200 ? await db.workerToken.findUnique({ where: { tokenHash: hashSecret(given) } }) : null;
  if (!token || token.revokedAt || (token.expiresAt && token.expiresAt < new Date())) {
    const named = body as { name?: unknown; hostname?: unknown } | null;
    await audit(db, { teamId: token?.teamId, action: REGISTRATION_REFUSED, details: { name: String(named?.name ?? '').slice(0, 100), hostname: String(named?.hostname ?? '').slice(0, 255) }, ipAddress: ip });
    throw new Refusal(401, 'The registration token is not valid (wrong, revoked or expired)');
  }
  const input = parse(registerRequestSchema, body);
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
  const leaseExpiresAt = new Date(now.getTime() + LEASE_SECONDS * 1000);
  const held = input.attempts.map((a) => a.attemptId);
  // One statement, as every worker sends one every few seconds: mark it alive (back ONLINE if it
  // was OFFLINE), renew the leases it still holds (its own, active, with the current fencing
  // token), and find the attempts placed on it that it does not know of yet.
  const [beat] = await rawQuery<{ state: HeartbeatAnswer['state']; renewed: Array<{ attemptId: string; cancel: boolean; preempt: boolean }>; pending: string[] }>(db, Prisma.sql`
    WITH beat AS (
      UPDATE "Worker" SET "lastHeartbeatAt" = ${now}, state = CASE WHEN state = 'OFFLINE' THEN 'ONLINE'::"WorkerState" ELSE state END
       WHERE id = ${worker.id}
      RETURNING state::text AS state
    ), renewed AS (
      UPDATE "JobAttempt" a SET "leaseExpiresAt" = ${leaseExpiresAt}
        FROM unnest(${held}::text[], ${input.attempts.map((a) => fencingTokenOf(a.fencingToken))}::text[]) AS h("attemptId", token), "Job" j
       WHERE a.id = h."attemptId" AND a."fencingToken" = h.token::bigint AND a."workerId" = ${worker.id} AND a.state = 'ACTIVE' AND j.id = a."jobId"
      RETURNING a.id, j."cancelRequestedAt" IS NOT NULL AS cancel, a."preemptRequestedAt" IS NOT NULL AS preempt
    )
    SELECT (SELECT state FROM beat) AS state,
           coalesce((SELECT json_agg(json_build_object('attemptId', id, 'cancel', cancel, 'preempt', preempt)) FROM renewed), '[]') AS renewed,
           array(SELECT a.id FROM "JobAttempt" a JOIN "Job" j ON j.id = a."jobId"
                  WHERE a."workerId" = ${worker.id} AND a.state = 'ACTIVE' AND j.state = 'ASSIGNED' AND a.id <> ALL(${held}::text[])) AS pending`);
  if (worker.state === 'OFFLINE') await notifyScheduler(db, `worker ${worker.id} back online`);
  const renewed = new Map(beat.renewed.map((r) => [r.attemptId, r]));
  const leases = input.attempts.map(({ attemptId }) => {
    const lease = renewed.get(attemptId);
    return { attemptId, valid: Boolean(lease), leaseExpiresAt: lease ? leaseExpiresAt.toISOString() : null, cancel: lease?.cancel ?? false, preempt: lease?.preempt ?? false };
  });
  const assignments = await buildAssignments(db, beat.pending);
  return { workerId: worker.id, state: beat.state, leases, assignments, heartbeatSeconds: HEARTBEAT_SECONDS };
}

/**
 * The daemon is exiting (sdk/worker-protocol.ts, LEAVE_ROUTE): OFFLINE now, and its attempts still
 * active (placed while it drained, or not stopped in time) go back to the queue. Their end is no
 * fault of the job's, so it counts as a preemption, not a lost attempt.
 */
async function leave(deps: WorkerApiDeps, worker: WorkerRow) {
  const { db } = deps;
  const now = new Date();
  await db.worker.updateMany({ where: { id: worker.id, state: { in: ['ONLINE', 'DRAINING'] } }, data: { state: 'OFFLINE' } });
  const active = await db.jobAttempt.findMany({ where: { workerId: worker.id, state: 'ACTIVE' }, select: { id: true, jobId: true, number: true } });
  for (const a of active) await db.$transaction((tx) => endAttemptAndRequeue(tx, a, 'preempted: its worker left', { type: 'WORKER', id: worker.id }, now));
  await notifyScheduler(db, `worker ${worker.id} left`);
  return { ok: true, requeued: active.length };
}

/**
 * The worker's devices as it probed them again (DEVICES_ROUTE): those gone are removed, the rest
 * written as given, and the scheduler woken. A job still holding a device that is gone has ended
 * or ends with its own outcome (a lost device requeues it); nothing is placed on it any more.
 */
async function advertiseDevices(deps: WorkerApiDeps, worker: WorkerRow, req: IncomingMessage) {
  const { db } = deps;
  const input = parse(devicesRequestSchema, await readJson(req));
  await db.$transaction(async (tx) => {
    await tx.workerDevice.deleteMany({ where: { workerId: worker.id, index: { notIn: input.devices.map((d) => d.index) } } });
    for (const d of input.devices) {
      const fields = { kind: d.kind, name: d.name, memoryBytes: BigInt(d.memoryBytes) };
      await tx.workerDevice.upsert({ where: { workerId_index: { workerId: worker.id, index: d.index } }, update: fields, create: { workerId: worker.id, index: d.index, ...fields } });
    }
    await tx.worker.update({ where: { id: worker.id }, data: { backend: input.backend } });
    await notifyScheduler(tx, `worker ${worker.id} advertised its devices`);
  });
  return { devices: input.devices.length };
}

/** Start and finish check the credential themselves, in the statement that makes the change (attempts.ts). */
async function start(deps: WorkerApiDeps, req: IncomingMessage) {
  const hash = credentialHash(req.headers.authorization);
  const input = await parseAuthenticated(deps.db, req, startRequestSchema);
  return deps.attempts.start({ credentialHash: hash }, input);
}

async function finish(deps: WorkerApiDeps, req: IncomingMessage) {
  const hash = credentialHash(req.headers.authorization);
  const input = await parseAuthenticated(deps.db, req, finishRequestSchema);
  return deps.attempts.finish({ credentialHash: hash }, input);
}

/**
 * The request's body, parsed; an invalid one is refused as before only once the credential
 * checks out (an unknown worker learns nothing about the body it sent).
 */
async function parseAuthenticated<T>(db: Db, req: IncomingMessage, schema: z.ZodType<T>): Promise<T> {
  const result = schema.safeParse(await readJson(req));
  if (result.success) return result.data;
  await authenticateWorker(db, req.headers.authorization);
  throw new Refusal(400, 'Invalid request', result.error.issues);
}

/** The HTTP way to stream (daemons use their socket.io connection when it is up: socket.ts). */
async function stream(deps: WorkerApiDeps, worker: WorkerRow, req: IncomingMessage) {
  const batch = parse(streamBatchSchema, await readJson(req));
  const result = await ingestBatch(deps.db, worker.id, batch, deps.publish);
  return { accepted: !result.duplicate, duplicate: result.duplicate };
}

async function uploadCheckpoint(deps: WorkerApiDeps, worker: WorkerRow, req: IncomingMessage, url: URL) {
  const query = parse(checkpointQuerySchema, Object.fromEntries(url.searchParams));
  const attempt = await fencedAttempt(deps.db, worker, query.attemptId, query.fencingToken);
  const data = await readBody(req, MAX_CHECKPOINT_BYTES);
  if (data.length === 0) throw new Refusal(400, 'Empty checkpoint');
  const stored = await deps.blobs.put(data, 'checkpoints');
  // The metrics of that step travel with the checkpoint, for listing and choosing one later.
  const metrics = await deps.db.metricPoint.findMany({ where: { jobId: attempt.jobId, step: query.step }, select: { key: true, value: true } });
  // Keyed by the writer, not the bytes: a job whose checkpoint equals another job's (same template,
  // seed and config) gets a row of its own, and never another team's. A retried upload finds its own.
  const checkpoint = await deps.db.checkpoint.upsert({
    where: { jobId_attemptId_kind_step_agent: { jobId: attempt.jobId, attemptId: attempt.id, kind: query.kind, step: query.step, agent: query.agent ?? '' } },
    update: {},
    create: {
      teamId: attempt.job.teamId, jobId: attempt.jobId, experimentId: attempt.job.experimentId, attemptId: attempt.id,
      kind: query.kind, step: query.step, agent: query.agent ?? '', storageKey: stored.key, bytes: BigInt(stored.bytes), sha256: stored.sha256,
      isAdapter: query.adapter === '1', metrics: Object.fromEntries(metrics.map((m) => [m.key, m.value])) as Prisma.InputJsonObject,
    },
  });
  return { checkpointId: checkpoint.id, storageKey: checkpoint.storageKey };
}

/**
 * The team secrets the attempt's environment names in its headers: only to the worker holding the
 * attempt (fenced), only the names its manifest uses, and of the job's own team.
 */
async function attemptSecrets(deps: WorkerApiDeps, worker: WorkerRow, req: IncomingMessage) {
  const input = parse(environmentSecretsRequestSchema, await readJson(req));
  const attempt = await fencedAttempt(deps.db, worker, input.attemptId, input.fencingToken);
  const versionId = (attempt.job.config as { environmentVersionId?: unknown } | null)?.environmentVersionId;
  if (typeof versionId !== 'string') return { secrets: {} };
  const version = await deps.db.environmentVersion.findFirst({ where: { id: versionId, environment: { teamId: attempt.job.teamId } }, select: { manifest: true } });
  try {
    return { secrets: version ? await manifestSecrets(deps.db, deps.secretsKey, attempt.job.teamId, version.manifest) : {} };
  } catch (error) {
    if (error instanceof SecretUnreadable) throw new Refusal(422, error.message);
    throw error;
  }
}

/** A blob a worker may read: a checkpoint, dataset or model file of a team whose job it is running. */
async function readBlob(deps: WorkerApiDeps, worker: WorkerRow, res: ServerResponse, key: string) {
  const active = await deps.db.jobAttempt.findMany({ where: { workerId: worker.id, state: 'ACTIVE' }, select: { job: { select: { teamId: true } } } });
  const teams = [...new Set(active.map((a) => a.job.teamId))];
  const allowed =
    (await deps.db.checkpoint.count({ where: { storageKey: key, teamId: { in: teams } } })) > 0 ||
    (await deps.db.datasetVersion.count({ where: { storageKey: key, dataset: { teamId: { in: teams } } } })) > 0 ||
    (await deps.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM "PretrainedModel" WHERE "teamId" = ANY(${teams}::text[]) AND files @> ${JSON.stringify([{ storageKey: key }])}::jsonb`)[0].n > 0n;
  if (!allowed) throw new Refusal(404, 'No such blob for this worker');
  // Streamed: a model's weights are gigabytes.
  const { size } = await deps.blobs.stat(key);
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size, 'cache-control': 'no-store' });
  await pipeline(deps.blobs.stream(key), res);
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
    if (req.method !== 'POST') throw new Refusal(405, 'Method not allowed');
    if (path === '/api/workers/heartbeat') return send(res, 200, await heartbeat(deps, worker, req));
    if (path === '/api/workers/stream') return send(res, 200, await stream(deps, worker, req));
    if (path === ENVIRONMENT_SECRETS_ROUTE) return send(res, 200, await attemptSecrets(deps, worker, req));
    if (path === LEAVE_ROUTE) return send(res, 200, await leave(deps, worker));
    if (path === DEVICES_ROUTE) return send(res, 200, await advertiseDevices(deps, worker, req));
    throw new Refusal(404, `No route ${path}`);
  } catch (error) {
    if (error instanceof Refusal) return send(res, error.status, { error: error.message, issues: error.details });
    throw error;
  }
}
