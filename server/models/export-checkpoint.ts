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
import { type ExportAnswer, type ExportCommand, type ExportFormat } from '../../sdk/models';
import { type BlobStore } from '../blobs/store';
import { type Db } from '../db/client';
import { askRuntime } from '../environments/fork-runtime';
import { FREE_MARGIN_BYTES, ModelImportError, type StoredModelFile } from './model-uploads';

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

interface ExportSource {
  checkpoint: { id: string; step: number; storageKey: string };
  model: { name: string; contentHash: string; files: StoredModelFile[] };
  folder: string;
  name: string;
}

/** The team's checkpoint and the imported model it was trained on, and where its export lives. */
async function exportSource(db: Db, blobs: BlobStore, input: { teamId: string; checkpointId: string; format: ExportFormat }): Promise<ExportSource> {
  const checkpoint = await db.checkpoint.findFirst({
    where: { id: input.checkpointId, teamId: input.teamId },
    select: { id: true, step: true, storageKey: true, job: { select: { config: true } } },
  });
  if (!checkpoint) throw new ModelImportError('No such checkpoint in this team', 'NOT_FOUND');
  const modelId = (checkpoint.job?.config as { baseModelId?: unknown } | undefined)?.baseModelId;
  if (typeof modelId !== 'string') {
    throw new ModelImportError(`checkpoint ${checkpoint.id} is of the engine's own model, which has no Hugging Face architecture: only checkpoints of imported models (Llama, Qwen) export as Hugging Face folders`);
  }
  const model = await db.pretrainedModel.findFirst({ where: { id: modelId, teamId: input.teamId }, select: { name: true, contentHash: true, files: true } });
  if (!model) throw new ModelImportError(`checkpoint ${checkpoint.id} was trained on imported model ${modelId}, which has been removed: import it again to export this checkpoint`, 'NOT_FOUND');
  return {
    checkpoint,
    model: { name: model.name, contentHash: model.contentHash, files: model.files as unknown as StoredModelFile[] },
    folder: path.join(exportsRoot(blobs), `${checkpoint.id}-${input.format}`),
    name: `${model.name}-step${checkpoint.step}-${input.format}`,
  };
}

const exportsRoot = (blobs: BlobStore) => path.join(blobs.stagingRoot, 'exports');

/** A written export's files; touched, so that the sweep spares an export in use. */
async function described(source: ExportSource): Promise<ExportedFolder> {
  const now = new Date();
  await fs.promises.utimes(source.folder, now, now);
  const files = (await fs.promises.readdir(source.folder)).sort();
  return { folder: source.folder, name: source.name, files: await Promise.all(files.map(async (p) => ({ path: p, bytes: (await fs.promises.stat(path.join(source.folder, p))).size }))) };
}

/**
 * The export of one of the team's checkpoints, written now or found from before. Refusals (a
 * checkpoint of the engine's own GPT, a PEFT adapter of a full fine-tune, a removed base model,
 * no room on the volume) are ModelImportErrors that say why.
 */
export async function exportCheckpoint(db: Db, blobs: BlobStore, input: { teamId: string; checkpointId: string; format: ExportFormat }): Promise<ExportedFolder> {
  const source = await exportSource(db, blobs, input);
  const turn = queue.then(async () => {
    const root = exportsRoot(blobs);
    await fs.promises.mkdir(root, { recursive: true });
    await sweep(root);
    if (!fs.existsSync(source.folder)) {
      const baseFolder = await gatheredModel(blobs, root, source.model);
      await writeExport(blobs, { storageKey: source.checkpoint.storageKey, checkpointId: source.checkpoint.id, baseFolder, baseName: source.model.name, format: input.format, folder: source.folder });
    }
    return described(source);
  });
  queue = turn.catch(() => undefined);
  return turn;
}

/**
 * An export written before (by exportCheckpoint), for its download; null when there is none.
 * Never starts a merge: a download is a GET that a link on another site could send.
 */
