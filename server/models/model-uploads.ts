/**
 * Importing a pretrained model: its folder's files arrive in chunks through the API (the same
 * authentication, roles and limits as every other call; a browser and the CLI send them alike),
 * are staged on the blob store's volume, and become a model only once every file is whole, its
 * sha256 is the one announced, and the engine's own check of the folder passes
 * (gpu-worker/engine/pretrained/inspect.ts). Then each file moves into the content-addressed blob
 * store and the row is written; on any refusal the staging folder is removed and nothing remains.
 *
 * Where the server has internet it fetches a model's files from the Hugging Face hub itself
 * (hub-import.ts) into the same staging and through the same finish.
 *
 * An upload's state is its staging folder (`upload.json` beside the files), so a server restart
 * in the middle loses nothing a client cannot resend: a chunk is written at its offset, and
 * resending one that arrived is harmless.
 */
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type ModelCard } from '../../sdk/models';
import { BLOB_WRITE_TRANSACTION_MS, collectBlobs, holdBlobKeys } from '../blobs/collect';
import { type BlobStore } from '../blobs/store';
import { type Db } from '../db/client';
import { inspectModelFolder } from './inspect-model';

/** The largest model an import takes, all files together. */
export const MAX_MODEL_BYTES = 64 * 2 ** 30;
/** Imports a team may have under way at once: a member cannot fill the shared volume with announcements. */
const MAX_OPEN_UPLOADS = 3;
/** An upload untouched this long is abandoned (a closed tab, a crashed CLI) and swept. */
const STALE_UPLOAD_MS = 24 * 3600_000;
/** Room the volume keeps free beyond an upload's announced bytes. */
export const FREE_MARGIN_BYTES = 2 * 2 ** 30;
/** The largest chunk one call carries (base64 in the body: about 5.6 MB of the request limit). */
export const MODEL_CHUNK_BYTES = 4 * 2 ** 20;
/** The names a model's files may have: a flat folder of JSON, Jinja and safetensors files. */
export const MODEL_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\.(json|jinja|safetensors)$/;

/** A file of an import, by name and size. */
export interface StagedFile {
  path: string;
  bytes: number;
}

/** One the client announces with its hash, checked when the upload finishes. */
export interface AnnouncedFile extends StagedFile {
  sha256: string;
}

interface UploadState<F extends StagedFile = AnnouncedFile> {
  teamId: string;
  userId: string;
  name: string;
  files: F[];
  createdAt: string;
}

/** The state file's names (see readState); no model file may take one. */
type StateFile = 'upload.json' | 'finishing.json';
const STATE_FILES: string[] = ['upload.json', 'finishing.json'];

export interface StoredModelFile {
  path: string;
  storageKey: string;
  bytes: number;
  sha256: string;
}

/** An import the user must fix: the message says what and where. */
export class ModelImportError extends Error {
  constructor(
    message: string,
    readonly code: 'BAD_REQUEST' | 'CONFLICT' | 'NOT_FOUND' | 'PRECONDITION_FAILED' | 'BAD_GATEWAY' = 'BAD_REQUEST',
  ) {
    super(message);
  }
}

const UPLOAD_ID = /^[0-9a-f-]{36}$/;

function uploadDir(blobs: BlobStore, uploadId: string): string {
  if (!UPLOAD_ID.test(uploadId)) throw new ModelImportError('No such upload', 'NOT_FOUND');
  return path.join(blobs.stagingRoot, 'models', uploadId);
}

/**
 * An upload's state file: `upload.json` while it takes chunks; renamed to `finishing.json` when
 * its finish begins, so that no chunk and no abandon reaches files being checked and stored.
 */
