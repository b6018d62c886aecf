import { z } from 'zod';
import { router, teamProcedure } from '../trpc';

export const environmentsRouter = router({
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
