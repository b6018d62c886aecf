import type { BlobStore } from '../blobs/store';
import type { Db } from '../db/client';
import { datasetContentHash } from '../datasets/store-version';

// A data-dependent environment names its dataset files in its manifest (`dataset.train`,
// `dataset.heldOut`); the team's datasets hold them as `<environment>/<file>` (the templates are
// seeded so, and the CLI uploads an environment folder's files so). Saves dry-run on the train
// file's latest version when the editor sends no text, and jobs name these versions.

export type DatasetSplit = 'train' | 'heldOut';

/** The manifest's dataset files, read loosely (a stored manifest was validated when saved). */
export function manifestDatasetFiles(manifest: unknown): Partial<Record<DatasetSplit, string>> {
  const files = (manifest as { dataset?: { train?: unknown; heldOut?: unknown } } | null)?.dataset;
  if (!files) return {};
  return {
    ...(typeof files.train === 'string' ? { train: files.train } : {}),
    ...(typeof files.heldOut === 'string' ? { heldOut: files.heldOut } : {}),
  };
}

/** The team dataset's name for an environment's file. */
export const environmentDatasetName = (environment: string, file: string): string => `${environment}/${file}`;

export interface EnvironmentDatasetVersion {
  split: DatasetSplit;
  /** The file the manifest names ("data/train.jsonl"). */
  file: string;
  /** The team's dataset of that file ("math/data/train.jsonl"). */
  name: string;
  datasetId: string | null;
  /** Its latest version, or null when the team has none: upload one under `name`. */
  latest: { id: string; version: number; rowCount: number; bytes: number; createdAt: Date } | null;
}

/** The team's datasets an environment's manifest reads, one per split it names. */
export async function environmentDatasets(db: Db, teamId: string, environment: string, manifest: unknown): Promise<EnvironmentDatasetVersion[]> {
  const out: EnvironmentDatasetVersion[] = [];
  for (const [split, file] of Object.entries(manifestDatasetFiles(manifest)) as Array<[DatasetSplit, string]>) {
    const name = environmentDatasetName(environment, file);
    const dataset = await db.dataset.findFirst({
      where: { teamId, name, archivedAt: null },
      select: { id: true, versions: { orderBy: { version: 'desc' }, take: 1, select: { id: true, version: true, rowCount: true, bytes: true, createdAt: true } } },
    });
    const latest = dataset?.versions[0];
    out.push({ split, file, name, datasetId: dataset?.id ?? null, latest: latest ? { ...latest, bytes: Number(latest.bytes) } : null });
  }
  return out;
}

/**
 * The dataset a save's dry run reads: the text the caller sent (recorded as the team's version
 * with the same content, if there is one), else the latest version of the environment's train
 * dataset. Undefined for an environment that reads no dataset, or when the team has none yet
 * (the dry run then warns that it was given no rows).
 */
export async function dryRunDataset(
  db: Db,
  blobs: BlobStore,
  teamId: string,
  environment: string,
  manifest: unknown,
  text: string | undefined,
): Promise<{ text: string; versionId: string | null } | undefined> {
  const file = manifestDatasetFiles(manifest).train;
  if (file === undefined) return text === undefined ? undefined : { text, versionId: null };
  const name = environmentDatasetName(environment, file);
  if (text !== undefined) {
    const same = await db.datasetVersion.findFirst({ where: { contentHash: datasetContentHash(text), dataset: { teamId, name } }, select: { id: true } });
    return { text, versionId: same?.id ?? null };
  }
  const latest = await db.datasetVersion.findFirst({
    where: { dataset: { teamId, name, archivedAt: null } },
    orderBy: { version: 'desc' },
    select: { id: true, storageKey: true },
  });
  if (!latest) return undefined;
  return { text: (await blobs.get(latest.storageKey)).toString('utf8'), versionId: latest.id };
}
