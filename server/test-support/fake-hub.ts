/**
 * A Hugging Face hub on a local port, answering what @huggingface/hub's listFiles,
 * fileDownloadInfo and downloadFile ask (node_modules/@huggingface/hub/src/lib):
 *
 * - `GET /api/models/<owner>/<name>/tree/<revision>` — the top-level entries as JSON
 *   (`type`, `path`, `size`, `oid`, and `lfs` for weights, whose `oid` is their sha256);
 * - `GET /<owner>/<name>/resolve/<revision>/<file>` — the file, with `ETag`, `X-Repo-Commit` and
 *   `Accept-Ranges`; a `Range: bytes=a-b` request (how the library learns a file's size) gets 206
 *   and `Content-Range`;
 * - refusals as the hub sends them: the status, `X-Error-Code` (RepoNotFound, RevisionNotFound,
 *   EntryNotFound, GatedRepo) and a JSON `{ "error": … }`.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export interface FakeHubRepo {
  /** Each revision's files. */
  revisions: Record<string, Map<string, Buffer>>;
  /** Gated: its files are served only to `Authorization: Bearer <token>` (the listing stays public, as on the hub). */
  token?: string;
  /** A file served with its last byte changed (listed with the true one's hash): a damaged download. */
  damaged?: string;
}

/** A folder's files, as a revision of a repo. */
export function folderFiles(folder: string): Map<string, Buffer> {
  return new Map(fs.readdirSync(folder).map((name) => [name, fs.readFileSync(path.join(folder, name))]));
}

const gitBlobId = (data: Buffer) => createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex');
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

export async function startFakeHub(repos: Record<string, FakeHubRepo>): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    const refuse = (status: number, code: string, error: string) => {
      res.writeHead(status, { 'content-type': 'application/json', 'x-error-code': code });
      res.end(JSON.stringify({ error }));
    };
    const url = new URL(req.url ?? '/', 'http://hub');
    const tree = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)$/.exec(url.pathname);
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    const [, repoId, rawRevision, file] = tree ?? resolve ?? [];
    const repo = repoId ? repos[repoId] : undefined;
    if (!repo) return refuse(404, 'RepoNotFound', 'Repository not found');
    const files = repo.revisions[decodeURIComponent(rawRevision)];
    if (!files) return refuse(404, 'RevisionNotFound', `Invalid rev id: ${decodeURIComponent(rawRevision)}`);
    if (tree) {
      const entries = [...files].map(([name, data]) =>
        name.endsWith('.safetensors')
          ? { type: 'file', path: name, size: data.length, oid: gitBlobId(Buffer.from(`oid sha256:${sha256(data)}`)), lfs: { oid: sha256(data), size: data.length, pointerSize: 134 } }
          : { type: 'file', path: name, size: data.length, oid: gitBlobId(data) },
      );
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify([...entries, { type: 'directory', path: 'onnx', size: 0, oid: '0'.repeat(40) }]));
    }
    if (repo.token && req.headers.authorization !== `Bearer ${repo.token}`) {
      return refuse(401, 'GatedRepo', `Access to model ${repoId} is restricted. You must have access to it and be authenticated to access it.`);
    }
    const listed = files.get(decodeURIComponent(file));
    if (!listed) return refuse(404, 'EntryNotFound', 'Entry not found');
    const data = repo.damaged === decodeURIComponent(file) ? Buffer.concat([listed.subarray(0, -1), Buffer.from([listed.at(-1)! ^ 1])]) : listed;
    const headers = { etag: `"${sha256(data)}"`, 'x-repo-commit': 'c'.repeat(40), 'accept-ranges': 'bytes', 'content-type': 'application/octet-stream' };
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (range) {
      const start = Number(range[1]);
      const end = Math.min(range[2] ? Number(range[2]) : data.length - 1, data.length - 1);
      res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${end}/${data.length}`, 'content-length': end - start + 1 });
      return void res.end(data.subarray(start, end + 1));
    }
    res.writeHead(200, { ...headers, 'content-length': data.length });
    res.end(data);
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}
