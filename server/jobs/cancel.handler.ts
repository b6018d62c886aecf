import { TRPCError } from '@trpc/server';
import { roleAtLeast } from '../auth/roles';
import { notifyScheduler } from '../scheduler/notify';
import type { CancelInput } from './cancel.schema';
import type { TeamMemberWithWorkersContext } from './context';

/**
 * Cancels a job of the caller's team: their own (admins: anyone's). A queued job ends at once; a
 * running one is asked to stop, and its worker ends it.
 */
export async function cancelJob({ ctx, input }: { ctx: TeamMemberWithWorkersContext; input: CancelInput }) {
  const job = await ctx.db.job.findFirst({ where: { id: input.jobId, teamId: ctx.membership.teamId } });
  if (!job) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such job' });
  if (job.ownerId !== ctx.user.id && !roleAtLeast(ctx.membership.role, 'ADMIN')) {
    throw new TRPCError({ code: 'FORBIDDEN', message: "Only an admin can cancel another member's job" });
  }
  if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(job.state)) return { state: job.state };
  return ctx.db.$transaction(async (tx) => {
    const queued = await tx.job.updateMany({
      where: { id: job.id, state: { in: ['QUEUED', 'PREEMPTED'] } },
      data: { state: 'CANCELLED', finishedAt: new Date(), cancelRequestedAt: new Date() },
    });
    if (queued.count === 1) {
      await tx.jobEvent.create({ data: { jobId: job.id, fromState: job.state, toState: 'CANCELLED', actorType: 'USER', actorId: ctx.user.id, reason: 'cancelled before it ran' } });
      return { state: 'CANCELLED' as const };
    }
    await tx.job.update({ where: { id: job.id }, data: { cancelRequestedAt: new Date() } });
    await notifyScheduler(tx, job.id);
    const attempt = await tx.jobAttempt.findFirst({ where: { jobId: job.id, state: 'ACTIVE' } });
    // The worker also learns it from its next heartbeat; the push makes it immediate.
    if (attempt?.workerId) ctx.deps.realtime.signalWorker(attempt.workerId, { attemptId: attempt.id, cancel: true });
    return { state: job.state, cancelRequested: true };
  });
}
