import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { audit } from '../../auth/audit';
import type { Prisma } from '../../db/generated/prisma/client';
import { router, teamProcedure } from '../trpc';

const roleSchema = z.enum(['OWNER', 'ADMIN', 'MEMBER', 'VIEWER']);
const userId = z.string().min(1).max(64);

/** Locks the team's owner rows, so two demotions cannot both pass the last-owner check. */
async function ownerIds(tx: Prisma.TransactionClient, teamId: string): Promise<string[]> {
  const rows = await tx.$queryRaw<Array<{ userId: string }>>`
    SELECT "userId" FROM "Membership" WHERE "teamId" = ${teamId} AND role = 'OWNER' FOR UPDATE`;
  return rows.map((r) => r.userId);
}

async function targetMembership(tx: Prisma.TransactionClient, teamId: string, target: string) {
  const m = await tx.membership.findUnique({ where: { teamId_userId: { teamId, userId: target } } });
  if (!m) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such member' });
  return m;
}

export const membersRouter = router({
  list: teamProcedure('VIEWER').query(({ ctx }) =>
    ctx.db.membership.findMany({
      where: { teamId: ctx.membership.teamId },
      orderBy: { createdAt: 'asc' },
      select: { role: true, createdAt: true, user: { select: { id: true, name: true, email: true } } },
    }),
  ),

  changeRole: teamProcedure('ADMIN')
    .input(z.object({ userId, role: roleSchema }))
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const before = await ctx.db.$transaction(async (tx) => {
        const owners = await ownerIds(tx, teamId);
        const target = await targetMembership(tx, teamId, input.userId);
        const touchesOwner = target.role === 'OWNER' || input.role === 'OWNER';
        if (touchesOwner && ctx.membership.role !== 'OWNER') {
          throw new TRPCError({ code: 'FORBIDDEN', message: 'Only an owner can grant or take away the owner role' });
        }
        if (target.role === 'OWNER' && input.role !== 'OWNER' && owners.length === 1) {
          throw new TRPCError({ code: 'PRECONDITION_FAILED', message: 'The last owner cannot be demoted: make someone else owner first' });
        }
        await tx.membership.update({ where: { id: target.id }, data: { role: input.role } });
        return target.role;
      });
      await audit(ctx.db, {
        teamId, actorUserId: ctx.user.id, action: 'member.role_changed', targetType: 'user', targetId: input.userId,
        details: { from: before, to: input.role }, ipAddress: ctx.ip,
      });
      return { userId: input.userId, role: input.role };
    }),

  /** Removes a member. Their environments, runs and checkpoints stay with the team. */
  remove: teamProcedure('ADMIN')
    .input(z.object({ userId }))
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      await ctx.db.$transaction(async (tx) => {
        const owners = await ownerIds(tx, teamId);
        const target = await targetMembership(tx, teamId, input.userId);
        if (target.role === 'OWNER' && ctx.membership.role !== 'OWNER') {
          throw new TRPCError({ code: 'FORBIDDEN', message: 'Only an owner can remove an owner' });
        }
        if (target.role === 'OWNER' && owners.length === 1) {
          throw new TRPCError({ code: 'PRECONDITION_FAILED', message: 'The last owner cannot be removed' });
        }
        await tx.membership.delete({ where: { id: target.id } });
        await tx.apiKey.updateMany({ where: { teamId, userId: input.userId, revokedAt: null }, data: { revokedAt: new Date() } });
      });
      await audit(ctx.db, { teamId, actorUserId: ctx.user.id, action: 'member.removed', targetType: 'user', targetId: input.userId, ipAddress: ctx.ip });
      return { ok: true };
    }),

  leave: teamProcedure('VIEWER').mutation(async ({ ctx }) => {
    const teamId = ctx.membership.teamId;
    await ctx.db.$transaction(async (tx) => {
      const owners = await ownerIds(tx, teamId);
      if (owners.length === 1 && owners[0] === ctx.user.id) {
        throw new TRPCError({ code: 'PRECONDITION_FAILED', message: 'The last owner cannot leave: transfer ownership or delete the team' });
      }
      await tx.membership.delete({ where: { teamId_userId: { teamId, userId: ctx.user.id } } });
      await tx.apiKey.updateMany({ where: { teamId, userId: ctx.user.id, revokedAt: null }, data: { revokedAt: new Date() } });
    });
    await audit(ctx.db, { teamId, actorUserId: ctx.user.id, action: 'member.left', targetType: 'user', targetId: ctx.user.id, ipAddress: ctx.ip });
    return { ok: true };
  }),

  /** Makes another member owner; the caller stays on as admin. */
  transferOwnership: teamProcedure('OWNER')
    .input(z.object({ userId }))
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      if (input.userId === ctx.user.id) throw new TRPCError({ code: 'BAD_REQUEST', message: 'You are already an owner' });
      await ctx.db.$transaction(async (tx) => {
        await ownerIds(tx, teamId);
        const target = await targetMembership(tx, teamId, input.userId);
        await tx.membership.update({ where: { id: target.id }, data: { role: 'OWNER' } });
        await tx.membership.update({ where: { teamId_userId: { teamId, userId: ctx.user.id } }, data: { role: 'ADMIN' } });
      });
      await audit(ctx.db, { teamId, actorUserId: ctx.user.id, action: 'team.ownership_transferred', targetType: 'user', targetId: input.userId, ipAddress: ctx.ip });
      return { ok: true };
    }),
});
