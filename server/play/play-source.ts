/**
 * What a play session or an autoplayed episode plays: a saved version of the team's, or the
 * editor's unsaved draft (checked as a save would be), and for data-dependent environments the
 * dataset row that is the episode's task.
 */
import type { Json } from '../../sdk/environment/schema';
import { manifestTraining, parseManifest } from '../../sdk/manifest';
import type { PlaySampling, PlayServed } from '../../sdk/play';
import type { BlobStore } from '../blobs/store';
import type { Db } from '../db/client';
import { environmentSecrets } from '../secrets/environment-secrets';
import { PlayRefused } from './play-sessions';

export type PlaySourceInput = { versionId: string } | { draft: { entry: string; files: Record<string, string>; manifest: Record<string, unknown> } };

export interface PlaySource {
  source: { files: Record<string, string>; entry: string };
  maxTurns: number;
  /** How a checkpoint that plays a seat samples: as training's rollouts would (the manifest's limits and training options). */
  sampling: PlaySampling;
  /** The environment's name, for the session list. */
  environment: string;
  /** The dataset row for the episode's task, when the environment reads a dataset. */
  row?: Json;
  /** Served over HTTP: the play process calls these servers instead of running the code. */
  served?: PlayServed;
}

export async function resolvePlaySource(
  deps: { db: Db; blobs: BlobStore; secretsKey: Buffer },
  teamId: string,
  input: { source: PlaySourceInput; datasetVersionId?: string; seed: number },
): Promise<PlaySource> {
  const { db, blobs } = deps;
  let files: Record<string, string>;
  let entry: string;
  let manifest: unknown;
  let template: string | null = null;
  if ('versionId' in input.source) {
    const version = await db.environmentVersion.findFirst({
      where: { id: input.source.versionId, environment: { teamId } },
      select: { files: true, entry: true, manifest: true, environment: { select: { template: true } } },
    });
    if (!version) throw new PlayRefused('NOT_FOUND', 'No such environment version in this team');
    files = version.files as Record<string, string>;
    entry = version.entry;
    manifest = version.manifest;
    template = version.environment.template;
  } else {
    ({ files, entry, manifest } = input.source.draft);
  }
  const parsed = parseManifest(manifest);
  if (!parsed.ok) throw new PlayRefused('BAD_REQUEST', `The manifest is not valid: ${parsed.problems.map((p) => `manifest.${p}`).join('; ')}`);
  const { name, limits, dataset, server, kind, agents } = parsed.manifest;
  // An HTTP environment's code runs on its servers: it needs no entry file.
  if (!server && !(entry in files)) throw new PlayRefused('BAD_REQUEST', `entry: ${entry} is not one of the files`);
  const text = await datasetText(db, blobs, teamId, input.datasetVersionId, template && dataset ? `${template}/${dataset.train}` : null);
  const training = manifestTraining(parsed.manifest);
  // Served over HTTP: the team's values of the secrets its headers name go to the play process with it.
  const secrets = server ? await environmentSecrets(db, deps.secretsKey, teamId, server.headers) : {};
  const sampling: PlaySampling = {
    maxTokensPerTurn: limits.maxTokensPerTurn,
    maxResponseTokens: limits.maxResponseTokens,
    temperature: 'temperature' in training ? training.temperature : 1,
    maskActions: 'maskActions' in training ? training.maskActions : true,
  };
  return {
    source: { files, entry },
    maxTurns: limits.maxTurns,
    sampling,
    environment: name,
    ...(text !== null ? { row: pickRow(text, input.seed) } : {}),
    ...(server ? { served: { name, kind, agents, server, secrets } } : {}),
  };
}

/**
 * The JSONL to take the task from: the version asked for, or for a built-in template the train
 * split it ships (seeded into every team as the dataset "<template>/<path>"); null otherwise. The
 * sandbox says when an environment needs rows and got none.
 */
async function datasetText(db: Db, blobs: BlobStore, teamId: string, versionId: string | undefined, templateDataset: string | null): Promise<string | null> {
  const where = versionId ? { id: versionId, dataset: { teamId } } : templateDataset ? { dataset: { teamId, name: templateDataset } } : null;
  if (!where) return null;
  const version = await db.datasetVersion.findFirst({ where, orderBy: { version: 'desc' }, select: { storageKey: true } });
  if (!version) {
    if (versionId) throw new PlayRefused('NOT_FOUND', 'No such dataset version in this team');
    return null;
  }
  return (await blobs.get(version.storageKey)).toString('utf8');
}

/** The row the seed picks (its non-empty lines, in order, modulo their count); only that line is parsed. */
function pickRow(text: string, seed: number): Json {
  const lines = text.split('\n').flatMap((line, i) => (line.trim() === '' ? [] : [{ line, number: i + 1 }]));
  if (lines.length === 0) throw new PlayRefused('BAD_REQUEST', 'The dataset has no rows');
  const { line, number } = lines[seed % lines.length];
  try {
    return JSON.parse(line) as Json;
  } catch (e) {
    throw new PlayRefused('BAD_REQUEST', `The dataset's line ${number} is not JSON (${(e as Error).message}): fix the dataset, or play another seed`);
  }
}
