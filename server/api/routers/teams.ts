import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { audit } from '../../auth/audit';
import { router, teamProcedure, userProcedure } from '../trpc';

const teamName = z.string().trim().min(1).max(80);

function slugify(name: string): string {
  const base = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 30) || 'team';
  return `${base}-${Math.random().toString(36).slice(2, 8)}`;
}

export const teamsRouter = router({
  create: userProcedure.input(z.object({ name: teamName })).mutation(async ({ ctx, input }) => {
    if (ctx.caller.apiKey) throw new TRPCError({ code: 'FORBIDDEN', message: 'API keys act in their own team only' });
    const team = await ctx.db.team.create({
      data: {
        name: input.name,
        slug: slugify(input.name),
        quota: { create: {} },
        memberships: { create: { userId: ctx.user.id, role: 'OWNER' } },
      },
      select: { id: true, name: true, slug: true },
    });
    await audit(ctx.db, { teamId: team.id, actorUserId: ctx.user.id, action: 'team.created', targetType: 'team', targetId: team.id, ipAddress: ctx.ip });
    await ctx.deps.seedTeam(team.id);
    return team;
  }),

  get: teamProcedure('VIEWER').query(async ({ ctx }) => {
    const team = await ctx.db.team.findUniqueOrThrow({
      where: { id: ctx.membership.teamId },
      select: { id: true, name: true, slug: true, createdAt: true, _count: { select: { memberships: true } } },
    });
    return { ...team, role: ctx.membership.role };
  }),

  rename: teamProcedure('ADMIN')
    .input(z.object({ name: teamName }))
    .mutation(async ({ ctx, input }) => {
      const team = await ctx.db.team.update({ where: { id: ctx.membership.teamId }, data: { name: input.name }, select: { id: true, name: true } });
      await audit(ctx.db, { teamId: team.id, actorUserId: ctx.user.id, action: 'team.renamed', targetType: 'team', targetId: team.id, details: { name: input.name }, ipAddress: ctx.ip });
      return team;
    }),

  /** Deletes the team and everything in it. The caller types the team's name to confirm. */
  delete: teamProcedure('OWNER')
    .input(z.object({ confirmName: z.string().max(80) }))
    .mutation(async ({ ctx, input }) => {
      const team = await ctx.db.team.findUniqueOrThrow({ where: { id: ctx.membership.teamId } });
      if (team.name !== input.confirmName) {
        throw new TRPCError({ code: 'BAD_REQUEST', message: 'Type the team name exactly to confirm deletion' });
      }
      const running = await ctx.db.job.count({ where: { teamId: team.id, state: { in: ['ASSIGNED', 'RUNNING'] } } });
      if (running > 0) throw new TRPCError({ code: 'PRECONDITION_FAILED', message: `Cancel the team's ${running} running job(s) first` });
      await ctx.db.team.delete({ where: { id: team.id } });
      await audit(ctx.db, { actorUserId: ctx.user.id, action: 'team.deleted', targetType: 'team', targetId: team.id, details: { name: team.name }, ipAddress: ctx.ip });
      return { ok: true };
    }),
});
