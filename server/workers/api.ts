import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { audit } from '../auth/audit';
import { hashSecret, newSecret } from '../auth/tokens';
import type { Db } from '../db/client';
import { WORKER_CREDENTIAL_PREFIX, WORKER_TOKEN_PREFIX } from './credentials';

// The worker protocol's HTTP side. A daemon registers with a pool's registration token and gets
// a credential of its own, which it presents on every later call.

const MAX_BODY_BYTES = 64_000;

const registerInput = z.object({
  token: z.string().startsWith(WORKER_TOKEN_PREFIX).max(200),
  name: z.string().trim().min(1).max(100),
  hostname: z.string().trim().min(1).max(255),
  backend: z.string().min(1).max(40),
  version: z.string().min(1).max(40),
  labels: z.record(z.string().max(64), z.string().max(256)).default({}),
  devices: z
    .array(
      z.object({
        index: z.number().int().min(0).max(1023),
        kind: z.enum(['CUDA', 'CPU', 'WASM']),
        name: z.string().max(200),
        memoryBytes: z.number().int().min(0),
      }),
    )
    .max(64)
    .refine((d) => new Set(d.map((x) => x.index)).size === d.length, 'device indexes must be distinct'),
});

class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly details?: unknown) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'Request body too large');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null');
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
export async function authenticateWorker(db: Db, req: IncomingMessage) {
  const credential = /^Bearer\s+(wsw_\S+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (!credential || credential.length > 200) throw new HttpError(401, 'Missing worker credential');
  const worker = await db.worker.findUnique({ where: { credentialHash: hashSecret(credential) } });
  if (!worker || worker.state === 'REVOKED') throw new HttpError(401, 'This worker was revoked or is unknown: register it again');
  return worker;
}

async function register(db: Db, req: IncomingMessage) {
  const input = parse(registerInput, await readJson(req));
  const token = await db.workerToken.findUnique({ where: { tokenHash: hashSecret(input.token) } });
  if (!token || token.revokedAt || (token.expiresAt && token.expiresAt < new Date())) {
    await audit(db, { teamId: token?.teamId, action: 'worker.registration_refused', details: { name: input.name, hostname: input.hostname }, ipAddress: req.socket.remoteAddress });
    throw new HttpError(401, 'The registration token is not valid (wrong, revoked or expired)');
  }
  const credential = `${WORKER_CREDENTIAL_PREFIX}${newSecret()}`;
  const worker = await db.worker.create({
    data: {
      teamId: token.teamId,
      tokenId: token.id,
      name: input.name,
      hostname: input.hostname,
      backend: input.backend,
      version: input.version,
      labels: input.labels,
      credentialHash: hashSecret(credential),
      devices: { create: input.devices.map((d) => ({ ...d, memoryBytes: BigInt(d.memoryBytes) })) },
    },
  });
  await audit(db, { teamId: token.teamId, action: 'worker.registered', targetType: 'worker', targetId: worker.id, details: { name: input.name, hostname: input.hostname, token: token.prefix }, ipAddress: req.socket.remoteAddress });
  return { workerId: worker.id, credential, pool: token.teamId ? 'team' : 'shared' };
}

async function heartbeat(db: Db, req: IncomingMessage) {
  const worker = await authenticateWorker(db, req);
  const updated = await db.worker.update({
    where: { id: worker.id },
    data: { lastHeartbeatAt: new Date(), ...(worker.state === 'OFFLINE' ? { state: 'ONLINE' } : {}) },
  });
  return { workerId: updated.id, state: updated.state };
}

export async function handleWorkerApi(db: Db, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  try {
    if (req.method !== 'POST') throw new HttpError(405, 'Use POST');
    if (url.pathname === '/api/workers/register') return send(res, 201, await register(db, req));
    if (url.pathname === '/api/workers/heartbeat') return send(res, 200, await heartbeat(db, req));
    throw new HttpError(404, `No route ${url.pathname}`);
  } catch (error) {
    if (error instanceof HttpError) return send(res, error.status, { error: error.message, issues: error.details });
    throw error;
  }
}
