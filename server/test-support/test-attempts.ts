import { hashSecret, newSecret } from '../auth/tokens';
import type { Db } from '../db/client';
import { WORKER_CREDENTIAL_PREFIX } from '../workers/credentials';
import type { StreamKind, StreamItem } from '../../sdk/live';

/**
 * For stream tests: a worker of the job's team holding a new ACTIVE attempt of the job, as the
 * scheduler would leave it. `credential` is the new worker's (none when `workerId` names one).
 */
export async function activeAttempt(db: Db, job: { id: string; teamId: string }, number: number, workerId?: string) {
  const credential = `${WORKER_CREDENTIAL_PREFIX}${newSecret()}`;
  const worker =
    workerId ??
    (await db.worker.create({ data: { teamId: job.teamId, name: 'w', hostname: 'h', backend: 'wasm', version: '1', credentialHash: hashSecret(credential) } })).id;
  const attempt = await db.jobAttempt.create({ data: { jobId: job.id, number, workerId: worker, leaseExpiresAt: new Date(Date.now() + 3_600_000) } });
  return { workerId: worker, attemptId: attempt.id, fencingToken: attempt.fencingToken.toString(), number, credential: workerId ? null : credential };
}

/** Sends one stream batch as a worker does over HTTP (POST /api/workers/stream); resolves with the answer's status and body. */
export async function postBatch<K extends StreamKind>(
  url: string,
  attempt: Awaited<ReturnType<typeof activeAttempt>>,
  seq: number,
  kind: K,
  items: StreamItem<K>[],
): Promise<{ status: number; body: unknown }> {
  if (!attempt.credential) throw new Error('postBatch needs the attempt of a worker activeAttempt created');
  const res = await fetch(`${url}/api/workers/stream`, {
    method: 'POST',
    headers: { authorization: `Bearer ${attempt.credential}`, 'content-type': 'application/json' },
    body: JSON.stringify({ attemptId: attempt.attemptId, fencingToken: attempt.fencingToken, seq, kind, items }),
  });
  return { status: res.status, body: await res.json() };
}
