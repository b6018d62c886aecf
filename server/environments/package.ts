import { z } from 'zod';
import { environmentNameSchema } from '../../sdk/manifest';
import type { BlobStore } from '../blobs/store';
import type { Db } from '../db/client';
import { datasetContentHash, MAX_DATASET_CHARS, storeDatasetVersion } from '../datasets/store-version';
import { parseManifest } from '../../sdk/manifest';
import { environmentContentHash } from './content-hash';
import { environmentDatasetName, manifestDatasetFiles, type DatasetSplit } from './dataset';
import type { DryRunPool } from './dry-run-pool';
import { saveEnvironmentVersion, type SaveVersionResult } from './save-version';
import { environmentSourceInput } from './source-input';

// An environment package: one environment version (code or an HTTP manifest, its README and
// reward tests, which are files of the version) with the dataset versions it reads, as one JSON
// file (`.wsenv`). It imports into any team of any installation keeping its content hash, so a
// team can share an environment as Prime Intellect's Environments Hub does: the hash says it is
// the same environment, and the gallery counts the runs of every team on it by that hash.

const PACKAGE_FORMAT = 'whetstone-environment';
/** The newest package format this installation reads; a newer one is refused, naming both. */
const PACKAGE_FORMAT_VERSION = 1;

const sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 in hex');
const datasetFile = z.string().regex(/^(?!\/)(?!.*\.\.)[A-Za-z0-9_./-]{1,200}\.jsonl$/, 'a relative path ending in .jsonl');

/** What `environments.exportPackage` writes and `environments.importPackage` reads. */
export const environmentPackageSchema = z.object({
  format: z.literal(PACKAGE_FORMAT, { error: `not a Whetstone environment package: its "format" must be "${PACKAGE_FORMAT}"` }),
  formatVersion: z.number().int().min(1),
  exportedAt: z.string().max(64),
  /** Where it came from, for the reader (not checked). */
  source: z.object({ installation: z.string().max(200).optional(), team: z.string().max(200), environment: z.string().max(200), version: z.number().int() }).optional(),
  name: environmentNameSchema,
  description: z.string().max(2000).default(''),
  /** sha256 of the canonical JSON of { entry, files, manifest } (server/environments/content-hash.ts). */
  contentHash: sha256,
  ...environmentSourceInput,
  datasets: z
    .array(z.object({ split: z.enum(['train', 'heldOut']), file: datasetFile, contentHash: sha256, text: z.string().min(1).max(MAX_DATASET_CHARS) }))
    .max(2),
});
export type EnvironmentPackage = z.infer<typeof environmentPackageSchema>;

/**
 * A version of the team as a package, or null when the team has no such version. For the gallery
 * (`published`), only what was published goes: the train rows its dry run read, never the team's
 * newer uploads or its held-out rows.
 */
export async function exportEnvironmentPackage(db: Db, blobs: BlobStore, teamId: string, versionId: string, opts: { published?: boolean } = {}): Promise<EnvironmentPackage | null> {
  const version = await db.environmentVersion.findFirst({
    where: { id: versionId, environment: { teamId } },
    select: {
      version: true,
      contentHash: true,
      entry: true,
      files: true,
      manifest: true,
      dryRunDatasetVersion: { select: { contentHash: true, storageKey: true, dataset: { select: { name: true } } } },
      environment: { select: { name: true, description: true, team: { select: { name: true } } } },
    },
  });
  if (!version) return null;
  const env = version.environment;
  const datasets: EnvironmentPackage['datasets'] = [];
  for (const [split, file] of Object.entries(manifestDatasetFiles(version.manifest)) as Array<[DatasetSplit, string]>) {
    const name = environmentDatasetName(env.name, file);
    // The train rows its dry run read, where known (what it was checked on); else the newest.
    const dryRun = version.dryRunDatasetVersion;
    const checked = split === 'train' && dryRun?.dataset.name === name ? dryRun : null;
    const stored =
      checked ??
      (opts.published
        ? null
        : await db.datasetVersion.findFirst({ where: { dataset: { teamId, name, archivedAt: null } }, orderBy: { version: 'desc' }, select: { contentHash: true, storageKey: true } }));
    if (stored) datasets.push({ split, file, contentHash: stored.contentHash, text: (await blobs.get(stored.storageKey)).toString('utf8') });
  }
  return {
    format: PACKAGE_FORMAT,
    formatVersion: PACKAGE_FORMAT_VERSION,
    exportedAt: new Date().toISOString(),
    source: { team: env.team.name, environment: env.name, version: version.version },
    name: env.name,
    description: env.description,
    contentHash: version.contentHash,
    entry: version.entry,
    files: version.files as Record<string, string>,
    manifest: version.manifest as Record<string, unknown>,
    datasets,
  };
}

