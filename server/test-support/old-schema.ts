// Rows written into a database migrated only up to an older migration (the migration tests), by
// SQL rather than the Prisma client: the client knows today's columns, and inserting a Job with
// it names columns that later migrations add.
import { randomUUID } from 'node:crypto';
import type { TestDatabase } from './test-database';

/** A job with the columns every migration's Job has; its id. */
export async function insertJob(t: TestDatabase, teamId: string, ownerId: string, kind: string): Promise<string> {
  const id = `job-${randomUUID()}`;
  await t.db.$executeRawUnsafe(
    `INSERT INTO "Job" (id, "teamId", "ownerId", kind, config, "updatedAt") VALUES ($1, $2, $3, $4::"JobKind", '{}'::jsonb, now())`,
    id,
    teamId,
    ownerId,
    kind,
  );
  return id;
}
