// Cluster providers as admins manage them (issue 22): created with their agent's credential
// (shown once), their settings validated field by field, and listed with their launches.
import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { PROVIDER_TOKEN_PREFIX, slurmSettingsSchema } from '../../sdk/provider-protocol';
import { audit } from '../auth/audit';
import { hashSecret, newSecret } from '../auth/tokens';
import type { Db } from '../db/client';
import { DISPLAY_PREFIX_LENGTH } from '../workers/credentials';

const providerNameSchema = z.string().trim().min(1).max(80);
export const createProviderInput = z.object({ name: providerNameSchema, kind: z.literal('SLURM'), settings: slurmSettingsSchema });
export const updateProviderInput = z.object({ providerId: z.string().min(1).max(64), settings: slurmSettingsSchema });
export const providerIdInput = z.object({ providerId: z.string().min(1).max(64) });

interface Actor {
  userId: string;
  ip: string | null;
}

export async function createProvider(db: Db, teamId: string | null, input: z.infer<typeof createProviderInput>, actor: Actor) {
  const token = `${PROVIDER_TOKEN_PREFIX}${newSecret()}`;
  const created = await db.clusterProvider.create({
    data: { teamId, name: input.name, kind: input.kind, settings: input.settings, tokenHash: hashSecret(token), prefix: token.slice(0, DISPLAY_PREFIX_LENGTH), createdById: actor.userId },
    select: { id: true, name: true, kind: true, prefix: true, createdAt: true },
  });
  await audit(db, { teamId, actorUserId: actor.userId, action: 'provider.created', targetType: 'provider', targetId: created.id, details: { name: input.name, kind: input.kind, pool: teamId ? 'team' : 'shared' }, ipAddress: actor.ip });
  return { ...created, token };
}

/** New settings; an admin's change also ends the backoff, so a fixed provider launches at once. */
export async function updateProvider(db: Db, teamId: string | null, input: z.infer<typeof updateProviderInput>, actor: Actor) {
  const { count } = await db.clusterProvider.updateMany({
    where: { id: input.providerId, teamId },
    data: { settings: input.settings, failures: 0, backoffUntil: null, lastError: null },
  });
  if (count === 0) throw new TRPCError({ code: 'NOT_FOUND', message: 'No provider with that id' });
  await audit(db, { teamId, actorUserId: actor.userId, action: 'provider.updated', targetType: 'provider', targetId: input.providerId, ipAddress: actor.ip });
  return { ok: true };
}

/** Deleted with its launches; their registration tokens are revoked first, so no worker still starting can join. */
export async function deleteProvider(db: Db, teamId: string | null, providerId: string, actor: Actor) {
  await db.workerToken.updateMany({ where: { revokedAt: null, launch: { providerId, provider: { teamId } } }, data: { revokedAt: new Date() } });
  const { count } = await db.clusterProvider.deleteMany({ where: { id: providerId, teamId } });
  if (count === 0) throw new TRPCError({ code: 'NOT_FOUND', message: 'No provider with that id' });
  await audit(db, { teamId, actorUserId: actor.userId, action: 'provider.deleted', targetType: 'provider', targetId: providerId, ipAddress: actor.ip });
  return { ok: true };
}

/** A pool's providers with their launches not yet over (and the last few that are), newest first. */
export async function listProviders(db: Db, teamId: string | null) {
  const providers = await db.clusterProvider.findMany({
    where: { teamId },
    orderBy: { createdAt: 'asc' },
    select: {
      id: true, name: true, kind: true, prefix: true, settings: true, lastSeenAt: true, lastError: true, failures: true, backoffUntil: true, createdAt: true,
      launches: {
        orderBy: { createdAt: 'desc' },
        take: 50,
        select: {
          id: true, state: true, externalId: true, reason: true, runningAt: true, endedAt: true, createdAt: true,
          workerToken: { select: { workers: { select: { id: true, name: true, state: true } } } },
        },
      },
    },
  });
  return providers.map(({ launches, ...p }) => ({
    ...p,
    launches: launches.map(({ workerToken, ...l }) => ({ ...l, worker: workerToken.workers[0] ?? null })),
  }));
}
