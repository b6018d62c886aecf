import { parseManifest } from '../../sdk/manifest';
import type { Db } from '../db/client';
import type { Prisma } from '../db/generated/prisma/client';
import { storedJson } from '../db/stored-json';
import { environmentSecrets } from '../secrets/environment-secrets';
import { environmentContentHash } from './content-hash';
import type { DryRunReport } from '../../sdk/dry-run-report';
import type { DryRunPool } from './dry-run-pool';

/** Episodes a save is dry-run for (in the pool's budget, dry-run-pool.ts). */
export const DRY_RUN_EPISODES = 8;

export interface SaveVersionInput {
  teamId: string;
  userId: string;
  name: string;
  description?: string;
  entry: string;
  files: Record<string, string>;
  manifest: unknown;
  /** Dataset text for the dry run of a data-dependent environment (its train split). */
  datasetText?: string;
  /** The team's dataset version that text is, when known (recorded on the version: datasets.usage). */
  datasetVersionId?: string | null;
  /** The version the editor's content started from: a newer latest version is answered as a conflict. */
  baseVersionId?: string;
}

/** The environment moved on since the version a save started from (another tab or user saved). */
export interface SaveConflict {
  /** The latest version before this save. */
  latestVersion: number;
  latestVersionId: string;
  createdBy: { id: string; name: string } | null;
}

export type SaveVersionResult =
  | { ok: false; problems: string[] }
  | {
      ok: true;
      environmentId: string;
      versionId: string;
      version: number;
      created: boolean;
      validation: DryRunReport | null;
      /** Set when `baseVersionId` was given and is not the latest version: the save still stands (versions are immutable). */
      conflict: SaveConflict | null;
    };

/**
 * Saves an environment version immutably under its content hash: the same content saved again
 * returns the existing version. A new version is dry-run in the sandbox before the answer, so
 * compile errors and runtime errors come back with their file, line and column.
 */
export async function saveEnvironmentVersion(db: Db, dryRuns: DryRunPool, input: SaveVersionInput, secretsKey?: Buffer): Promise<SaveVersionResult> {
  const parsed = parseManifest(input.manifest);
  if (!parsed.ok) return { ok: false, problems: parsed.problems.map((p) => `manifest.${p}`) };
  // An HTTP environment's code runs on its servers: it needs no entry file here.
  if (!parsed.manifest.server && !(input.entry in input.files)) return { ok: false, problems: [`entry: ${input.entry} is not one of the files`] };
  const manifest = parsed.manifest as unknown as Prisma.InputJsonObject;
  const contentHash = environmentContentHash({ entry: input.entry, files: input.files, manifest });
  const environment = await db.environment.upsert({
    where: { teamId_name: { teamId: input.teamId, name: input.name } },
    update: input.description !== undefined ? { description: input.description } : {},
    create: { teamId: input.teamId, name: input.name, description: input.description ?? parsed.manifest.description ?? '' },
  });
  const conflict = () => (input.baseVersionId === undefined ? null : conflictWith(db, environment.id, input.baseVersionId));
  const existing = await db.environmentVersion.findUnique({ where: { environmentId_contentHash: { environmentId: environment.id, contentHash } } });
  const { kind, agents, limits, server } = parsed.manifest;
  const dryRun = async () => {
    // Served over HTTP: the dry run calls the servers with the headers they will get in training.
    const secrets = server && secretsKey ? await environmentSecrets(db, secretsKey, input.teamId, server.headers) : {};
    return dryRuns.run(input.teamId, {
      source: { files: input.files, entry: input.entry },
      secrets,
      manifest: { kind, agents, limits, ...(server ? { server } : {}) },
      dataset: input.datasetText && parsed.manifest.dataset ? { path: parsed.manifest.dataset.train, text: input.datasetText } : undefined,
      episodes: DRY_RUN_EPISODES,
    });
  };
  if (existing) {
    // The same content again answers its version. An HTTP game's version that failed its dry run
    // is dry-run again, though: its servers (down, a missing secret, no rows sent) may be fixed
    // since, and the content, being the same, cannot make a new version to show it.
    if (server && existing.validationStatus === 'INVALID') {
      const again = await dryRun();
      // A pass is written whatever happened meanwhile; a failure only over a failure, so that a
      // slow dry run that started while the server was down cannot undo a later one that passed.
      await db.environmentVersion.updateMany({
        where: { id: existing.id, ...(again.ok ? {} : { validationStatus: 'INVALID' }) },
        data: { validationStatus: again.ok ? 'VALID' : 'INVALID', validation: storedJson(again), dryRunDatasetVersionId: input.datasetVersionId ?? null },
      });
      const stored = await db.environmentVersion.findUniqueOrThrow({ where: { id: existing.id }, select: { validation: true } });
      return { ok: true, environmentId: environment.id, versionId: existing.id, version: existing.version, created: false, validation: stored.validation as DryRunReport | null, conflict: await conflict() };
    }
    return { ok: true, environmentId: environment.id, versionId: existing.id, version: existing.version, created: false, validation: existing.validation as DryRunReport | null, conflict: await conflict() };
  }
  const report = await dryRun();
  // Asked after the dry run, which takes a while: a save that landed meanwhile is a conflict too.
  const moved = await conflict();
  // Versions are numbered in order; a concurrent save of other content retries on the unique key.
  for (let tries = 0; ; tries++) {
    const last = await db.environmentVersion.findFirst({ where: { environmentId: environment.id }, orderBy: { version: 'desc' } });
    try {
      const created = await db.environmentVersion.create({
        data: {
          environmentId: environment.id, version: (last?.version ?? 0) + 1, contentHash, entry: input.entry,
          files: input.files, manifest, createdById: input.userId, dryRunDatasetVersionId: input.datasetVersionId ?? null,
          validationStatus: report.ok ? 'VALID' : 'INVALID', validation: storedJson(report),
        },
      });
      await db.environment.update({ where: { id: environment.id }, data: { updatedAt: new Date() } });
      return { ok: true, environmentId: environment.id, versionId: created.id, version: created.version, created: true, validation: report, conflict: moved };
    } catch (error) {
      if (tries >= 3 || (error as { code?: string }).code !== 'P2002') throw error;
    }
  }
}

/** The latest version, when it is not the one the save started from. */
async function conflictWith(db: Db, environmentId: string, baseVersionId: string): Promise<SaveConflict | null> {
  const latest = await db.environmentVersion.findFirst({
    where: { environmentId },
    orderBy: { version: 'desc' },
    select: { id: true, version: true, createdBy: { select: { id: true, name: true } } },
  });
  if (!latest || latest.id === baseVersionId) return null;
  return { latestVersion: latest.version, latestVersionId: latest.id, createdBy: latest.createdBy };
}
