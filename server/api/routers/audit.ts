import { z } from 'zod';
import { router, teamProcedure } from '../trpc';

export const auditRouter = router({
  /** The team's audit log, newest first, a page at a time (cursor: the last id seen). */
  list: teamProcedure('ADMIN')
    .input(z.object({ cursor: z.coerce.bigint().positive().optional(), limit: z.number().int().min(1).max(200).default(50), action: z.string().max(64).optional() }))
    .query(async ({ ctx, input }) => {
      const rows = await ctx.db.auditLog.findMany({
        where: {
          teamId: ctx.membership.teamId,
          ...(input.cursor ? { id: { lt: input.cursor } } : {}),
          ...(input.action ? { action: { startsWith: input.action } } : {}),
        },
        orderBy: { id: 'desc' },
        take: input.limit + 1,
        select: {
          id: true, action: true, targetType: true, targetId: true, ipAddress: true, details: true, at: true,
          actor: { select: { id: true, name: true, email: true } },
        },
      });
      const more = rows.length > input.limit;
      const page = more ? rows.slice(0, input.limit) : rows;
      return { entries: page, nextCursor: more ? page[page.length - 1].id : null };
    }),
});
