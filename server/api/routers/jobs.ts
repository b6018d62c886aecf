import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { roleAtLeast } from '../../auth/roles';
import type { Prisma } from '../../db/generated/prisma/client';
import { router, teamProcedure } from '../trpc';
import { MAX_PRIORITY } from './quotas';

const jobId = z.object({ jobId: z.string().min(1).max(64) });
const jsonObject = z.record(z.string(), z.unknown());

/** Wakes the scheduler (LISTEN/NOTIFY) after a change it should act on. */
export const SCHEDULER_CHANNEL = 'whetstone_scheduler';

export const jobsRouter = router({
  /** Queues a job. Admission applies the team's quotas: queued jobs and the highest priority. */
  submit: teamProcedure('MEMBER')
    .input(
      z.object({
        kind: z.enum(['TRAIN', 'SFT', 'INFERENCE', 'EVAL']),
        experimentId: z.string().min(1).max(64).optional(),
        priority: z.number().int().min(0).max(MAX_PRIORITY).default(0),
        deviceCount: z.number().int().min(1).max(64).default(1),
        deviceKind: z.enum(['CUDA', 'CPU', 'WASM']).optional(),
        memoryBytes: z.number().int().min(0).max(2 ** 50).default(0),
        timeLimitSeconds: z.number().int().min(1).max(30 * 86400).optional(),
        config: jsonObject,
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const quota = await ctx.db.teamQuota.upsert({ where: { teamId }, update: {}, create: { teamId } });
      if (input.priority > quota.maxPriority && !roleAtLeast(ctx.membership.role, 'ADMIN')) {
        throw new TRPCError({ code: 'FORBIDDEN', message: `Priority ${input.priority} is above the team's limit of ${quota.maxPriority}` });
      }
      if (input.experimentId) {
        const experiment = await ctx.db.experiment.findFirst({ where: { id: input.experimentId, teamId } });
        if (!experiment) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such experiment in this team' });
      }
      return ctx.db.$transaction(async (tx) => {
        // Serialise admissions per team so two submits cannot both take the last queue slot.
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`queue:${teamId}`}))`;
        const queued = await tx.job.count({ where: { teamId, state: 'QUEUED' } });
        if (queued >= quota.maxQueuedJobs) {
          throw new TRPCError({ code: 'TOO_MANY_REQUESTS', message: `The team quota of ${quota.maxQueuedJobs} queued jobs is reached` });
        }
        const job = await tx.job.create({
          data: {
            teamId,
            ownerId: ctx.user.id,
            experimentId: input.experimentId,
            kind: input.kind,
            priority: input.priority,
            deviceCount: input.deviceCount,
            deviceKind: input.deviceKind,
            memoryBytes: BigInt(input.memoryBytes),
            timeLimitSeconds: input.timeLimitSeconds,
            config: input.config as Prisma.InputJsonObject,
            events: { create: { toState: 'QUEUED', actorType: 'USER', actorId: ctx.user.id, reason: 'submitted' } },
          },
          select: { id: true, state: true, kind: true, priority: true, createdAt: true },
        });
        await tx.$executeRaw`SELECT pg_notify(${SCHEDULER_CHANNEL}, ${job.id})`;
        return job;
      });
    }),

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
    .input(jobId)
    .mutation(async ({ ctx, input }) => {
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
        await tx.$executeRaw`SELECT pg_notify(${SCHEDULER_CHANNEL}, ${job.id})`;
        return { state: job.state, cancelRequested: true };
      });
    }),
});
