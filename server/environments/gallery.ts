import type { Db } from '../db/client';
import { README_FILE } from '../../env-templates/load-template';

// The installation's gallery: the environment versions teams chose to publish
// (environments.publish), readable by every signed-in user and importable into their teams as
// packages (package.ts). Runs are counted by content hash over every team, so a version's count
// includes the runs on its imported copies: the hash says they are the same environment.

export interface Usage {
  /** TRAIN and SFT jobs on a version of this content, in any team. */
  runs: number;
  /** Teams with such a job. */
  teams: number;
}

async function usageByHash(db: Db, hashes: string[]): Promise<Map<string, Usage>> {
  if (hashes.length === 0) return new Map();
  const rows = await db.$queryRaw<Array<{ contentHash: string; runs: number; teams: number }>>`
    SELECT ev."contentHash" AS "contentHash", count(j.id)::int AS runs, count(DISTINCT j."teamId")::int AS teams
    FROM "Job" j
    JOIN "EnvironmentVersion" ev ON ev.id = j.config->>'environmentVersionId'
    WHERE ev."contentHash" = ANY(${hashes}) AND j.kind IN ('TRAIN', 'SFT')
    GROUP BY ev."contentHash"`;
  return new Map(rows.map((r) => [r.contentHash, { runs: r.runs, teams: r.teams }]));
}

const NO_USAGE: Usage = { runs: 0, teams: 0 };

const publishedVersion = {
  id: true,
  version: true,
  contentHash: true,
  publishedAt: true,
  validationStatus: true,
  manifest: true,
} as const;

function kindOf(manifest: unknown): string {
  const m = manifest as { kind?: unknown; server?: unknown } | null;
  const kind = typeof m?.kind === 'string' ? m.kind : 'single-turn';
  return m?.server ? `${kind}, over HTTP` : kind;
}

/** Environments with a published version, newest publication first; `search` matches name or description. */
export async function listGallery(db: Db, search?: string) {
  const text = search?.trim();
  const environments = await db.environment.findMany({
    where: {
      archivedAt: null,
      versions: { some: { publishedAt: { not: null } } },
      ...(text ? { OR: [{ name: { contains: text, mode: 'insensitive' as const } }, { description: { contains: text, mode: 'insensitive' as const } }] } : {}),
    },
    select: {
      id: true,
      name: true,
      description: true,
      team: { select: { name: true } },
      versions: { where: { publishedAt: { not: null } }, orderBy: { version: 'desc' }, select: publishedVersion },
    },
    // The most recently changed first (a publication is a change): what the page shows first.
    orderBy: { updatedAt: 'desc' },
    take: 200,
  });
  const usage = await usageByHash(db, environments.flatMap((e) => e.versions.map((v) => v.contentHash)));
  return environments
    .map((e) => {
      const latest = e.versions[0];
      const all = e.versions.map((v) => usage.get(v.contentHash) ?? NO_USAGE);
      return {
        environmentId: e.id,
        name: e.name,
        description: e.description,
        team: e.team.name,
        kind: kindOf(latest.manifest),
        publishedVersions: e.versions.length,
        latest: { versionId: latest.id, version: latest.version, publishedAt: latest.publishedAt!, validationStatus: latest.validationStatus },
        runs: all.reduce((n, u) => n + u.runs, 0),
      };
    })
    .sort((a, b) => b.latest.publishedAt.getTime() - a.latest.publishedAt.getTime());
}

/** One environment of the gallery: its published versions with their use, and the newest one's README; null when none is published. */
export async function galleryEntry(db: Db, environmentId: string) {
  const env = await db.environment.findFirst({
    where: { id: environmentId, archivedAt: null },
    select: {
      id: true,
      name: true,
      description: true,
      team: { select: { name: true } },
      versions: { where: { publishedAt: { not: null } }, orderBy: { version: 'desc' }, select: { ...publishedVersion, files: true, entry: true } },
    },
  });
  if (!env || env.versions.length === 0) return null;
  const usage = await usageByHash(db, env.versions.map((v) => v.contentHash));
  const newest = env.versions[0];
  const files = newest.files as Record<string, string>;
  return {
    environmentId: env.id,
    name: env.name,
    description: env.description,
    team: env.team.name,
    readme: typeof files[README_FILE] === 'string' ? files[README_FILE] : null,
    versions: env.versions.map((v) => ({
      versionId: v.id,
      version: v.version,
      contentHash: v.contentHash,
      publishedAt: v.publishedAt!,
      validationStatus: v.validationStatus,
      kind: kindOf(v.manifest),
      files: Object.keys(v.files as Record<string, string>).sort(),
      ...(usage.get(v.contentHash) ?? NO_USAGE),
    })),
  };
}