export interface ImportPackageInput {
  teamId: string;
  userId: string;
  package: EnvironmentPackage;
  /** Another name in this team (the manifest names it, so its content hash changes). */
  name?: string;
}

export type ImportPackageResult =
  | { ok: false; problems: string[] }
  | (Extract<SaveVersionResult, { ok: true }> & { name: string; contentHash: string; keptContentHash: boolean; datasets: Array<{ name: string; version: number }> });

/**
 * Imports a package as a version of the team's environment of its name (a new environment, or
 * the next version of the one there; the same content again answers the version there). Its
 * files and datasets are checked against the hashes it declares first: a package changed after
 * export, or of a newer format, is refused with the reason and nothing is stored.
 */
export async function importEnvironmentPackage(deps: { db: Db; blobs: BlobStore; dryRuns: DryRunPool }, input: ImportPackageInput): Promise<ImportPackageResult> {
  const pkg = input.package;
  if (pkg.formatVersion > PACKAGE_FORMAT_VERSION) {
    return { ok: false, problems: [`the package is format version ${pkg.formatVersion}, and this Whetstone reads up to version ${PACKAGE_FORMAT_VERSION}: upgrade Whetstone to import it`] };
  }
  const computed = environmentContentHash({ entry: pkg.entry, files: pkg.files, manifest: pkg.manifest });
  if (computed !== pkg.contentHash) {
    return { ok: false, problems: [`its content hash does not match its files (declared ${pkg.contentHash.slice(0, 12)}…, computed ${computed.slice(0, 12)}…): the package was changed after it was exported`] };
  }
  const wanted = manifestDatasetFiles(pkg.manifest);
  for (const d of pkg.datasets) {
    if (datasetContentHash(d.text) !== d.contentHash) return { ok: false, problems: [`dataset ${d.file}: its content hash does not match its rows: the package was changed after it was exported`] };
    if (wanted[d.split] !== d.file) return { ok: false, problems: [`dataset ${d.file}: the manifest does not name it as its ${d.split === 'train' ? 'train' : 'held-out'} file`] };
  }

  const name = input.name ?? pkg.name;
  // The manifest names its environment: a package imported under another name is other content.
  const manifest = name === pkg.manifest.name ? pkg.manifest : { ...pkg.manifest, name };
  // What a save would refuse is refused before any dataset is stored.
  const parsed = parseManifest(manifest);
  if (!parsed.ok) return { ok: false, problems: parsed.problems.map((p) => `manifest.${p}`) };
  if (!parsed.manifest.server && !(pkg.entry in pkg.files)) return { ok: false, problems: [`entry: ${pkg.entry} is not one of the files`] };
  if (new Set(pkg.datasets.map((d) => d.split)).size !== pkg.datasets.length) return { ok: false, problems: ['datasets: a split is given twice'] };
  const datasets: Array<{ name: string; version: number }> = [];
  let trainText: string | undefined;
  let trainVersionId: string | undefined;
  for (const d of pkg.datasets) {
    const datasetName = environmentDatasetName(name, d.file);
    const stored = await storeDatasetVersion(deps.db, deps.blobs, { teamId: input.teamId, name: datasetName, text: d.text, createdById: input.userId });
    if (!stored.ok) return { ok: false, problems: stored.problems.map((p) => `dataset ${d.file}, line ${p.line}: ${p.message}`) };
    datasets.push({ name: datasetName, version: stored.version });
    if (d.split === 'train') {
      trainText = d.text;
      trainVersionId = stored.versionId;
    }
  }
  const saved = await saveEnvironmentVersion(deps.db, deps.dryRuns, {
    teamId: input.teamId,
    userId: input.userId,
    name,
    description: pkg.description || undefined,
    entry: pkg.entry,
    files: pkg.files,
    manifest,
    datasetText: trainText,
    datasetVersionId: trainVersionId,
  });
  if (!saved.ok) return saved;
  const version = await deps.db.environmentVersion.findUniqueOrThrow({ where: { id: saved.versionId }, select: { contentHash: true } });
  return { ...saved, name, contentHash: version.contentHash, keptContentHash: version.contentHash === pkg.contentHash, datasets };
}
