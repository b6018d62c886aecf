import type { Db } from './client';

const LOCAL_OWNER_EMAIL = 'owner@localhost';

/**
 * First start: an owner account and a default team, so a fresh install is usable at once.
 * Later starts change nothing. Returns the owner's id.
 */
export async function ensureOwnerAndTeam(db: Db): Promise<{ ownerId: string; created: boolean }> {
  const existing = await db.membership.findFirst({ where: { role: 'OWNER' }, orderBy: { createdAt: 'asc' } });
  if (existing) return { ownerId: existing.userId, created: false };
  const ownerId = await db.$transaction(async (tx) => {
    const owner = await tx.user.upsert({
      where: { email: LOCAL_OWNER_EMAIL },
      update: {},
      create: { email: LOCAL_OWNER_EMAIL, name: 'Owner', emailVerified: true, isInstallationAdmin: true },
    });
    const team = await tx.team.create({
      data: { name: 'Default team', slug: 'default', quota: { create: {} } },
    });
    await tx.membership.create({ data: { teamId: team.id, userId: owner.id, role: 'OWNER' } });
    await tx.auditLog.create({
      data: { teamId: team.id, actorUserId: owner.id, action: 'team.created', targetType: 'team', targetId: team.id, details: { reason: 'first start' } },
    });
    return owner.id;
  });
  return { ownerId, created: true };
}
