import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { audit } from '../../auth/audit';
import { hashSecret, newSecret } from '../../auth/tokens';
import type { Db } from '../../db/client';
import { DISPLAY_PREFIX_LENGTH, WORKER_TOKEN_PREFIX } from '../../workers/credentials';
import { installationAdminProcedure, router, teamProcedure } from '../trpc';

const createInput = z.object({
  name: z.string().trim().min(1).max(80),
  expiresInDays: z.number().int().min(1).max(3650).optional(),
});
const tokenSelect = { id: true, name: true, prefix: true, createdAt: true, expiresAt: true, revokedAt: true, _count: { select: { workers: true } } } as const;

async function createToken(db: Db, teamId: string | null, userId: string, input: z.infer<typeof createInput>, ip: string | null) {
  const token = `${WORKER_TOKEN_PREFIX}${newSecret()}`;
  const created = await db.workerToken.create({
    data: {
      teamId,
      name: input.name,
      prefix: token.slice(0, DISPLAY_PREFIX_LENGTH),
      tokenHash: hashSecret(token),
      createdById: userId,
      expiresAt: input.expiresInDays ? new Date(Date.now() + input.expiresInDays * 86400_000) : null,
    },
    select: { id: true, name: true, prefix: true, expiresAt: true, createdAt: true },
  });
  await audit(db, { teamId, actorUserId: userId, action: 'worker_token.created', targetType: 'worker_token', targetId: created.id, details: { name: input.name, pool: teamId ? 'team' : 'shared' }, ipAddress: ip });
  return { ...created, token };
}

async function revokeToken(db: Db, teamId: string | null, tokenId: string, userId: string, ip: string | null) {
  const { count } = await db.workerToken.updateMany({ where: { id: tokenId, teamId, revokedAt: null }, data: { revokedAt: new Date() } });
  if (count === 0) throw new TRPCError({ code: 'NOT_FOUND', message: 'No active token with that id' });
  await audit(db, { teamId, actorUserId: userId, action: 'worker_token.revoked', targetType: 'worker_token', targetId: tokenId, ipAddress: ip });
  return { ok: true };
}

/** Registration tokens for a team's own worker pool (admins), and for the shared pool (installation admins). */
export const workerTokensRouter = router({
  list: teamProcedure('ADMIN').query(({ ctx }) =>
    ctx.db.workerToken.findMany({ where: { teamId: ctx.membership.teamId }, orderBy: { createdAt: 'desc' }, select: tokenSelect }),
  ),
  create: teamProcedure('ADMIN')
    .input(createInput)
    .mutation(({ ctx, input }) => createToken(ctx.db, ctx.membership.teamId, ctx.user.id, input, ctx.ip)),
  revoke: teamProcedure('ADMIN')
    .input(z.object({ tokenId: z.string().min(1).max(64) }))
    .mutation(({ ctx, input }) => revokeToken(ctx.db, ctx.membership.teamId, input.tokenId, ctx.user.id, ctx.ip)),

  listShared: installationAdminProcedure.query(({ ctx }) =>
    ctx.db.workerToken.findMany({ where: { teamId: null }, orderBy: { createdAt: 'desc' }, select: tokenSelect }),
  ),
  createShared: installationAdminProcedure
    .input(createInput)
    .mutation(({ ctx, input }) => createToken(ctx.db, null, ctx.user.id, input, ctx.ip)),
  revokeShared: installationAdminProcedure
    .input(z.object({ tokenId: z.string().min(1).max(64) }))
    .mutation(({ ctx, input }) => revokeToken(ctx.db, null, input.tokenId, ctx.user.id, ctx.ip)),
});
