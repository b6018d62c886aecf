import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { cancelJob } from '../../jobs/cancel.handler';
import { cancelInput } from '../../jobs/cancel.schema';
import { previewJob } from '../../jobs/preview.handler';
import { submitJob } from '../../jobs/submit.handler';
import { submitInput } from '../../jobs/submit.schema';
import { router, teamProcedure } from '../trpc';

// Submit and cancel are handlers of the jobs service (server/jobs/), which the inference router
// calls too: routers never call each other.

const jobId = z.object({ jobId: z.string().min(1).max(64) });

export const jobsRouter = router({
  /** Queues a job (server/jobs/submit.handler.ts). */
  submit: teamProcedure('MEMBER')
    .input(submitInput)
    .mutation(async ({ ctx, input }) => (await submitJob({ ctx, input })).job),

  /**
   * What submit would answer for the same input, creating nothing: the resolved config, the
   * memory estimate and the scheduler's decision, or the refusal with the offending field
   * (server/jobs/preview.handler.ts). Input submit's schema refuses is a BAD_REQUEST as there.
   */
  preview: teamProcedure('MEMBER')
    .input(submitInput)
    .query(({ ctx, input }) => previewJob({ ctx, input })),

  list: teamProcedure('VIEWER')
    .input(
      z.object({
        state: z.enum(['QUEUED', 'ASSIGNED', 'RUNNING', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED']).optional(),
        limit: z.number().int().min(1).max(200).default(50),
      }),
    )
    .query(({ ctx, input }) =>
      ctx.db.job.findMany({
        where: { teamId: ctx.membership.teamId, ...(input.state ? { state: input.state } : {}) },
        orderBy: { createdAt: 'desc' },
        take: input.limit,
        select: {
          id: true, kind: true, state: true, priority: true, deviceCount: true, deviceKind: true, attempts: true,
          waitingReason: true, failureReason: true, createdAt: true, startedAt: true, finishedAt: true,
          owner: { select: { id: true, name: true } },
          // The newest sampler checkpoint: what the playground opens and `whetstone eval` scores.
          // Of several at one step (one per independent learner), the newest: the first learner's.
          checkpoints: { where: { kind: 'SAMPLER' }, orderBy: [{ step: 'desc' }, { createdAt: 'desc' }], take: 1, select: { id: true, step: true } },
          _count: { select: { checkpoints: true } },
        },
      }),
    ),

  get: teamProcedure('VIEWER')
    .input(jobId)
    .query(async ({ ctx, input }) => {
      const job = await ctx.db.job.findFirst({
        where: { id: input.jobId, teamId: ctx.membership.teamId },
        include: { events: { orderBy: { at: 'asc' } }, owner: { select: { id: true, name: true } } },
      });
      if (!job) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such job' });
      return job;
    }),

  /** Cancels your own job (admins: anyone's). A queued job ends at once; a running one is stopped by its worker. */
  cancel: teamProcedure('MEMBER')
    .input(cancelInput)
    .mutation(({ ctx, input }) => cancelJob({ ctx, input })),
});
