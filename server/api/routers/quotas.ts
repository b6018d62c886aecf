import { z } from 'zod';
import { audit } from '../../auth/audit';
import { router, teamProcedure } from '../trpc';

/** The highest priority any job may have; quotas cap what a team's members may ask for below it. */
const MAX_PRIORITY = 1000;

export const quotasRouter = router({
  get: teamProcedure('VIEWER').query(async ({ ctx }) => {
    const teamId = ctx.membership.teamId;
    const quota = await ctx.db.teamQuota.upsert({ where: { teamId }, update: {}, create: { teamId } });
    const [queued, running] = await Promise.all([
      ctx.db.job.count({ where: { teamId, state: 'QUEUED' } }),
      ctx.db.job.aggregate({ where: { teamId, state: { in: ['ASSIGNED', 'RUNNING'] } }, _sum: { deviceCount: true } }),
    ]);
    return { ...quota, usage: { queuedJobs: queued, devicesInUse: running._sum.deviceCount ?? 0 } };
  }),

  update: teamProcedure('ADMIN')
    .input(
      z.object({
        maxConcurrentDevices: z.number().int().min(0).max(10_000),
        maxQueuedJobs: z.number().int().min(0).max(100_000),
        maxPriority: z.number().int().min(0).max(MAX_PRIORITY),
        /** Given to jobs submitted without a time limit. */
        defaultTimeLimitSeconds: z.number().int().min(60).max(30 * 86400).optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const before = await ctx.db.teamQuota.findUnique({ where: { teamId } });
      const { teamId: _ignored, ...limits } = input;
      const quota = await ctx.db.teamQuota.upsert({ where: { teamId }, update: limits, create: { teamId, ...limits } });
      await audit(ctx.db, {
        teamId, actorUserId: ctx.user.id, action: 'quota.changed', targetType: 'team', targetId: teamId,
        details: {
          from: before
            ? { maxConcurrentDevices: before.maxConcurrentDevices, maxQueuedJobs: before.maxQueuedJobs, maxPriority: before.maxPriority, defaultTimeLimitSeconds: before.defaultTimeLimitSeconds }
            : null,
          to: limits,
        },
        ipAddress: ctx.ip,
      });
      return quota;
    }),
});
