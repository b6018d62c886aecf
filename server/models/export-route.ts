/**
 * GET /api/exports/<checkpoint id>/<merged|peft>: a checkpoint of an imported model as a tar of
 * its Hugging Face folder, for the browser's download button (the session cookie) and
 * `whetstone models export` (an API key). It serves an export written before by
 * models.exportCheckpoint (a POST, which the API guards against cross-site requests) and never
 * starts one itself: a link on another site can send this GET with the cookie. It asks what that
 * call asks, a MEMBER of the checkpoint's team; another team's checkpoint is a missing one.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { create as createTar } from 'tar';
import { EXPORT_FORMATS, type ExportFormat } from '../../sdk/models';
import { type Auth } from '../auth/auth';
import { CredentialRefused, resolveCaller } from '../auth/caller';
import { roleAtLeast } from '../auth/roles';
import { type BlobStore } from '../blobs/store';
import { type Db } from '../db/client';
import { preparedExport } from './export-checkpoint';
import { ModelImportError } from './model-uploads';

export const EXPORT_ROUTE = '/api/exports/';

const STATUS = { BAD_REQUEST: 400, CONFLICT: 409, NOT_FOUND: 404, PRECONDITION_FAILED: 412, BAD_GATEWAY: 502 } as const;

function refuse(res: ServerResponse, status: number, error: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ error }));
}

export async function handleExportDownload(deps: { db: Db; auth: Auth; blobs: BlobStore }, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  if (req.method !== 'GET') return refuse(res, 405, 'Use GET');
  const match = /^\/api\/exports\/([A-Za-z0-9_-]{1,64})\/([a-z]+)$/.exec(url.pathname);
  if (!match) return refuse(res, 404, `No route ${url.pathname}`);
  const [, checkpointId, formatName] = match;
  if (!(EXPORT_FORMATS as readonly string[]).includes(formatName)) return refuse(res, 400, `The format is ${EXPORT_FORMATS.join(' or ')}, not ${formatName}`);
  let caller;
  try {
    caller = await resolveCaller(deps.db, deps.auth, req.headers, req.socket.remoteAddress ?? null);
  } catch (err) {
    if (err instanceof CredentialRefused) return refuse(res, 401, err.message);
    throw err;
  }
  if (!caller) return refuse(res, 401, 'Sign in, or send an API key (Authorization: Bearer wsk_…)');
  const row = await deps.db.checkpoint.findUnique({ where: { id: checkpointId }, select: { teamId: true } });
  const keyTeam = caller.apiKey?.teamId;
  const membership =
    row && (!keyTeam || keyTeam === row.teamId)
      ? await deps.db.membership.findUnique({ where: { teamId_userId: { teamId: row.teamId, userId: caller.user.id } }, select: { role: true } })
      : null;
  if (!row || !membership) return refuse(res, 404, 'No such checkpoint in this team');
  if (!roleAtLeast(membership.role, 'MEMBER')) return refuse(res, 403, 'Exporting a checkpoint needs the MEMBER role');
  let exported;
  try {
    exported = await preparedExport(deps.db, deps.blobs, { teamId: row.teamId, checkpointId, format: formatName as ExportFormat });
  } catch (err) {
    if (err instanceof ModelImportError) return refuse(res, STATUS[err.code], err.message);
    throw err;
  }
  if (!exported) return refuse(res, 409, `Checkpoint ${checkpointId} has no ${formatName} export yet (or it was swept after a day unused): export it first (Export… on its run, or whetstone models export)`);
  res.writeHead(200, {
    'content-type': 'application/x-tar',
    'content-disposition': `attachment; filename="${exported.name}.tar"`,
    'cache-control': 'no-store',
  });
  try {
    // The folder's files at the archive's top, under the export's name (tar -xf gives that folder).
    await pipeline(createTar({ cwd: exported.folder, prefix: exported.name, portable: true }, exported.files.map((f) => f.path)), res);
  } catch (err) {
    // A client that stops the download midway is not the server's failure.
    if ((err as { code?: string }).code !== 'ERR_STREAM_PREMATURE_CLOSE') throw err;
  }
}
