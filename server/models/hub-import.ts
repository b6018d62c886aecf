/**
 * `models import hf:<repo>[@revision]`: the server downloads a model from the Hugging Face hub
 * itself (HF_ENDPOINT, with HF_TOKEN for gated and private repos) through `@huggingface/hub`. The
 * repo's files are listed at the revision, the model's are picked by the same rule a folder's are
 * (sdk/models.ts modelFileNames), each is streamed into the staging folder an upload would use,
 * hashed on the way, and the import ends through the upload's own finish (model-uploads.ts): the
 * engine's check, the blob store, the row. A refusal at any point leaves nothing behind.
 */
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { downloadFile, fileDownloadInfo, listFiles, type ListFileEntry } from '@huggingface/hub';
import { modelFileNames, type ModelCard } from '../../sdk/models';
import { type BlobStore } from '../blobs/store';
import { type Db } from '../db/client';
import { type AnnouncedFile, ModelImportError, beginServerImport, storeStagedModel } from './model-uploads';

/** Where the hub is and the token to read it with (server/env.ts: HF_ENDPOINT, HF_TOKEN). */
export interface HubSettings {
  endpoint: string;
  token?: string;
}

/** model.safetensors.index.json is read whole to pick the shards; a real one is tens of KB. */
const MAX_INDEX_BYTES = 16 * 2 ** 20;

export async function importFromHub(
  db: Db,
  blobs: BlobStore,
  hub: HubSettings,
  input: { teamId: string; userId: string; repo: string; revision: string; name: string },
): Promise<{ modelId: string; card: ModelCard }> {
  const source = `hf:${input.repo}@${input.revision}`;
  const common = {
    repo: { type: 'model' as const, name: input.repo },
    hubUrl: hub.endpoint,
    accessToken: hub.token,
    fetch: hubFetch(hub, source, input.revision),
  };
  const listed = await listRepo(common, input.revision);
  let paths: string[];
  try {
    paths = await modelFileNames(
      (name) => listed.has(name),
      () => readSmall({ ...common, revision: input.revision }, listed.get('model.safetensors.index.json')!),
    );
  } catch (err) {
    if (err instanceof ModelImportError) throw err;
    throw new ModelImportError(`${source}: ${(err as Error).message.replace(/\bthe folder\b/g, 'the repo')}`);
  }
  const files = paths.map((p) => ({ path: p, bytes: listed.get(p)!.lfs?.size ?? listed.get(p)!.size }));
  // The same checks an upload's announcement gets: names, size, the name free, the volume's room.
  const { dir } = await beginServerImport(db, blobs, { teamId: input.teamId, userId: input.userId, name: input.name, files });
  try {
    const downloaded: AnnouncedFile[] = [];
    for (const f of files) {
      const sha256 = await downloadTo(path.join(dir, f.path), { ...common, revision: input.revision }, listed.get(f.path)!, f.bytes, source);
      downloaded.push({ ...f, sha256 });
    }
    return await storeStagedModel(db, blobs, dir, { teamId: input.teamId, userId: input.userId, name: input.name, files: downloaded });
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true });
  }
}

type HubParams = { repo: { type: 'model'; name: string }; hubUrl: string; accessToken?: string; fetch: typeof fetch };

/** The repo's top-level files at the revision (a model folder is flat). */
async function listRepo(common: HubParams, revision: string): Promise<Map<string, ListFileEntry>> {
  const listed = new Map<string, ListFileEntry>();
  // listFiles puts the revision into the URL's path as it is; refs/pr/1 must stay one segment.
  for await (const entry of listFiles({ ...common, revision: encodeURIComponent(revision) })) {
    if (entry.type === 'file') listed.set(entry.path, entry);
  }
  return listed;
}

async function readSmall(params: HubParams & { revision: string }, entry: ListFileEntry): Promise<string> {
  if (entry.size > MAX_INDEX_BYTES) throw new Error(`${entry.path} is ${entry.size} bytes, more than an index has`);
  const blob = await downloadFile({ ...params, path: entry.path });
  if (!blob) throw new Error(`${entry.path} is listed but cannot be downloaded`);
  return blob.text();
}

/**
 * Streams one file to `target` (never whole in memory), no longer than announced, and checks it
 * against the hub's own hash of it: the sha256 of a large (LFS or Xet) file, the git blob id of a
 * small one. Returns its sha256.
 */
