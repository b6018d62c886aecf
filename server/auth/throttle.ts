import type { Db } from '../db/client';

// Sign-in attempts are limited per account and per address, counted from the audit log's
// failure entries, so the limit holds across server replicas and restarts.

export const SIGN_IN_WINDOW_MINUTES = 15;
export const MAX_FAILURES_PER_ACCOUNT = 5;
const MAX_FAILURES_PER_ADDRESS = 20;
export const SIGN_IN_FAILED = 'auth.sign_in_failed';

export async function signInBlocked(db: Db, email: string, ip: string | null): Promise<string | null> {
  const since = new Date(Date.now() - SIGN_IN_WINDOW_MINUTES * 60_000);
  const [byAccount, byAddress] = await Promise.all([
    db.auditLog.count({ where: { action: SIGN_IN_FAILED, targetId: email.toLowerCase(), at: { gt: since } } }),
    ip ? db.auditLog.count({ where: { action: SIGN_IN_FAILED, ipAddress: ip, at: { gt: since } } }) : 0,
  ]);
  if (byAccount >= MAX_FAILURES_PER_ACCOUNT || byAddress >= MAX_FAILURES_PER_ADDRESS) {
    return `Too many failed sign-in attempts. Try again in ${SIGN_IN_WINDOW_MINUTES} minutes.`;
  }
  return null;
}
