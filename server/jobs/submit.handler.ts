import { TRPCError } from '@trpc/server';
import type { Prisma } from '../db/generated/prisma/client';
import { notifyScheduler } from '../scheduler/notify';
import { admissionRefusal, checkSubmission, type Refusal } from './check-submission';
import type { TeamMemberContext } from './context';
import type { SubmitInput } from './submit.schema';

/** A refusal of check-submission.ts as the error the API answers. */
function refusalError(refusal: Refusal): TRPCError {
  return new TRPCError({ code: refusal.code, message: refusal.message, cause: refusal.cause });
}

export const queuedJobSelect = { id: true, state: true, kind: true, priority: true, createdAt: true } as const;
type QueuedJob = Prisma.JobGetPayload<{ select: typeof queuedJobSelect }>;

/**
 * Queues a job. Its config is checked as jobs.preview checks it (check-submission.ts: the schema
 * of its kind, the team's ids, the dry run, the training options, the memory), and admission
 * applies the team's quotas (the planner's rule) under the team's queue lock.
 * `reuse` runs under the team's queue lock, before admission: a job it returns is answered instead
 * of queueing a new one, so two racing callers cannot both queue (inference.open relies on it).
 */
export async function submitJob({
  ctx,
  input,
  reuse,
}: {
  ctx: TeamMemberContext;
  input: SubmitInput;
  reuse?: (tx: Prisma.TransactionClient) => Promise<QueuedJob | null>;
}): Promise<{ job: QueuedJob; reused: boolean }> {
  const teamId = ctx.membership.teamId;
  const checked = await checkSubmission({ db: ctx.db, teamId }, input);
  if (!checked.ok) throw refusalError(checked);
  const quota = await ctx.db.teamQuota.upsert({ where: { teamId }, update: {}, create: { teamId } });
  return ctx.db.$transaction(async (tx) => {
    // Serialise admissions per team so two submits cannot both take the last queue slot.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`queue:${teamId}`}))`;
    const existing = reuse ? await reuse(tx) : null;
    if (existing) return { job: existing, reused: true };
    const queuedJobs = await tx.job.count({ where: { teamId, state: 'QUEUED' } });
    const refused = admissionRefusal(input, quota, queuedJobs, ctx.membership.role);
    if (refused) throw refusalError(refused);
    const job = await tx.job.create({
      data: {
        teamId,
        ownerId: ctx.user.id,
        experimentId: input.experimentId,
        kind: input.kind,
        priority: input.priority,
        deviceCount: input.deviceCount,
        deviceKind: input.deviceKind,
        memoryBytes: BigInt(Math.max(input.memoryBytes, checked.minMemoryBytes ?? 0)),
        // Every job has a limit: the team's default when none is asked for (the time-limit path ends it).
        timeLimitSeconds: input.timeLimitSeconds ?? quota.defaultTimeLimitSeconds,
        maxAttempts: input.maxAttempts,
        config: checked.config as Prisma.InputJsonObject,
        events: { create: { toState: 'QUEUED', actorType: 'USER', actorId: ctx.user.id, reason: 'submitted' } },
      },
      select: queuedJobSelect,
    });
    await notifyScheduler(tx, job.id);
    return { job, reused: false };
  });
}
