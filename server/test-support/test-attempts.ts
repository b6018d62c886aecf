import { randomBytes } from 'node:crypto';
import type { Db } from '../db/client';

/** For stream tests: a worker of the job's team holding a new ACTIVE attempt of the job, as the scheduler would leave it. */
export async function activeAttempt(db: Db, job: { id: string; teamId: string }, number: number, workerId?: string) {
  const worker =
    workerId ??
    (await db.worker.create({ data: { teamId: job.teamId, name: 'w', hostname: 'h', backend: 'wasm', version: '1', credentialHash: randomBytes(16).toString('hex') } })).id;
  const attempt = await db.jobAttempt.create({ data: { jobId: job.id, number, workerId: worker, leaseExpiresAt: new Date(Date.now() + 3_600_000) } });
  return { workerId: worker, attemptId: attempt.id, fencingToken: attempt.fencingToken.toString(), number };
}
