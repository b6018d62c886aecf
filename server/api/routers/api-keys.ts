import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { audit } from '../../auth/audit';
import { API_KEY_PREFIX } from '../../auth/caller';
import { roleAtLeast } from '../../auth/roles';
import { hashSecret, newSecret } from '../../auth/tokens';
import { router, teamProcedure } from '../trpc';

/** How much of a key is kept in clear to tell keys apart: "wsk_" and 8 characters. */
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;

export const apiKeysRouter = router({
  /** Your own keys; admins see everyone's in the team. */
  list: teamProcedure('VIEWER').query(({ ctx }) =>
    ctx.db.apiKey.findMany({
      where: {
        teamId: ctx.membership.teamId,
        ...(roleAtLeast(ctx.membership.role, 'ADMIN') ? {} : { userId: ctx.user.id }),
      },
      orderBy: { createdAt: 'desc' },
      select: {
        id: true, name: true, prefix: true, createdAt: true, expiresAt: true, lastUsedAt: true, revokedAt: true,
        user: { select: { id: true, name: true, email: true } },
      },
    }),
  ),

  /** Creates a key acting with your role in this team. The key is shown once. */
  create: teamProcedure('VIEWER')
    .input(z.object({ name: z.string().trim().min(1).max(80), expiresInDays: z.number().int().min(1).max(3650).optional() }))
    .mutation(async ({ ctx, input }) => {
      const key = `${API_KEY_PREFIX}${newSecret()}`;
      const created = await ctx.db.apiKey.create({
        data: {
          teamId: ctx.membership.teamId,
          userId: ctx.user.id,
          name: input.name,
          prefix: key.slice(0, DISPLAY_PREFIX_LENGTH),
          keyHash: hashSecret(key),
          expiresAt: input.expiresInDays ? new Date(Date.now() + input.expiresInDays * 86400_000) : null,
        },
        select: { id: true, name: true, prefix: true, expiresAt: true, createdAt: true },
      });
      await audit(ctx.db, { teamId: ctx.membership.teamId, actorUserId: ctx.user.id, action: 'api_key.created', targetType: 'api_key', targetId: created.id, details: { name: input.name }, ipAddress: ctx.ip });
      return { ...created, key };
    }),

  revoke: teamProcedure('VIEWER')
    .input(z.object({ keyId: z.string().min(1).max(64) }))
    .mutation(async ({ ctx, input }) => {
      const key = await ctx.db.apiKey.findFirst({ where: { id: input.keyId, teamId: ctx.membership.teamId } });
      if (!key) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such key' });
      if (key.userId !== ctx.user.id && !roleAtLeast(ctx.membership.role, 'ADMIN')) {
        throw new TRPCError({ code: 'FORBIDDEN', message: "Only an admin can revoke another member's key" });
      }
      if (!key.revokedAt) await ctx.db.apiKey.update({ where: { id: key.id }, data: { revokedAt: new Date() } });
      await audit(ctx.db, { teamId: ctx.membership.teamId, actorUserId: ctx.user.id, action: 'api_key.revoked', targetType: 'api_key', targetId: key.id, ipAddress: ctx.ip });
      return { ok: true };
    }),
});