async function readState(blobs: BlobStore, teamId: string, uploadId: string, file: StateFile = 'upload.json'): Promise<{ dir: string; state: UploadState }> {
  const dir = uploadDir(blobs, uploadId);
  let state: UploadState;
  try {
    state = JSON.parse(await fs.promises.readFile(path.join(dir, file), 'utf8')) as UploadState;
  } catch {
    throw new ModelImportError('No such upload (finished, abandoned, or never begun): begin the import again', 'NOT_FOUND');
  }
  // Another team's upload is answered as if it did not exist.
  if (state.teamId !== teamId) throw new ModelImportError('No such upload', 'NOT_FOUND');
  return { dir, state };
}

/** Starts an import: checks the names and sizes, and that the model's name is free. */
export async function beginModelUpload(db: Db, blobs: BlobStore, input: { teamId: string; userId: string; name: string; files: AnnouncedFile[] }): Promise<{ uploadId: string }> {
  const { uploadId } = await stageModel(db, blobs, input, 'upload.json');
  return { uploadId };
}

/**
 * Starts an import whose files the server fetches itself (hub-import.ts): the same checks and
 * staging as an upload, but its state file is `finishing.json` from the start, so that no client
 * call (chunk, finish, abandon) reaches it while the server writes its files.
 */
export async function beginServerImport(db: Db, blobs: BlobStore, input: { teamId: string; userId: string; name: string; files: StagedFile[] }): Promise<{ dir: string }> {
  const { dir } = await stageModel(db, blobs, input, 'finishing.json');
  return { dir };
}

/** Checks the names, the total size, the name, the team's imports under way and the volume's room; makes the staging folder. */
async function stageModel(db: Db, blobs: BlobStore, input: { teamId: string; userId: string; name: string; files: StagedFile[] }, stateFile: StateFile): Promise<{ uploadId: string; dir: string }> {
  const seen = new Set<string>();
  for (const f of input.files) {
    if (!MODEL_FILE_NAME.test(f.path) || STATE_FILES.includes(f.path)) throw new ModelImportError(`"${f.path}" is not a model file name (a flat folder of .json, .jinja and .safetensors files)`);
    if (seen.has(f.path)) throw new ModelImportError(`"${f.path}" is announced twice`);
    seen.add(f.path);
  }
  const total = input.files.reduce((sum, f) => sum + f.bytes, 0);
  if (total > MAX_MODEL_BYTES) throw new ModelImportError(`the model's files are ${total} bytes; an import takes at most ${MAX_MODEL_BYTES} (64 GiB)`);
  if (await db.pretrainedModel.findFirst({ where: { teamId: input.teamId, name: input.name }, select: { id: true } })) {
    throw new ModelImportError(`this team already has a model named "${input.name}": import under another name`, 'CONFLICT');
  }
  const open = await openUploads(blobs, input.teamId);
  if (open >= MAX_OPEN_UPLOADS) throw new ModelImportError(`this team has ${open} imports under way (at most ${MAX_OPEN_UPLOADS}): finish or abandon one first`, 'CONFLICT');
  await fs.promises.mkdir(path.join(blobs.stagingRoot, 'models'), { recursive: true });
  const { bavail, bsize } = await fs.promises.statfs(blobs.stagingRoot);
  if (bavail * bsize < total + FREE_MARGIN_BYTES) {
    throw new ModelImportError(`the server has ${Math.floor((bavail * bsize) / 2 ** 20)} MiB free, not enough for this model's ${Math.ceil(total / 2 ** 20)} MiB: ask an administrator for room`);
  }
  const uploadId = randomUUID();
  const dir = uploadDir(blobs, uploadId);
  await fs.promises.mkdir(dir, { recursive: true });
  const state: UploadState<StagedFile> = { teamId: input.teamId, userId: input.userId, name: input.name, files: input.files, createdAt: new Date().toISOString() };
  await fs.promises.writeFile(path.join(dir, stateFile), JSON.stringify(state));
  return { uploadId, dir };
}

