/**
 * A team's secrets in the database: set (create or replace), list (names, never values), delete,
 * and the values an environment's headers name, decrypted for what plays it. Every query is
 * scoped by team.
 */
import type { Db } from '../db/client';
import { decryptSecret, encryptSecret } from './secret-box';

export async function setTeamSecret(db: Db, key: Buffer, input: { teamId: string; name: string; value: string; userId: string }): Promise<{ id: string; created: boolean }> {
  const ciphertext = encryptSecret(key, { teamId: input.teamId, name: input.name }, input.value);
  const where = { teamId_name: { teamId: input.teamId, name: input.name } };
  const existed = await db.teamSecret.findUnique({ where, select: { id: true } });
  const row = await db.teamSecret.upsert({
    where,
    create: { teamId: input.teamId, name: input.name, ciphertext, setById: input.userId },
    update: { ciphertext, setById: input.userId },
    select: { id: true },
  });
  return { id: row.id, created: !existed };
}

export function listTeamSecrets(db: Db, teamId: string) {
  return db.teamSecret.findMany({
    where: { teamId },
    orderBy: { name: 'asc' },
    select: { id: true, name: true, createdAt: true, updatedAt: true, setBy: { select: { id: true, name: true, email: true } } },
  });
}

/** The deleted secret's id, or null when the team has none of that name. */
export async function deleteTeamSecret(db: Db, teamId: string, name: string): Promise<string | null> {
  const row = await db.teamSecret.findUnique({ where: { teamId_name: { teamId, name } }, select: { id: true } });
  if (!row) return null;
  await db.teamSecret.deleteMany({ where: { id: row.id, teamId } });
  return row.id;
}

/**
 * The values of the named secrets the team has set (a name it has not set is left out: the
 * caller reports it, see sdk/team-secrets.ts). Throws SecretUnreadable for one that does not decrypt.
 */
export async function teamSecretValues(db: Db, key: Buffer, teamId: string, names: string[]): Promise<Record<string, string>> {
  if (names.length === 0) return {};
  const rows = await db.teamSecret.findMany({ where: { teamId, name: { in: names } }, select: { name: true, ciphertext: true } });
  return Object.fromEntries(rows.map((r) => [r.name, decryptSecret(key, { teamId, name: r.name }, r.ciphertext)]));
}
