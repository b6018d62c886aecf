/**
 * A checkpoint of an imported model as a Hugging Face folder (weights merged, or a PEFT adapter,
 * with the base's tokenizer and chat template) that `transformers` loads and vLLM or llama.cpp
 * serve. The engine writes it in a process of its own (gpu-worker/engine/pretrained/export-process.ts):
 * the server never imports the engine, and merging a model's weights never holds up the event loop.
 *
 * Exports are kept on the blob store's volume, beside the uploads being staged
 * (`.staging/exports/<checkpoint>-<format>`), so a second download of the same export is a copy,
 * not another merge; a folder becomes visible only once whole (written aside, then renamed), and
 * exports untouched for a day are swept. The base model's files are gathered once per model.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type ExportAnswer, type ExportFormat } from '../../sdk/models';
import { type BlobStore } from '../blobs/store';
import { type Db } from '../db/client';
import { forkRuntime } from '../environments/fork-runtime';
import { ModelImportError, type StoredModelFile } from './model-uploads';

/** Loading, merging and writing a model takes minutes at most for the models a worker trains. */
const EXPORT_MS = 15 * 60_000;
/** An export folder nobody downloaded for this long is removed. */
const STALE_EXPORT_MS = 24 * 3600_000;

export interface ExportedFolder {
  folder: string;
  files: { path: string; bytes: number }[];
  /** A name for the download: the model, the step and the format. */
  name: string;
}

/** One export at a time: each holds a model's weights (twice, while merging) in its process. */
let queue: Promise<unknown> = Promise.resolve();

/**
 * The export of one of the team's checkpoints, written now or found from before. Refusals (a
 * checkpoint of the engine's own GPT, a PEFT adapter of a full fine-tune, a removed base model)
 * are ModelImportErrors that say why.
 */
export async function exportCheckpoint(db: Db, blobs: BlobStore, input: { teamId: string; checkpointId: string; format: ExportFormat }): Promise<ExportedFolder> {
  const checkpoint = await db.checkpoint.findFirst({
    where: { id: input.checkpointId, teamId: input.teamId },
    select: { id: true, step: true, storageKey: true, isAdapter: true, job: { select: { config: true } } },
  });
  if (!checkpoint) throw new ModelImportError('No such checkpoint in this team', 'NOT_FOUND');
  const modelId = (checkpoint.job?.config as { baseModelId?: unknown } | undefined)?.baseModelId;
  if (typeof modelId !== 'string') {
    throw new ModelImportError(`checkpoint ${checkpoint.id} is of the engine's own model, which has no Hugging Face architecture: only checkpoints of imported models (Llama, Qwen) export as Hugging Face folders`);
  }
  const model = await db.pretrainedModel.findFirst({ where: { id: modelId, teamId: input.teamId }, select: { name: true, contentHash: true, files: true } });
  if (!model) throw new ModelImportError(`checkpoint ${checkpoint.id} was trained on imported model ${modelId}, which has been removed: import it again to export this checkpoint`, 'NOT_FOUND');
  const root = path.join(blobs.stagingRoot, 'exports');
  const name = `${model.name}-step${checkpoint.step}-${input.format}`;
  const folder = path.join(root, `${checkpoint.id}-${input.format}`);
  const turn = queue.then(async () => {
    await sweep(root);
    if (!fs.existsSync(folder)) {
      const baseFolder = await gatheredModel(blobs, root, model.contentHash, model.files as unknown as StoredModelFile[]);
      await writeExport(blobs, { storageKey: checkpoint.storageKey, checkpointId: checkpoint.id, baseFolder, baseName: model.name, format: input.format, folder });
    }
    // Touched, so that the sweep spares an export that is being downloaded.
    const now = new Date();
    await fs.promises.utimes(folder, now, now);
    const files = (await fs.promises.readdir(folder)).sort();
    return { folder, name, files: await Promise.all(files.map(async (p) => ({ path: p, bytes: (await fs.promises.stat(path.join(folder, p))).size }))) };
  });
  queue = turn.catch(() => undefined);
  return turn;
}

/** The base model's files under their names, fetched from the blob store once per model. */
async function gatheredModel(blobs: BlobStore, root: string, contentHash: string, files: StoredModelFile[]): Promise<string> {
  const folder = path.join(root, `base-${contentHash}`);
  if (fs.existsSync(folder)) return folder;
  const aside = `${folder}.${randomBytes(6).toString('hex')}.partial`;
  await fs.promises.mkdir(aside, { recursive: true });
  try {
    for (const f of files) await pipeline(blobs.stream(f.storageKey), fs.createWriteStream(path.join(aside, path.basename(f.path))));
    await fs.promises.rename(aside, folder);
  } finally {
    await fs.promises.rm(aside, { recursive: true, force: true });
  }
  return folder;
}

async function writeExport(blobs: BlobStore, o: { storageKey: string; checkpointId: string; baseFolder: string; baseName: string; format: ExportFormat; folder: string }): Promise<void> {
  const aside = `${o.folder}.${randomBytes(6).toString('hex')}.partial`;
  const checkpointFile = path.join(aside, '.checkpoint.safetensors');
  await fs.promises.mkdir(aside, { recursive: true });
  try {
    await pipeline(blobs.stream(o.storageKey), fs.createWriteStream(checkpointFile));
    const answer = await runExportProcess({ checkpointFile, baseFolder: o.baseFolder, baseName: o.baseName, format: o.format, outFolder: aside });
    if (!answer.ok) throw new ModelImportError(`checkpoint ${o.checkpointId} cannot be exported (${o.format}): ${answer.error}`);
    await fs.promises.rm(checkpointFile);
    await fs.promises.rename(aside, o.folder);
  } finally {
    await fs.promises.rm(aside, { recursive: true, force: true });
  }
}

async function runExportProcess(command: { checkpointFile: string; baseFolder: string; baseName: string; format: ExportFormat; outFolder: string }): Promise<ExportAnswer> {
  // The weights live in tensors outside the JavaScript heap; the heap holds the tokenizer and files' headers.
  const { child, ready } = forkRuntime('gpu-worker/engine/pretrained/export-process.ts', 4096);
  try {
    await ready;
    return await new Promise<ExportAnswer>((resolve) => {
      const timer = setTimeout(() => resolve({ ok: false, error: `the export took longer than ${EXPORT_MS / 60_000} minutes` }), EXPORT_MS);
      child.on('message', (message: ExportAnswer | { type: 'ready' }) => {
        if ('ok' in message) {
          clearTimeout(timer);
          resolve(message);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ ok: false, error: `the export stopped (exit code ${code}): the model may be too large for the server's memory` });
      });
      child.send(command);
    });
  } finally {
    child.kill();
  }
}

/** Removes exports (and gathered models) untouched for a day, and what a crash left half-written. */
async function sweep(root: string): Promise<void> {
  for (const entry of fs.existsSync(root) ? await fs.promises.readdir(root) : []) {
    const dir = path.join(root, entry);
    try {
      const age = Date.now() - (await fs.promises.stat(dir)).mtimeMs;
      // A partial folder older than an export may run is a crashed one's (another server's may be under way).
      if (age > STALE_EXPORT_MS || (entry.endsWith('.partial') && age > EXPORT_MS)) await fs.promises.rm(dir, { recursive: true, force: true });
    } catch {
      // Removed meanwhile.
    }
  }
}