/** Writes one chunk of one announced file at its offset; returns the bytes the file now has. */
export async function writeModelChunk(blobs: BlobStore, input: { teamId: string; uploadId: string; path: string; offset: number; data: Buffer }): Promise<{ received: number }> {
  const { dir, state } = await readState(blobs, input.teamId, input.uploadId);
  const file = state.files.find((f) => f.path === input.path);
  if (!file) throw new ModelImportError(`"${input.path}" was not announced when the upload began`);
  if (input.offset + input.data.length > file.bytes) throw new ModelImportError(`"${input.path}" was announced as ${file.bytes} bytes; this chunk ends at ${input.offset + input.data.length}`);
  const target = path.join(dir, file.path);
  const have = fs.existsSync(target) ? (await fs.promises.stat(target)).size : 0;
  // Chunks come in order; a resent one (a retry after a lost answer) is written again in place.
  if (input.offset > have) throw new ModelImportError(`"${input.path}" has ${have} bytes; a chunk at ${input.offset} would leave a gap`);
  const handle = await fs.promises.open(target, fs.existsSync(target) ? 'r+' : 'w');
  try {
    await handle.write(input.data, 0, input.data.length, input.offset);
  } finally {
    await handle.close();
  }
  return { received: Math.max(have, input.offset + input.data.length) };
}

/**
 * Checks the whole upload and makes it a model; the staging folder is gone afterwards, whatever
 * the outcome. A refusal names the file and the reason.
 */
