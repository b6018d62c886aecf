/**
 * Imported pretrained models on a worker: fetched once per worker into a cache folder named by the
 * model's content hash (the same weights imported twice, or by two teams, are one folder), then
 * loaded from there by every job that starts from them. A folder is complete only once every file
 * arrived at its size: it is filled aside and renamed into place, so a crash leaves no half model.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BaseModelLoader } from '../engine/checkpoint';
import { PretrainedDecoder } from '../engine/pretrained/decoder';
import { HfTokenizer } from '../engine/pretrained/hf-tokenizer';
import { type Assignment } from '../../sdk/worker-protocol';
import { type JobSink } from './sink';
import { JobFailure } from './types';

type BaseModel = NonNullable<Assignment['baseModel']>;

/** The cache's root: WHETSTONE_MODEL_CACHE, else a folder in the system's temporary directory. */
function cacheRoot(): string {
  return process.env.WHETSTONE_MODEL_CACHE ?? path.join(os.tmpdir(), 'whetstone-models');
}

/** The model's folder in the cache, fetching its files first when it is not there yet. */
export async function cachedModelFolder(model: BaseModel, sink: JobSink): Promise<{ folder: string; fetched: boolean }> {
  if (!/^[0-9a-f]{64}$/.test(model.contentHash)) throw new JobFailure(`imported model ${model.modelId} has no valid content hash`);
  const folder = path.join(cacheRoot(), model.contentHash);
  if (fs.existsSync(folder)) return { folder, fetched: false };
  const aside = `${folder}.${randomBytes(6).toString('hex')}.partial`;
  await fs.promises.mkdir(aside, { recursive: true });
  try {
    for (const file of model.files) {
      if (file.path !== path.basename(file.path)) throw new JobFailure(`imported model ${model.modelId} names a file outside its folder: ${file.path}`);
      // Streamed to disk: a model's weights never sit in this process's memory whole.
      const { bytes } = await sink.fetchBlobToFile(file.storageKey, path.join(aside, file.path));
      if (bytes !== file.bytes) throw new JobFailure(`imported model ${model.modelId}: ${file.path} arrived with ${bytes} of its ${file.bytes} bytes`);
    }
    try {
      await fs.promises.rename(aside, folder);
    } catch (err) {
      // Another job on this worker finished the same model first: keep theirs.
      if (!fs.existsSync(folder)) throw err;
    }
  } finally {
    await fs.promises.rm(aside, { recursive: true, force: true });
  }
  return { folder, fetched: true };
}

/**
 * The longest sequence the job uses on an imported model: its training's model.contextLength (what
 * the server's memory estimate assumed), below the model's own; undefined (the model's) without one.
 */
export function runContextLength(assignment: Assignment): number | undefined {
  const context = (assignment.config as { training?: { model?: { contextLength?: unknown } } }).training?.model?.contextLength;
  return typeof context === 'number' ? context : undefined;
}

/** Loads the job's imported model (for a new policy, or under a checkpoint that names it). */
export function baseModelLoader(assignment: Assignment, sink: JobSink): BaseModelLoader {
  return async (ref, opts) => {
    const named = assignment.baseModel;
    if (!named || named.modelId !== ref.modelId || named.contentHash !== ref.contentHash) {
      throw new JobFailure(`this checkpoint was trained from imported model ${ref.modelId}, which the job does not start from (baseModelId ${named?.modelId ?? 'unset'})`);
    }
    const { folder } = await cachedModelFolder(named, sink);
    const model = await PretrainedDecoder.fromFolder(folder, { valueHead: opts.valueHead, base: ref, contextLength: runContextLength(assignment) });
    return { model, tokenizer: HfTokenizer.fromFolder(folder, ref.modelId) };
  };
}
