import type { Db } from '../db/client';
import type { Prisma } from '../db/generated/prisma/client';

// The one way to wake the scheduler's leader, wherever it runs: a NOTIFY on this channel, which
// loop.ts LISTENs to. Its own module so that whoever changes jobs or workers (routers, the jobs
// service, the worker protocol) can wake the scheduler without importing the loop.

export const SCHEDULER_CHANNEL = 'whetstone_scheduler';

/**
 * Wakes the leader (submit, cancel, finish, worker changes). Given a transaction, the NOTIFY is
 * delivered when it commits, so the leader never reads the database before the change.
 */
export async function notifyScheduler(db: Db | Prisma.TransactionClient, reason: string): Promise<void> {
  await db.$executeRaw`SELECT pg_notify(${SCHEDULER_CHANNEL}, ${reason})`;
}
