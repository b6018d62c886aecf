import { type Db, rawQuery } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import type { JobKind, JobState } from '../db/generated/prisma/enums';
import { manifestDatasetFiles, type DatasetSplit } from '../environments/dataset';

// Which environments and jobs use a dataset (the datasets page's "used by"): environments by
// name, as their manifests name datasets (`<environment>/<file>`, server/environments/dataset.ts);
// environment versions by the dataset version their dry run read; jobs by the version ids in
// their config. (Times come out of SQL as epoch milliseconds: the columns are UTC timestamps
// without time zone, which node-postgres would read as local time.)

/** Jobs listed per dataset, newest first. */
const JOBS_LISTED = 200;

export interface DatasetUsage {
  dataset: { id: string; name: string };
  /** Environments whose latest version's manifest reads this dataset: their next dry run and runs read its latest version. */
  environments: Array<{ environmentId: string; name: string; split: DatasetSplit; file: string; latestVersion: { id: string; version: number } }>;
  versions: Array<{
    id: string;
    version: number;
    rowCount: number;
    bytes: number;
    createdAt: Date;
    /** Environment versions whose dry run read this version. */
    dryRuns: Array<{ environmentId: string; environmentName: string; versionId: string; version: number }>;
    /** Jobs whose config names this version: as `datasetVersionId` (training or evaluation rows) or `evalDatasetVersionId` (held-out rows of a training run). */
    jobs: Array<{ id: string; kind: JobKind; state: JobState; createdAt: Date; owner: { id: string; name: string }; as: 'datasetVersionId' | 'evalDatasetVersionId' }>;
  }>;
}

export async function datasetUsage(db: Db, teamId: string, datasetId: string): Promise<DatasetUsage | null> {
  const dataset = await db.dataset.findFirst({
    where: { id: datasetId, teamId },
    select: {
      id: true,
      name: true,
      versions: {
        orderBy: { version: 'desc' },
        select: {
          id: true, version: true, rowCount: true, bytes: true, createdAt: true,
          dryRuns: { orderBy: { createdAt: 'desc' }, select: { id: true, version: true, environment: { select: { id: true, name: true } } } },
        },
      },
    },
  });
  if (!dataset) return null;
  const versionIds = dataset.versions.map((v) => v.id);
  const jobs = await rawQuery<{ id: string; kind: JobKind; state: JobState; createdAtMs: number; ownerId: string; ownerName: string; datasetVersionId: string | null; evalDatasetVersionId: string | null }>(
    db,
    Prisma.sql`
      SELECT j.id, j.kind::text AS kind, j.state::text AS state, (extract(epoch from j."createdAt") * 1000)::float8 AS "createdAtMs", u.id AS "ownerId", u.name AS "ownerName",
             j.config->>'datasetVersionId' AS "datasetVersionId", j.config->>'evalDatasetVersionId' AS "evalDatasetVersionId"
        FROM "Job" j JOIN "User" u ON u.id = j."ownerId"
       WHERE j."teamId" = ${teamId}
         AND (j.config->>'datasetVersionId' = ANY(${versionIds}::text[]) OR j.config->>'evalDatasetVersionId' = ANY(${versionIds}::text[]))
       ORDER BY j."createdAt" DESC LIMIT ${JOBS_LISTED}`,
  );
  return {
    dataset: { id: dataset.id, name: dataset.name },
    environments: await environmentsReading(db, teamId, dataset.name),
    versions: dataset.versions.map(({ dryRuns, bytes, ...v }) => ({
      ...v,
      bytes: Number(bytes),
      dryRuns: dryRuns.map((d) => ({ environmentId: d.environment.id, environmentName: d.environment.name, versionId: d.id, version: d.version })),
      jobs: jobs
        .filter((j) => j.datasetVersionId === v.id || j.evalDatasetVersionId === v.id)
        .map((j) => ({
          id: j.id, kind: j.kind, state: j.state, createdAt: new Date(j.createdAtMs), owner: { id: j.ownerId, name: j.ownerName },
          as: j.datasetVersionId === v.id ? ('datasetVersionId' as const) : ('evalDatasetVersionId' as const),
        })),
    })),
  };
}

/** The environment a dataset's name points at (`<environment>/<file>`), if its latest manifest names that file. */
async function environmentsReading(db: Db, teamId: string, datasetName: string): Promise<DatasetUsage['environments']> {
  const slash = datasetName.indexOf('/');
  if (slash <= 0) return [];
  const [name, file] = [datasetName.slice(0, slash), datasetName.slice(slash + 1)];
  const environment = await db.environment.findFirst({
    where: { teamId, name, archivedAt: null },
    select: { id: true, name: true, versions: { orderBy: { version: 'desc' }, take: 1, select: { id: true, version: true, manifest: true } } },
  });
  const latest = environment?.versions[0];
  if (!environment || !latest) return [];
  const files = manifestDatasetFiles(latest.manifest);
  return (Object.keys(files) as DatasetSplit[])
    .filter((split) => files[split] === file)
    .map((split) => ({ environmentId: environment.id, name: environment.name, split, file, latestVersion: { id: latest.id, version: latest.version } }));
}