export async function finishModelUpload(db: Db, blobs: BlobStore, input: { teamId: string; uploadId: string }): Promise<{ modelId: string; card: ModelCard }> {
  const { dir } = await readState(blobs, input.teamId, input.uploadId);
  // From here on no chunk or abandon reaches the files (a second finish finds no upload either).
  try {
    await fs.promises.rename(path.join(dir, 'upload.json'), path.join(dir, 'finishing.json'));
  } catch {
    throw new ModelImportError('No such upload (finished, abandoned, or never begun): begin the import again', 'NOT_FOUND');
  }
  const { state } = await readState(blobs, input.teamId, input.uploadId, 'finishing.json');
  try {
    for (const f of state.files) {
      const file = path.join(dir, f.path);
      const size = fs.existsSync(file) ? (await fs.promises.stat(file)).size : 0;
      if (size !== f.bytes) throw new ModelImportError(`"${f.path}" arrived with ${size} of its ${f.bytes} bytes: send the rest, or begin again`);
      const sha256 = await sha256Of(file);
      if (sha256 !== f.sha256) throw new ModelImportError(`"${f.path}" does not match the sha256 it was announced with (it changed while uploading, or was damaged): begin again`);
    }
    return await storeStagedModel(db, blobs, dir, state);
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}

/**
 * The end of every import, once its staging folder holds every file whole with its sha256 known:
 * the engine's check of the folder, the files into the blob store, the row. The caller removes the
 * folder afterwards, whatever the outcome.
 */
export async function storeStagedModel(db: Db, blobs: BlobStore, dir: string, state: { teamId: string; userId: string; name: string; files: AnnouncedFile[] }): Promise<{ modelId: string; card: ModelCard }> {
  const inspected = await inspectModelFolder(dir);
  // The engine names the staging path; the user knows the file by its name in their folder.
  if (!inspected.ok) throw new ModelImportError(inspected.error.split(`${dir}${path.sep}`).join('').split(dir).join('the model folder'));
  const card: ModelCard = inspected.card;
  const extra = state.files.map((f) => f.path).filter((p) => !card.files.includes(p));
  if (extra.length > 0) throw new ModelImportError(`${extra.map((p) => `"${p}"`).join(', ')} ${extra.length === 1 ? 'is' : 'are'} not part of the model: leave ${extra.length === 1 ? 'it' : 'them'} out`);
  const missing = card.files.filter((p) => !state.files.some((f) => f.path === p));
  if (missing.length > 0) throw new ModelImportError(`the model needs ${missing.map((p) => `"${p}"`).join(', ')}, which ${missing.length === 1 ? 'was' : 'were'} not uploaded`);
  const keys = card.files.map((p) => blobKey(state.files.find((f) => f.path === p)!.sha256));
  // What reached the store, under the key of the bytes found (a file changed since its check has another).
  const stored: string[] = [];
  try {
    // The files' keys are held from before they are stored until the row naming them is committed,
    // so removing another model with the same content cannot take a file this import found there.
    return await db.$transaction(
      async (tx) => {
        await holdBlobKeys(tx, keys);
        const files: StoredModelFile[] = [];
        for (const p of card.files) {
          const put = await blobs.putFile(path.join(dir, p), MODEL_BLOB_PREFIX);
          stored.push(put.key);
          // What is stored is what was checked: the store hashes as it moves the file in.
          if (put.sha256 !== state.files.find((f) => f.path === p)!.sha256) throw new ModelImportError(`"${p}" changed while the model was checked: begin again`);
          files.push({ path: p, storageKey: put.key, bytes: put.bytes, sha256: put.sha256 });
        }
        const contentHash = createHash('sha256')
          .update(files.map((f) => `${f.path}:${f.sha256}`).join('\n'))
          .digest('hex');
        const row = await tx.pretrainedModel.create({
          data: {
            teamId: state.teamId,
            name: state.name,
            family: card.family,
            card: card as object,
            files: files as object[],
            contentHash,
            bytes: BigInt(files.reduce((sum, f) => sum + f.bytes, 0)),
            createdById: state.userId,
          },
          select: { id: true },
        });
        return { modelId: row.id, card };
      },
      { timeout: BLOB_WRITE_TRANSACTION_MS, maxWait: 60_000 },
    );
  } catch (err) {
    // Nothing half-imported is left: files stored before the refusal go unless another model has them.
    // The refusal is what the caller needs; a failed collection leaves only unnamed bytes.
    await collectBlobs(db, blobs, stored).catch(() => []);
    if ((err as { code?: string }).code === 'P2002') throw new ModelImportError(`this team already has a model named "${state.name}": import under another name`, 'CONFLICT');
    throw err;
  }
}

/** Where a model's file lives in the blob store, by its sha256. */
const MODEL_BLOB_PREFIX = 'model-files';
const blobKey = (sha256: string) => `${MODEL_BLOB_PREFIX}/${sha256}`;

/**
 * Removes a model: its row, then those of its files no other model (of any team: files are shared
 * by content) still has. A crash between the two leaves files unnamed, never a model without files.
 */
export async function removeModel(db: Db, blobs: BlobStore, modelId: string): Promise<void> {
  const removed = await db.pretrainedModel.delete({ where: { id: modelId }, select: { files: true } });
  await collectBlobs(db, blobs, (removed.files as unknown as StoredModelFile[]).map((f) => f.storageKey));
}

/** Drops an upload the client gave up on. */
export async function abandonModelUpload(blobs: BlobStore, input: { teamId: string; uploadId: string }): Promise<void> {
  const { dir } = await readState(blobs, input.teamId, input.uploadId);
  await fs.promises.rm(dir, { recursive: true, force: true });
}

/** The team's uploads under way; those untouched for a day are swept on the way. */
async function openUploads(blobs: BlobStore, teamId: string): Promise<number> {
  const root = path.join(blobs.stagingRoot, 'models');
  let count = 0;
  for (const id of fs.existsSync(root) ? await fs.promises.readdir(root) : []) {
    const dir = path.join(root, id);
    try {
      const stat = await fs.promises.stat(dir);
      const newest = Math.max(stat.mtimeMs, ...(await fs.promises.readdir(dir)).map((f) => fs.statSync(path.join(dir, f)).mtimeMs));
      if (Date.now() - newest > STALE_UPLOAD_MS) {
        await fs.promises.rm(dir, { recursive: true, force: true });
        continue;
      }
      const file = fs.existsSync(path.join(dir, 'upload.json')) ? 'upload.json' : 'finishing.json';
      if ((JSON.parse(await fs.promises.readFile(path.join(dir, file), 'utf8')) as UploadState).teamId === teamId) count++;
    } catch {
      // Removed meanwhile, or half-made: not an upload to count.
    }
  }
  return count;
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
