import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { saveEnvironmentVersion } from '../../environments/save-version';
import { router, teamProcedure } from '../trpc';
import { MAX_DATASET_CHARS } from '../../datasets/store-version';
import { DryRunQueueFull } from '../../environments/dry-run-pool';
import { environmentSourceInput } from '../../environments/source-input';

export const environmentsRouter = router({
  /** Saves code and manifest as a new version (or finds the identical one) and dry-runs it. */
  saveVersion: teamProcedure('MEMBER')
    .input(
      z.object({
        name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lower-case letters, digits and dashes'),
        description: z.string().max(2000).optional(),
        ...environmentSourceInput,
        datasetText: z.string().max(MAX_DATASET_CHARS).optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const result = await saveEnvironmentVersion(ctx.db, ctx.deps.dryRuns, { ...input, teamId: ctx.membership.teamId, userId: ctx.user.id }).catch((error: unknown) => {
        if (error instanceof DryRunQueueFull) throw new TRPCError({ code: 'TOO_MANY_REQUESTS', message: `Not saved: ${error.message}` });
        throw error;
      });
      if (!result.ok) throw new TRPCError({ code: 'BAD_REQUEST', message: result.problems.join('; ') });
      return result;
    }),

  get: teamProcedure('VIEWER')
    .input(z.object({ environmentId: z.string().min(1).max(64) }))
    .query(async ({ ctx, input }) => {
      const env = await ctx.db.environment.findFirst({
        where: { id: input.environmentId, teamId: ctx.membership.teamId },
        include: {
          versions: {
            orderBy: { version: 'desc' },
            select: { id: true, version: true, contentHash: true, validationStatus: true, createdAt: true, entry: true },
          },
        },
      });
      if (!env) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such environment' });
      return env;
    }),

  version: teamProcedure('VIEWER')
    .input(z.object({ versionId: z.string().min(1).max(64) }))
    .query(async ({ ctx, input }) => {
      const version = await ctx.db.environmentVersion.findFirst({ where: { id: input.versionId, environment: { teamId: ctx.membership.teamId } } });
      if (!version) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such environment version' });
      return version;
    }),

  list: teamProcedure('VIEWER')
    .input(z.object({ includeArchived: z.boolean().default(false) }))
    .query(({ ctx, input }) =>
      ctx.db.environment.findMany({
        where: { teamId: ctx.membership.teamId, ...(input.includeArchived ? {} : { archivedAt: null }) },
        orderBy: { updatedAt: 'desc' },
        select: {
          id: true,
          name: true,
          description: true,
          template: true,
          updatedAt: true,
          versions: { orderBy: { version: 'desc' }, take: 1, select: { version: true, validationStatus: true } },
        },
      }),
    ),
});
