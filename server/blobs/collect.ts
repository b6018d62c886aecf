import { type Db } from '../db/client';
import { type Prisma } from '../db/generated/prisma/client';
import { type BlobStore } from './store';

/**
 * Blobs are shared by content (two models with the same file, two jobs with the same checkpoint
 * bytes), so nothing owns one: a blob goes when no row names it any more. Rows and files cannot
 * change together atomically, so a PostgreSQL advisory lock per key orders the two sides:
 *
 * - a writer that may find a blob already there (storing bytes the store has is free) holds the
 *   key's lock shared from before it stores the bytes until its row is committed (`holdBlobKeys`
 *   inside its transaction);
 * - the collector takes the key's lock exclusively, and only then looks for rows naming the key
 *   and removes the file when there are none.
 *
 * So a collector either runs wholly before a writer's store (the file is gone; the writer writes
 * it again) or after its commit (the row is seen and the file kept), never between.
 */

/** The (int, int) advisory locks' first key for blob keys ('WBLB'); the second is hashtext(key). */
const BLOB_LOCK = 0x57424c42;

/** Storing a model's files and committing its row can take minutes for tens of gigabytes. */
export const BLOB_WRITE_TRANSACTION_MS = 30 * 60_000;

/** Holds each key's lock shared until the transaction ends (in one order, so no two holders deadlock). */
export async function holdBlobKeys(tx: Prisma.TransactionClient, keys: string[]): Promise<void> {
  for (const key of [...new Set(keys)].sort()) await tx.$executeRaw`SELECT pg_advisory_xact_lock_shared(${BLOB_LOCK}::int, hashtext(${key}))`;
}

/** Whether any row names the key: a model's files, a checkpoint, a dataset version. */
async function referenced(tx: Prisma.TransactionClient, key: string): Promise<boolean> {
  const rows = await tx.$queryRaw<{ one: number }[]>`
    SELECT 1 AS one FROM "PretrainedModel" WHERE files @> ${JSON.stringify([{ storageKey: key }])}::jsonb
    UNION ALL SELECT 1 FROM "Checkpoint" WHERE "storageKey" = ${key}
    UNION ALL SELECT 1 FROM "DatasetVersion" WHERE "storageKey" = ${key}
    LIMIT 1`;
  return rows.length > 0;
}

/**
 * Removes those of the keys' blobs that no row names, once the rows that named them are deleted
 * (committed). Waits for a writer holding a key (an import of the same content under way), which
 * then keeps it. Answers the keys removed.
 */
export async function collectBlobs(db: Db, blobs: BlobStore, keys: string[]): Promise<string[]> {
  const removed: string[] = [];
  // One transaction per key: a key's lock is held only while that key is decided.
  for (const key of [...new Set(keys)].sort()) {
    const gone = await db.$transaction(
      async (tx) => {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(${BLOB_LOCK}::int, hashtext(${key}))`;
        if (await referenced(tx, key)) return false;
        await blobs.remove(key);
        return true;
      },
      { timeout: BLOB_WRITE_TRANSACTION_MS, maxWait: 60_000 },
    );
    if (gone) removed.push(key);
  }
  return removed;
}
