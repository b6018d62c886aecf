import { router, teamProcedure } from '../trpc';

export const teamsRouter = router({
  get: teamProcedure('VIEWER').query(async ({ ctx }) => {
    const team = await ctx.db.team.findUniqueOrThrow({
      where: { id: ctx.membership.teamId },
      select: { id: true, name: true, slug: true, createdAt: true, quota: true, _count: { select: { memberships: true } } },
    });
    return { ...team, role: ctx.membership.role };
  }),
});
