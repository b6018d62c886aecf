import { z } from 'zod';
import { audit } from '../../auth/audit';
import { usageHistory } from '../../quotas/usage-history';
import { router, teamProcedure } from '../trpc';

/** The highest priority any job may have; quotas cap what a team's members may ask for below it. */
const MAX_PRIORITY = 1000;
/** The largest stream storage quota an admin may set: 1 PiB (a number of bytes JavaScript holds exactly). */
const MAX_STREAM_STORAGE_BYTES = 2 ** 50;

export const quotasRouter = router({
  get: teamProcedure('VIEWER').query(async ({ ctx }) => {
    const teamId = ctx.membership.teamId;
    const quota = await ctx.db.teamQuota.upsert({ where: { teamId }, update: {}, create: { teamId } });
    const [queued, running, stream] = await Promise.all([
      ctx.db.job.count({ where: { teamId, state: 'QUEUED' } }),
      ctx.db.job.aggregate({ where: { teamId, state: { in: ['ASSIGNED', 'RUNNING'] } }, _sum: { deviceCount: true } }),
      ctx.db.teamStreamUsage.findUnique({ where: { teamId } }),
    ]);
    return {
      ...quota,
      // streamStorageBytes (the limit) and usage.streamStorageBytes are bytes, as bigint.
      usage: { queuedJobs: queued, devicesInUse: running._sum.deviceCount ?? 0, streamStorageBytes: stream?.bytes ?? 0n },
    };
  }),

  /**
   * The last 24 hours, hour by hour: devices held on average (against maxConcurrentDevices). Its
   * own query: it reads a day of attempts, and a page polls it by the minute, not with the meters.
   */
  history: teamProcedure('VIEWER').query(({ ctx }) => usageHistory(ctx.db, ctx.membership.teamId)),

  update: teamProcedure('ADMIN')
    .input(
      z.object({
        maxConcurrentDevices: z.number().int().min(0).max(10_000),
        maxQueuedJobs: z.number().int().min(0).max(100_000),
        maxPriority: z.number().int().min(0).max(MAX_PRIORITY),
        /** Given to jobs submitted without a time limit. */
        defaultTimeLimitSeconds: z.number().int().min(60).max(30 * 86400).optional(),
        /** Bytes of stream data (logs, metrics, rollouts, matches) the team's runs may keep; 0 keeps none. */
        streamStorageBytes: z.number().int().min(0).max(MAX_STREAM_STORAGE_BYTES, 'at most 1 PiB (2^50 bytes)').optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const before = await ctx.db.teamQuota.findUnique({ where: { teamId } });
      const { teamId: _ignored, streamStorageBytes, ...rest } = input;
      const limits = { ...rest, ...(streamStorageBytes === undefined ? {} : { streamStorageBytes: BigInt(streamStorageBytes) }) };
      const quota = await ctx.db.teamQuota.upsert({ where: { teamId }, update: limits, create: { teamId, ...limits } });
      await audit(ctx.db, {
        teamId, actorUserId: ctx.user.id, action: 'quota.changed', targetType: 'team', targetId: teamId,
        details: {
          from: before
            ? {
                maxConcurrentDevices: before.maxConcurrentDevices, maxQueuedJobs: before.maxQueuedJobs, maxPriority: before.maxPriority,
                defaultTimeLimitSeconds: before.defaultTimeLimitSeconds, streamStorageBytes: Number(before.streamStorageBytes),
              }
            : null,
          to: { ...rest, ...(streamStorageBytes === undefined ? {} : { streamStorageBytes }) },
        },
        ipAddress: ctx.ip,
      });
      return quota;
    }),
});