export async function preparedExport(db: Db, blobs: BlobStore, input: { teamId: string; checkpointId: string; format: ExportFormat }): Promise<ExportedFolder | null> {
  const source = await exportSource(db, blobs, input);
  if (!fs.existsSync(source.folder)) return null;
  try {
    return await described(source);
  } catch {
    // Swept meanwhile.
    return null;
  }
}

/** The base model's files under their names, fetched from the blob store once per model (touched on each use). */
async function gatheredModel(blobs: BlobStore, root: string, model: ExportSource['model']): Promise<string> {
  const folder = path.join(root, `base-${model.contentHash}`);
  if (fs.existsSync(folder)) {
    const now = new Date();
    await fs.promises.utimes(folder, now, now);
    return folder;
  }
  await needRoom(root, model.files.reduce((sum, f) => sum + f.bytes, 0));
  const aside = `${folder}.${randomBytes(6).toString('hex')}.partial`;
  await fs.promises.mkdir(aside, { recursive: true });
  try {
    for (const f of model.files) await pipeline(blobs.stream(f.storageKey), fs.createWriteStream(path.join(aside, path.basename(f.path))));
    await renameUnlessThere(aside, folder);
  } finally {
    await fs.promises.rm(aside, { recursive: true, force: true });
  }
  return folder;
}

/** Moves a finished folder into place; another server that finished the same one first keeps its own. */
async function renameUnlessThere(from: string, to: string): Promise<void> {
  try {
    await fs.promises.rename(from, to);
  } catch (err) {
    if (!fs.existsSync(to)) throw err;
  }
}

/** Refuses work that would fill the volume the blob store lives on (with the uploads' margin kept free). */
async function needRoom(root: string, bytes: number): Promise<void> {
  const { bavail, bsize } = await fs.promises.statfs(root);
  if (bavail * bsize < bytes + FREE_MARGIN_BYTES) {
    throw new ModelImportError(`the server has ${Math.floor((bavail * bsize) / 2 ** 20)} MiB free, not enough to export this model (about ${Math.ceil(bytes / 2 ** 20)} MiB): ask an administrator for room`);
  }
}

async function writeExport(blobs: BlobStore, o: { storageKey: string; checkpointId: string; baseFolder: string; baseName: string; format: ExportFormat; folder: string }): Promise<void> {
  const aside = `${o.folder}.${randomBytes(6).toString('hex')}.partial`;
  const checkpointFile = path.join(aside, '.checkpoint.safetensors');
  await fs.promises.mkdir(aside, { recursive: true });
  try {
    // A merged export is about the model's size in f32: twice a bf16 model's files.
    await needRoom(path.dirname(o.folder), 2 * (await folderBytes(o.baseFolder)));
    await pipeline(blobs.stream(o.storageKey), fs.createWriteStream(checkpointFile));
    const answer = await runExportProcess({ checkpointFile, baseFolder: o.baseFolder, baseName: o.baseName, format: o.format, outFolder: aside });
    if (!answer.ok) throw new ModelImportError(`checkpoint ${o.checkpointId} cannot be exported (${o.format}): ${answer.error}`);
    await fs.promises.rm(checkpointFile);
    await renameUnlessThere(aside, o.folder);
  } finally {
    await fs.promises.rm(aside, { recursive: true, force: true });
  }
}

function runExportProcess(command: ExportCommand): Promise<ExportAnswer> {
  // The weights live in tensors outside the JavaScript heap; the heap holds the tokenizer and files' headers.
  return askRuntime<ExportAnswer>('gpu-worker/engine/pretrained/export-process.ts', 4096, command, EXPORT_MS, ({ timedOut, code }) => ({
    ok: false,
    error: timedOut ? `the export took longer than ${EXPORT_MS / 60_000} minutes` : `the export stopped (exit code ${code}): the model may be too large for the server's memory`,
  }));
}

async function folderBytes(folder: string): Promise<number> {
  let sum = 0;
  for (const f of await fs.promises.readdir(folder)) sum += (await fs.promises.stat(path.join(folder, f))).size;
  return sum;
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
