import type { Db } from '../db/client';
import type { Prisma } from '../db/generated/prisma/client';

export interface AuditEntry {
  teamId?: string | null;
  actorUserId?: string | null;
  action: string;
  targetType?: string;
  targetId?: string;
  ipAddress?: string | null;
  details?: Prisma.InputJsonObject;
}

/** Records a security-relevant action. Never throws: a failed audit write must not undo the action. */
export async function audit(db: Db | Prisma.TransactionClient, entry: AuditEntry): Promise<void> {
  try {
    await db.auditLog.create({
      data: {
        teamId: entry.teamId ?? null,
        actorUserId: entry.actorUserId ?? null,
        action: entry.action,
        targetType: entry.targetType,
        targetId: entry.targetId,
        ipAddress: entry.ipAddress ?? null,
        details: entry.details ?? {},
      },
    });
  } catch (error) {
    console.error('[audit] could not record', entry.action, error);
  }
}
