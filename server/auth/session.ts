import type { IncomingMessage } from 'node:http';
import type { Db } from '../db/client';
import { hashSecret, newSecret } from './tokens';

export const SESSION_COOKIE = 'whetstone_session';
const SESSION_DAYS = 30;
const SIGN_IN_LINK_HOURS = 24;
const LOCAL_SIGN_IN = 'local-sign-in';

export interface SessionUser {
  id: string;
  email: string;
  name: string;
}

export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    if (key) out[key] = decodeURIComponent(part.slice(eq + 1).trim());
  }
  return out;
}

export function sessionCookie(token: string, secure: boolean, maxAgeSeconds = SESSION_DAYS * 86400): string {
  return [
    `${SESSION_COOKIE}=${token}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${maxAgeSeconds}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

export async function createSession(
  db: Db,
  userId: string,
  meta: { ip?: string; userAgent?: string },
): Promise<string> {
  const token = newSecret();
  await db.session.create({
    data: {
      token: hashSecret(token),
      userId,
      expiresAt: new Date(Date.now() + SESSION_DAYS * 86400_000),
      ipAddress: meta.ip,
      userAgent: meta.userAgent?.slice(0, 500),
    },
  });
  return token;
}

/** The signed-in user of a request, from its session cookie, or null. */
export async function sessionFromRequest(
  db: Db,
  req: Pick<IncomingMessage, 'headers'>,
): Promise<{ sessionId: string; user: SessionUser } | null> {
  const token = parseCookies(req.headers.cookie)[SESSION_COOKIE];
  if (!token || token.length > 200) return null;
  const session = await db.session.findUnique({
    where: { token: hashSecret(token) },
    include: { user: { select: { id: true, email: true, name: true } } },
  });
  if (!session || session.expiresAt < new Date()) return null;
  return { sessionId: session.id, user: session.user };
}

export async function deleteSession(db: Db, sessionId: string): Promise<void> {
  await db.session.deleteMany({ where: { id: sessionId } });
}

/**
 * A one-time sign-in link for local mode, printed on the console the way Jupyter prints its
 * token: whoever can read the console of the machine may sign in as the owner.
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
  return `${baseUrl}/auth/local?token=${token}`;
}

/** Spends a sign-in link: returns its user once, then never again. */
export async function consumeSignInLink(db: Db, token: string): Promise<string | null> {
  if (!token || token.length > 200) return null;
  const hashed = hashSecret(token);
  const found = await db.verification.findFirst({
    where: { value: hashed, identifier: { startsWith: `${LOCAL_SIGN_IN}:` } },
  });
  if (!found) return null;
  // deleteMany returns how many rows it removed, so two racing uses cannot both succeed.
  const { count } = await db.verification.deleteMany({ where: { id: found.id } });
  if (count !== 1 || found.expiresAt < new Date()) return null;
  return found.identifier.slice(LOCAL_SIGN_IN.length + 1);
}
