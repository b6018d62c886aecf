import { z } from 'zod';
import { publicProcedure, router, userProcedure } from '../trpc';

export const accountRouter = router({
  /** The caller and their teams, or null when signed out. */
  me: publicProcedure.query(async ({ ctx }) => {
    if (!ctx.caller) return null;
    const memberships = await ctx.db.membership.findMany({
      where: { userId: ctx.caller.user.id, ...(ctx.caller.apiKey ? { teamId: ctx.caller.apiKey.teamId } : {}) },
      select: { role: true, team: { select: { id: true, name: true, slug: true } } },
      orderBy: { createdAt: 'asc' },
    });
    const hasPassword = (await ctx.db.account.count({ where: { userId: ctx.caller.user.id, providerId: 'credential', password: { not: null } } })) > 0;
    return {
      user: ctx.caller.user,
      /** False for the local owner, who signs in with the printed link until they set one. */
      hasPassword,
      viaApiKey: ctx.caller.apiKey !== null,
      teams: memberships.map((m) => ({ ...m.team, role: m.role })),
    };
  }),

  updateProfile: userProcedure
    .input(z.object({ name: z.string().trim().min(1).max(100) }))
    .mutation(({ ctx, input }) =>
      ctx.db.user.update({ where: { id: ctx.user.id }, data: { name: input.name }, select: { id: true, name: true } }),
    ),
});
