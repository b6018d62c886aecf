import type { Db } from '../db/client';
import type { Prisma } from '../db/generated/prisma/client';
import type { ActorType, JobState } from '../db/generated/prisma/enums';
import { requeueBackoffMs } from './timing';

type Tx = Prisma.TransactionClient | Db;

/** How a job stopped at its time limit is told apart from one a person cancelled. */
export const TIME_LIMIT_REASON = 'time limit';

/** A job asked to stop ends CANCELLED, or FAILED when it was its time limit that stopped it. */
export function stoppedState(job: { failureReason: string | null }): 'CANCELLED' | 'FAILED' {
  return job.failureReason?.startsWith(TIME_LIMIT_REASON) ? 'FAILED' : 'CANCELLED';
}

/** Every state change of a job is a row with who and why (DESIGN.md, job lifecycle). */
export async function recordEvent(
  tx: Tx,
  jobId: string,
  fromState: JobState | null,
  toState: JobState,
  actor: { type: ActorType; id?: string | null },
  reason: string,
): Promise<void> {
  await tx.jobEvent.create({ data: { jobId, fromState, toState, actorType: actor.type, actorId: actor.id ?? null, reason } });
}

/**
 * An attempt that can no longer run (lease lost, or the runner failed to stop in time) ends, and
 * its job goes back to the queue with backoff, or fails once it has used all its attempts.
 */
export async function endAttemptAndRequeue(
  tx: Prisma.TransactionClient,
  attempt: { id: string; jobId: string; number: number },
  exitReason: string,
  actor: { type: ActorType; id?: string | null },
  now = new Date(),
): Promise<JobState> {
  const ended = await tx.jobAttempt.updateMany({
    where: { id: attempt.id, state: 'ACTIVE' },
    data: { state: 'ENDED', endedAt: now, exitReason },
  });
  if (ended.count === 0) return 'QUEUED';
  const job = await tx.job.findUniqueOrThrow({ where: { id: attempt.jobId } });
  if (!['ASSIGNED', 'RUNNING', 'PREEMPTED'].includes(job.state)) return job.state;
  if (job.cancelRequestedAt) {
    const state = stoppedState(job);
    await tx.job.update({ where: { id: job.id }, data: { state, finishedAt: now } });
    await recordEvent(tx, job.id, job.state, state, actor, `${job.failureReason ?? 'cancelled'}; ${exitReason}`);
    return state;
  }
  // Preemptions are the scheduler's doing, not the job's: only lost attempts count against it.
  const lost = await tx.jobAttempt.count({ where: { jobId: job.id, state: 'ENDED', NOT: { exitReason: { startsWith: 'preempted' } } } });
  if (lost >= job.maxAttempts) {
    const reason = `${exitReason}; gave up after ${lost} lost attempts`;
    await tx.job.update({ where: { id: job.id }, data: { state: 'FAILED', finishedAt: now, failureReason: reason } });
    await recordEvent(tx, job.id, job.state, 'FAILED', actor, reason);
    return 'FAILED';
  }
  const notBefore = new Date(now.getTime() + requeueBackoffMs(attempt.number));
  await tx.job.update({ where: { id: job.id }, data: { state: 'QUEUED', notBefore, queuedAt: now, waitingReason: `retrying after: ${exitReason}` } });
  await recordEvent(tx, job.id, job.state, 'QUEUED', actor, `${exitReason}; retry ${lost} of ${job.maxAttempts - 1} not before ${notBefore.toISOString()}`);
  return 'QUEUED';
}