async function downloadTo(target: string, params: HubParams & { revision: string }, entry: ListFileEntry, bytes: number, source: string): Promise<string> {
  const info = await fileDownloadInfo({ ...params, path: entry.path });
  if (!info) throw new ModelImportError(`${source}: "${entry.path}" is listed but the hub has no such file`, 'BAD_GATEWAY');
  if (info.size !== bytes) throw new ModelImportError(`${source}: "${entry.path}" is listed as ${bytes} bytes but the hub sends ${info.size}`, 'BAD_GATEWAY');
  const blob = await downloadFile({ ...params, path: entry.path, downloadInfo: info });
  if (!blob) throw new ModelImportError(`${source}: "${entry.path}" is listed but the hub has no such file`, 'BAD_GATEWAY');
  const sha256 = createHash('sha256');
  const gitBlob: Hash | null = entry.lfs ? null : createHash('sha1').update(`blob ${bytes}\0`);
  let received = 0;
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      if (received > bytes) return done(new ModelImportError(`${source}: "${entry.path}" is longer than the ${bytes} bytes the hub lists`, 'BAD_GATEWAY'));
      sha256.update(chunk);
      gitBlob?.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(blob.stream() as WebReadableStream), hashing, fs.createWriteStream(target, { flags: 'wx' }));
  } catch (err) {
    if (err instanceof ModelImportError) throw err;
    // The library reports a failed stream by its message alone (a string).
    throw new ModelImportError(`${source}: downloading "${entry.path}" failed: ${err instanceof Error ? err.message : String(err)}`, 'BAD_GATEWAY');
  }
  if (received !== bytes) throw new ModelImportError(`${source}: "${entry.path}" arrived with ${received} of its ${bytes} bytes`, 'BAD_GATEWAY');
  const digest = sha256.digest('hex');
  const expected = entry.lfs?.oid ?? entry.oid;
  const got = entry.lfs ? digest : gitBlob!.digest('hex');
  if (expected && got !== expected) throw new ModelImportError(`${source}: "${entry.path}" arrived damaged (its hash is not the hub's): import again`, 'BAD_GATEWAY');
  return digest;
}

/**
 * `fetch` for the library, answering every refusal of the hub with what the user can do about it
 * (the library's own errors carry only the status). A stalled hub is ended by fetch's own idle
 * limits (5 minutes without headers or data).
 */
function hubFetch(hub: HubSettings, source: string, revision: string): typeof fetch {
  return async (input, init) => {
    let res: Response;
    try {
      res = await fetch(input, init);
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      const origin = new URL(input instanceof Request ? input.url : String(input)).origin;
      throw new ModelImportError(
        origin === new URL(hub.endpoint).origin
          ? `the server cannot reach HF_ENDPOINT (${hub.endpoint}): ${why}`
          : `the server cannot reach ${origin}, where ${hub.endpoint} sends the download: ${why}`,
        'BAD_GATEWAY',
      );
    }
    const code = res.headers.get('x-error-code');
    // A file the revision lacks is the library's to answer (null), not a refusal.
    if (res.ok || (res.status === 404 && code === 'EntryNotFound')) return res;
    // The storage the hub redirects downloads to (signed URLs, Xet) answers the library, which
    // reloads an expired URL on a 403 and retries a 429 itself: only the hub's own answers are ours.
    if (new URL(res.url || (input instanceof Request ? input.url : String(input))).origin !== new URL(hub.endpoint).origin) return res;
    const body = await res.text().catch(() => '');
    throw hubRefusal(res.status, code, body, hub, source, revision);
  };
}

function hubRefusal(status: number, code: string | null, body: string, hub: HubSettings, source: string, revision: string): ModelImportError {
  if (code === 'GatedRepo') {
    return new ModelImportError(
      hub.token
        ? `${source} is gated: accept its conditions on the hub with the account whose token is the server's HF_TOKEN`
        : `${source} is gated: accept its conditions on the hub, and set HF_TOKEN on the server to a token of that account`,
      'PRECONDITION_FAILED',
    );
  }
  if (status === 401 || status === 403) {
    // The hub answers 401 for a repo that does not exist as for one that is private, to a caller without a token.
    return new ModelImportError(
      hub.token
        ? `${source}: the hub refused the server's HF_TOKEN (${status}): the token is invalid, or its account cannot read this repo`
        : `${source}: the hub refused to serve it without a token (${status}): the repo is private or gated, or does not exist; set HF_TOKEN on the server to a token that can read it`,
      'PRECONDITION_FAILED',
    );
  }
  if (status === 404) {
    if (code === 'RevisionNotFound' || /invalid rev|revision/i.test(body)) return new ModelImportError(`${source}: the repo has no revision "${revision}"`, 'NOT_FOUND');
    return new ModelImportError(`${source}: no such model repo on ${hub.endpoint}`, 'NOT_FOUND');
  }
  return new ModelImportError(`${source}: the hub at ${hub.endpoint} answered ${status}${status === 429 ? ' (too many requests: try again later)' : ''}`, 'BAD_GATEWAY');
}
