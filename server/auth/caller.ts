import type { IncomingHttpHeaders } from 'node:http';
import type { Db } from '../db/client';
import { audit } from './audit';
import type { Auth } from './auth';
import { hashSecret } from './tokens';

/** Who is calling: a signed-in user, or a user acting through an API key bound to one team. */
export interface Caller {
  user: { id: string; email: string; name: string; isInstallationAdmin: boolean };
  sessionId: string | null;
  /** Set when the call came with an API key: the caller may act in this team only. */
  apiKey: { id: string; teamId: string } | null;
}

export const API_KEY_PREFIX = 'wsk_';
/** lastUsedAt is written at most this often per key, to keep hot keys off the write path. */
const LAST_USED_RESOLUTION_MS = 60_000;

function toHeaders(headers: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.append(key, v);
  }
  return out;
}

const userSelect = { id: true, email: true, name: true, isInstallationAdmin: true } as const;

/** A credential that was presented and refused: the answer says why, and the refusal is audited. */
export class CredentialRefused extends Error {}

/**
 * Resolves `Authorization: Bearer wsk_…` or the session cookie. Null when there is neither;
 * CredentialRefused when an API key is unknown, revoked or expired.
 */
export async function resolveCaller(db: Db, auth: Auth, headers: IncomingHttpHeaders, ip: string | null = null): Promise<Caller | null> {
  const bearer = /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? '')?.[1];
  if (bearer) {
    if (!bearer.startsWith(API_KEY_PREFIX) || bearer.length > 200) throw new CredentialRefused('The API key was refused: it is not a Whetstone API key (wsk_…)');
    const key = await db.apiKey.findUnique({ where: { keyHash: hashSecret(bearer) }, include: { user: { select: userSelect } } });
    const why = !key ? 'unknown' : key.revokedAt ? 'revoked' : key.expiresAt && key.expiresAt < new Date() ? 'expired' : null;
    if (why) {
      await audit(db, { teamId: key?.teamId, action: 'api_key.refused', targetType: 'api_key', targetId: key?.id, details: { why, prefix: bearer.slice(0, 12) }, ipAddress: ip });
      throw new CredentialRefused(`The API key was refused: it is ${why === 'unknown' ? 'not known here' : why}`);
    }
    if (!key) return null;
    if (!key.lastUsedAt || Date.now() - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      await db.apiKey.update({ where: { id: key.id }, data: { lastUsedAt: new Date() } });
    }
    return { user: key.user, sessionId: null, apiKey: { id: key.id, teamId: key.teamId } };
  }
  if (!headers.cookie) return null;
  const session = await auth.api.getSession({ headers: toHeaders(headers) });
  if (!session) return null;
  const user = await db.user.findUnique({ where: { id: session.user.id }, select: userSelect });
  return user ? { user, sessionId: session.session.id, apiKey: null } : null;
}
