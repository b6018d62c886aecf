import { z } from 'zod';
import { deleteSession, sessionCookie } from '../../auth/session';
import { publicProcedure, router, userProcedure } from '../trpc';

export const accountRouter = router({
  /** The signed-in user and their teams, or null. */
  me: publicProcedure.query(async ({ ctx }) => {
    if (!ctx.user) return null;
    const memberships = await ctx.db.membership.findMany({
      where: { userId: ctx.user.id },
      select: { role: true, team: { select: { id: true, name: true, slug: true } } },
      orderBy: { createdAt: 'asc' },
    });
    return { user: ctx.user, teams: memberships.map((m) => ({ ...m.team, role: m.role })) };
  }),

  updateProfile: userProcedure
    .input(z.object({ name: z.string().trim().min(1).max(100) }))
    .mutation(({ ctx, input }) =>
      ctx.db.user.update({ where: { id: ctx.user.id }, data: { name: input.name }, select: { id: true, name: true } }),
    ),

  signOut: userProcedure.mutation(async ({ ctx }) => {
    if (ctx.sessionId) await deleteSession(ctx.db, ctx.sessionId);
    ctx.res.setHeader('Set-Cookie', sessionCookie('', ctx.deps.secureCookies, 0));
    return { ok: true };
  }),
});
