import { createHash } from 'node:crypto';
import { parseJsonlDataset, type DatasetProblem } from '../../sdk/dataset';
import type { ObjectSchema } from '../../sdk/environment/schema';
import type { BlobStore } from '../blobs/store';
import type { Db } from '../db/client';
import type { Prisma } from '../db/generated/prisma/client';

// Dataset versions are immutable JSONL files in the blob store, named by their team and dataset
// and deduplicated by content: the same bytes uploaded again answer the existing version.

/**
 * The largest JSONL text one upload takes (the datasets and environments routers both take
 * one); it must fit in a tRPC request (server/http.ts).
 */
export const MAX_DATASET_CHARS = 15_000_000;

/** The bad lines an answer lists (all are counted). */
const DATASET_PROBLEMS_SHOWN = 100;

/** Any JSON object is a row when no schema is declared. */
const ANY_ROW: ObjectSchema = { type: 'object', properties: {} };

export interface StoreDatasetInput {
  teamId: string;
  name: string;
  description?: string;
  text: string;
  rowSchema?: ObjectSchema;
  createdById?: string | null;
}

export type StoreDatasetResult =
  | { ok: false; problems: DatasetProblem[]; problemCount: number }
  | { ok: true; datasetId: string; versionId: string; version: number; rowCount: number; bytes: number; created: boolean };

/** A dataset version's content hash: sha256 of its bytes. */
export function datasetContentHash(text: string): string {
  return createHash('sha256').update(Buffer.from(text)).digest('hex');
}

export async function storeDatasetVersion(db: Db, blobs: BlobStore, input: StoreDatasetInput): Promise<StoreDatasetResult> {
  const { rows, problems, problemCount } = parseJsonlDataset(input.text, input.rowSchema ?? ANY_ROW, DATASET_PROBLEMS_SHOWN);
  if (problemCount > 0) return { ok: false, problems, problemCount };
  if (rows.length === 0) return { ok: false, problems: [{ line: 1, message: 'the file has no rows (one JSON object per line)' }], problemCount: 1 };
  const data = Buffer.from(input.text);
  const contentHash = datasetContentHash(input.text);
  // Written before the row that names it: a crash leaves an unreferenced blob, never a dangling key.
  const stored = await blobs.put(data, 'datasets');
  return db.$transaction(async (tx) => {
    // One writer per dataset name at a time, so version numbers are dense and the hash check holds.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`dataset:${input.teamId}:${input.name}`}))`;
    const dataset = await tx.dataset.upsert({
      where: { teamId_name: { teamId: input.teamId, name: input.name } },
      update: input.description !== undefined ? { description: input.description } : {},
      create: { teamId: input.teamId, name: input.name, description: input.description ?? '' },
    });
    const existing = await tx.datasetVersion.findUnique({ where: { datasetId_contentHash: { datasetId: dataset.id, contentHash } } });
    if (existing) {
      return { ok: true as const, datasetId: dataset.id, versionId: existing.id, version: existing.version, rowCount: existing.rowCount, bytes: Number(existing.bytes), created: false };
    }
    const last = await tx.datasetVersion.findFirst({ where: { datasetId: dataset.id }, orderBy: { version: 'desc' }, select: { version: true } });
    const version = await tx.datasetVersion.create({
      data: {
        datasetId: dataset.id,
        version: (last?.version ?? 0) + 1,
        contentHash,
        storageKey: stored.key,
        rowCount: rows.length,
        bytes: BigInt(stored.bytes),
        rowSchema: (input.rowSchema ?? undefined) as Prisma.InputJsonObject | undefined,
        createdById: input.createdById ?? null,
      },
    });
    await tx.dataset.update({ where: { id: dataset.id }, data: { updatedAt: new Date(), archivedAt: null } });
    return { ok: true as const, datasetId: dataset.id, versionId: version.id, version: version.version, rowCount: rows.length, bytes: stored.bytes, created: true };
  });
}
