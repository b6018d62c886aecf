import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { environmentNameSchema } from '../../../sdk/manifest';
import { galleryEntry, listGallery } from '../../environments/gallery';
import { exportEnvironmentPackage } from '../../environments/package';
import { importPackageAnswer } from '../import-package';
import { router, teamProcedure, userProcedure } from '../trpc';

const id = z.string().min(1).max(64);

/**
 * The installation's gallery of published environment versions (server/environments/gallery.ts):
 * any signed-in user reads it; importing puts a copy, with the same content hash, into a team the
 * caller is a member of.
 */
export const galleryRouter = router({
  list: userProcedure.input(z.object({ search: z.string().max(200).optional() })).query(({ ctx, input }) => listGallery(ctx.db, input.search)),

  entry: userProcedure.input(z.object({ environmentId: id })).query(async ({ ctx, input }) => {
    const entry = await galleryEntry(ctx.db, input.environmentId);
    if (!entry) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such environment in the gallery' });
    return entry;
  }),

  /** A published version into the caller's team (`teamId`), as a package would come. */
  import: teamProcedure('MEMBER')
    .input(z.object({ versionId: id, name: environmentNameSchema.optional() }))
    .mutation(async ({ ctx, input }) => {
      const published = await ctx.db.environmentVersion.findFirst({
        where: { id: input.versionId, publishedAt: { not: null }, environment: { archivedAt: null } },
        select: { environment: { select: { teamId: true } } },
      });
      if (!published) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such version in the gallery (it may have been taken back)' });
      const pkg = await exportEnvironmentPackage(ctx.db, ctx.deps.blobs, published.environment.teamId, input.versionId, { published: true });
      if (!pkg) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such version in the gallery' });
      return importPackageAnswer(ctx, { teamId: ctx.membership.teamId, userId: ctx.user.id, role: ctx.membership.role }, pkg, input.name, { fromGallery: input.versionId });
    }),
});
