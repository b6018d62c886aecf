import type { Db } from '../db/client';
import { hashSecret } from './tokens';

/** The sign-up page sends the invitation it came from in this header. */
export const INVITATION_HEADER = 'x-whetstone-invitation';

export type UsableInvitation =
  | { invitation: { id: string; teamId: string; role: 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER'; email: string | null } }
  | { error: string };

/**
 * An invitation that can still be accepted: not expired, not used, not revoked, and, when it
 * names an e-mail, for that e-mail. The messages say which, since the link's holder may know.
 */
export async function findUsableInvitation(db: Db, token: string, email?: string): Promise<UsableInvitation> {
  if (!token || token.length > 200) return { error: 'This invitation link is not valid.' };
  const found = await db.invitation.findUnique({ where: { tokenHash: hashSecret(token) } });
  if (!found) return { error: 'This invitation link is not valid.' };
  if (found.revokedAt) return { error: 'This invitation was revoked. Ask for a new one.' };
  if (found.acceptedAt) return { error: 'This invitation was already used. Ask for a new one.' };
  if (found.expiresAt < new Date()) return { error: 'This invitation has expired. Ask for a new one.' };
  if (found.email && email !== undefined && found.email.toLowerCase() !== email.toLowerCase()) {
    return { error: 'This invitation is for another e-mail address.' };
  }
  return { invitation: { id: found.id, teamId: found.teamId, role: found.role, email: found.email } };
}
