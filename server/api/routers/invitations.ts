import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { audit } from '../../auth/audit';
import { findUsableInvitation } from '../../auth/invitations';
import { roleAtLeast } from '../../auth/roles';
import { hashSecret, newSecret } from '../../auth/tokens';
import { publicProcedure, router, teamProcedure, userProcedure } from '../trpc';

const token = z.string().min(1).max(200);

export const invitationsRouter = router({
  list: teamProcedure('ADMIN').query(async ({ ctx }) => {
    const rows = await ctx.db.invitation.findMany({
      where: { teamId: ctx.membership.teamId },
      orderBy: { createdAt: 'desc' },
      take: 200,
      select: {
        id: true, email: true, role: true, expiresAt: true, acceptedAt: true, revokedAt: true, createdAt: true,
        invitedBy: { select: { name: true, email: true } },
      },
    });
    const now = new Date();
    return rows.map((r) => ({
      ...r,
      status: r.revokedAt ? 'revoked' : r.acceptedAt ? 'accepted' : r.expiresAt < now ? 'expired' : 'pending',
    }));
  }),

  /** Makes a single-use invitation link. The link is shown once: only its hash is kept. */
  create: teamProcedure('ADMIN')
    .input(
      z.object({
        role: z.enum(['OWNER', 'ADMIN', 'MEMBER', 'VIEWER']).default('MEMBER'),
        email: z.email().max(320).optional(),
        expiresInHours: z.number().int().min(1).max(24 * 30).default(72),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      if (!roleAtLeast(ctx.membership.role, input.role)) {
        throw new TRPCError({ code: 'FORBIDDEN', message: 'You cannot invite with a role above your own' });
      }
      const secret = newSecret();
      const invitation = await ctx.db.invitation.create({
        data: {
          teamId: ctx.membership.teamId,
          role: input.role,
          email: input.email?.toLowerCase(),
          tokenHash: hashSecret(secret),
          invitedById: ctx.user.id,
          expiresAt: new Date(Date.now() + input.expiresInHours * 3600_000),
        },
        select: { id: true, role: true, email: true, expiresAt: true },
      });
      await audit(ctx.db, {
        teamId: ctx.membership.teamId, actorUserId: ctx.user.id, action: 'invitation.created', targetType: 'invitation',
        targetId: invitation.id, details: { role: input.role, email: input.email ?? null }, ipAddress: ctx.ip,
      });
      return { ...invitation, link: `${ctx.deps.publicUrl}/invite/${secret}` };
    }),

  revoke: teamProcedure('ADMIN')
    .input(z.object({ invitationId: z.string().min(1).max(64) }))
    .mutation(async ({ ctx, input }) => {
      const { count } = await ctx.db.invitation.updateMany({
        where: { id: input.invitationId, teamId: ctx.membership.teamId, revokedAt: null, acceptedAt: null },
        data: { revokedAt: new Date() },
      });
      if (count === 0) throw new TRPCError({ code: 'NOT_FOUND', message: 'No pending invitation with that id' });
      await audit(ctx.db, { teamId: ctx.membership.teamId, actorUserId: ctx.user.id, action: 'invitation.revoked', targetType: 'invitation', targetId: input.invitationId, ipAddress: ctx.ip });
      return { ok: true };
    }),

  /**
   * What an invitation link offers, for the page that accepts it, before sign-in: whoever holds
   * the link may read the team's name and the role it gives.
   */
  preview: publicProcedure.input(z.object({ token })).query(async ({ ctx, input }) => {
    const found = await findUsableInvitation(ctx.db, input.token);
    if ('error' in found) throw new TRPCError({ code: 'BAD_REQUEST', message: found.error });
    const team = await ctx.db.team.findUniqueOrThrow({ where: { id: found.invitation.teamId }, select: { name: true } });
    return { teamName: team.name, role: found.invitation.role, email: found.invitation.email };
  }),

  accept: userProcedure.input(z.object({ token })).mutation(async ({ ctx, input }) => {
    if (ctx.caller.apiKey) throw new TRPCError({ code: 'FORBIDDEN', message: 'Accept invitations signed in, not with an API key' });
    const found = await findUsableInvitation(ctx.db, input.token, ctx.user.email);
    if ('error' in found) {
      await audit(ctx.db, { actorUserId: ctx.user.id, action: 'invitation.rejected', details: { reason: found.error }, ipAddress: ctx.ip });
      throw new TRPCError({ code: 'BAD_REQUEST', message: found.error });
    }
    const { invitation } = found;
    const teamId = await ctx.db.$transaction(async (tx) => {
      // Spend the invitation first: of two racing accepts only one updates the row.
      const spent = await tx.invitation.updateMany({
        where: { id: invitation.id, acceptedAt: null, revokedAt: null },
        data: { acceptedAt: new Date(), acceptedById: ctx.user.id },
      });
      if (spent.count !== 1) throw new TRPCError({ code: 'BAD_REQUEST', message: 'This invitation was already used. Ask for a new one.' });
      const existing = await tx.membership.findUnique({ where: { teamId_userId: { teamId: invitation.teamId, userId: ctx.user.id } } });
      if (!existing) {
        await tx.membership.create({ data: { teamId: invitation.teamId, userId: ctx.user.id, role: invitation.role } });
      } else if (!roleAtLeast(existing.role, invitation.role)) {
        await tx.membership.update({ where: { id: existing.id }, data: { role: invitation.role } });
      }
      return invitation.teamId;
    });
    await audit(ctx.db, { teamId, actorUserId: ctx.user.id, action: 'invitation.accepted', targetType: 'invitation', targetId: invitation.id, details: { role: invitation.role }, ipAddress: ctx.ip });
    return { teamId };
  }),
});
