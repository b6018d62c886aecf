import type { Db } from '../db/client';
import { hashSecret, newSecret } from './tokens';

const SIGN_IN_LINK_HOURS = 24;
const LOCAL_SIGN_IN = 'local-sign-in';

/**
 * A one-time sign-in link for local mode, printed on the console the way Jupyter prints its
 * token: whoever can read the console of the machine may sign in as the owner. Only the
 * token's hash is stored.
 */
export async function createSignInLink(db: Db, userId: string, baseUrl: string): Promise<string> {
  const token = newSecret();
  await db.verification.create({
    data: {
      identifier: `${LOCAL_SIGN_IN}:${userId}`,
      value: hashSecret(token),
      expiresAt: new Date(Date.now() + SIGN_IN_LINK_HOURS * 3600_000),
    },
  });
  return `${baseUrl}/api/auth/local-sign-in?token=${token}`;
}

/** Spends a sign-in link: returns its user once, then never again. */
export async function consumeSignInLink(db: Db, token: string): Promise<string | null> {
  if (!token || token.length > 200) return null;
  const found = await db.verification.findFirst({
    where: { value: hashSecret(token), identifier: { startsWith: `${LOCAL_SIGN_IN}:` } },
  });
  if (!found) return null;
  // deleteMany returns how many rows it removed, so two racing uses cannot both succeed.
  const { count } = await db.verification.deleteMany({ where: { id: found.id } });
  if (count !== 1 || found.expiresAt < new Date()) return null;
  return found.identifier.slice(LOCAL_SIGN_IN.length + 1);
}
