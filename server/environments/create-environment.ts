import type { z } from 'zod';
import { BLANK_TEMPLATE, loadTemplate, templateFiles, type TemplateName } from '../../env-templates/load-template';
import { httpManifest, type httpAnswersSchema } from '../../sdk/http-manifest';
import type { BlobStore } from '../blobs/store';
import type { Db } from '../db/client';
import { storeDatasetVersion } from '../datasets/store-version';
import { dryRunDataset, environmentDatasetName, manifestDatasetFiles } from './dataset';
import type { DryRunPool } from './dry-run-pool';
import { saveEnvironmentVersion, type SaveVersionResult } from './save-version';

// "New environment": a new environment of the team with a first version, from a built-in template,
// from the blank starting point (env-templates/blank/) or from a version of the team's own. Its
// dataset files come along as the new environment's datasets (`<name>/<file>`), so a
// data-dependent copy dry-runs and trains on the same rows.

export type CreateFrom = { template: TemplateName } | { blank: true } | { versionId: string } | { http: z.infer<typeof httpAnswersSchema> };

export interface CreateEnvironmentInput {
  teamId: string;
  userId: string;
  name: string;
  description?: string;
  from: CreateFrom;
}

export type CreateEnvironmentResult =
  | SaveVersionResult
  /** The name is taken, or the version to copy is not the team's. */
  | { ok: false; problems: string[]; code: 'CONFLICT' | 'NOT_FOUND' };

interface Content {
  entry: string;
  files: Record<string, string>;
  manifest: Record<string, unknown>;
  /** Dataset text by the manifest's file path. */
  datasets: Record<string, string>;
}

export async function createEnvironment(deps: { db: Db; blobs: BlobStore; dryRuns: DryRunPool; secretsKey?: Buffer }, input: CreateEnvironmentInput): Promise<CreateEnvironmentResult> {
  const { db, blobs } = deps;
  const content = 'http' in input.from ? served(input.name, input.from.http) : await contentFrom(db, blobs, input.teamId, input.from);
  if (!content) return { ok: false, code: 'NOT_FOUND', problems: ['from.versionId: no such environment version in this team'] };
  // The manifest names the environment; the copy takes its new name.
  const manifest = { ...content.manifest, name: input.name, ...(input.description === undefined ? {} : { description: input.description }) };
  const description = input.description ?? (typeof manifest.description === 'string' ? manifest.description : '');

  // The row first: its unique name refuses a second "create" of the same name, even a racing one.
  let environmentId: string;
  try {
    environmentId = (await db.environment.create({ data: { teamId: input.teamId, name: input.name, description }, select: { id: true } })).id;
  } catch (error) {
    if ((error as { code?: string }).code !== 'P2002') throw error;
    return { ok: false, code: 'CONFLICT', problems: [`name: an environment named ${input.name} exists in this team; open it, or choose another name`] };
  }
  const forget = () => db.environment.deleteMany({ where: { id: environmentId, versions: { none: {} } } });
  try {
    for (const [file, text] of Object.entries(content.datasets)) {
      const stored = await storeDatasetVersion(db, blobs, { teamId: input.teamId, name: environmentDatasetName(input.name, file), text, createdById: input.userId });
      if (!stored.ok) throw new Error(`dataset ${file}: ${stored.problems.map((p) => `line ${p.line}: ${p.message}`).join('; ')}`);
    }
    const dataset = await dryRunDataset(db, blobs, input.teamId, input.name, manifest, undefined);
    const saved = await saveEnvironmentVersion(db, deps.dryRuns, {
      teamId: input.teamId, userId: input.userId, name: input.name, entry: content.entry, files: content.files, manifest,
      datasetText: dataset?.text, datasetVersionId: dataset?.versionId,
    }, deps.secretsKey);
    if (!saved.ok) await forget();
    return saved;
  } catch (error) {
    await forget();
    throw error;
  }
}

/** An environment served over HTTP: no code, a manifest naming its servers (sdk/http-manifest.ts). */
function served(name: string, answers: z.infer<typeof httpAnswersSchema>): Content {
  return { entry: 'env.ts', files: {}, manifest: httpManifest({ name, ...answers }), datasets: {} };
}

async function contentFrom(db: Db, blobs: BlobStore, teamId: string, from: Exclude<CreateFrom, { http: unknown }>): Promise<Content | null> {
  if (!('versionId' in from)) {
    const template = loadTemplate('template' in from ? from.template : BLANK_TEMPLATE);
    const files = templateFiles(template);
    return { entry: template.source.entry, files, manifest: template.rawManifest, datasets: template.datasetFiles };
  }
  const version = await db.environmentVersion.findFirst({
    where: { id: from.versionId, environment: { teamId } },
    select: { entry: true, files: true, manifest: true, environment: { select: { name: true } } },
  });
  if (!version) return null;
  const datasets: Record<string, string> = {};
  for (const file of Object.values(manifestDatasetFiles(version.manifest))) {
    const latest = await db.datasetVersion.findFirst({
      where: { dataset: { teamId, name: environmentDatasetName(version.environment.name, file) } },
      orderBy: { version: 'desc' },
      select: { storageKey: true },
    });
    if (latest) datasets[file] = (await blobs.get(latest.storageKey)).toString('utf8');
  }
  return { entry: version.entry, files: version.files as Record<string, string>, manifest: version.manifest as Record<string, unknown>, datasets };
}
