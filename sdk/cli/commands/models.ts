import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { extract as extractTar } from 'tar';
import { formatBytes } from '../../bytes';
import { type ExportFormat, type ModelCard, modelFileNames, modelNameSchema } from '../../models';
import { LONG_CALL } from '../client';
import { CliError, EXIT } from '../errors';
import { age, table } from '../format';
import { call, type CommandContext } from './context';
import { checkpointNamed } from './references';

/**
 * `whetstone models`: the team's pretrained models. An import sends a Hugging Face folder's model
 * files in chunks and the server checks the whole folder before it becomes a model
 * (server/models/model-uploads.ts); what to send is decided here by the files' names, so that a
 * folder missing a file is refused before any byte is sent.
 */

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export async function modelsImportCommand(ctx: CommandContext, folderArg: string, nameArg?: string): Promise<number> {
  const folder = path.resolve(ctx.io.cwd, folderArg);
  if (!fs.existsSync(folder) || !fs.statSync(folder).isDirectory()) throw new CliError(`${folderArg} is not a folder`, EXIT.NOT_FOUND);
  const name = nameArg ?? path.basename(folder);
  const named = modelNameSchema.safeParse(name);
  if (!named.success) throw new CliError(`the model's name ${name}: ${named.error.issues[0].message} (choose one with --name)`, EXIT.USAGE);
  let paths: string[];
  try {
    paths = await modelFileNames((name) => fs.existsSync(path.join(folder, name)), () => fs.promises.readFile(path.join(folder, 'model.safetensors.index.json'), 'utf8'));
  } catch (err) {
    throw new CliError(`${folderArg}: ${(err as Error).message}`, EXIT.NOT_FOUND);
  }
  const files: { path: string; bytes: number; sha256: string }[] = [];
  for (const p of paths) files.push({ path: p, bytes: fs.statSync(path.join(folder, p)).size, sha256: await sha256Of(path.join(folder, p)) });
  const total = files.reduce((sum, f) => sum + f.bytes, 0);
  const conn = await ctx.connect();
  const { uploadId, chunkBytes } = await call(conn, () => conn.api.models.beginImport.mutate({ teamId: conn.teamId, name, files }));
  let sending = true;
  try {
    let sent = 0;
    for (const f of files) {
      const handle = await fs.promises.open(path.join(folder, f.path), 'r');
      try {
        // Read chunk by chunk: a model's weights never sit in memory whole.
        const buffer = Buffer.alloc(chunkBytes);
        for (let offset = 0; offset < f.bytes || (f.bytes === 0 && offset === 0); ) {
          const { bytesRead } = await handle.read(buffer, 0, Math.min(chunkBytes, f.bytes - offset), offset);
          const data = buffer.subarray(0, bytesRead).toString('base64');
          await call(conn, () => conn.api.models.uploadChunk.mutate({ teamId: conn.teamId, uploadId, path: f.path, offset, data }));
          offset += bytesRead;
          sent += bytesRead;
          if (bytesRead === 0) break;
        }
      } finally {
        await handle.close();
      }
      ctx.out.note(`sent ${f.path}: ${formatBytes(sent)} of ${formatBytes(total)}`);
    }
    // Finishing ends the upload on the server whatever its answer.
    sending = false;
    const { modelId, card } = await call(conn, () => conn.api.models.finishImport.mutate({ teamId: conn.teamId, uploadId }));
    return imported(ctx, modelId, name, card);
  } catch (err) {
    // The server drops a finished or refused upload itself; one stopped midway is dropped here.
    if (sending) await conn.api.models.abandonImport.mutate({ teamId: conn.teamId, uploadId }).catch(() => undefined);
    throw err;
  }
}

/**
 * `models import hf:owner/name[@revision]`: the server downloads and checks the model itself; the
 * call answers when it is done (or refused, with the repo and the reason).
 */
export async function modelsImportHubCommand(ctx: CommandContext, repo: string, revision: string | undefined, name: string | undefined): Promise<number> {
  const conn = await ctx.connect();
  ctx.out.note(`the server is downloading hf:${repo}@${revision ?? 'main'} from the Hugging Face hub and checking it: this takes as long as the download`);
  const result = await call(conn, () => conn.api.models.importFromHub.mutate({ teamId: conn.teamId, repo, revision, name }, LONG_CALL));
  return imported(ctx, result.modelId, result.name, result.card);
}

function imported(ctx: CommandContext, modelId: string, name: string, card: ModelCard): number {
  ctx.out.document({ model: { id: modelId, name, ...card } });
  ctx.out.line(
    `model ${name} imported (${modelId}): ${card.family}, ${(card.parameters / 1e6).toFixed(card.parameters < 1e7 ? 2 : 0)} M parameters, context ${card.contextLength}, vocabulary ${card.vocabSize}, ${card.hasChatTemplate ? 'chat template' : 'no chat template'}, ${formatBytes(card.bytes)}`,
  );
  ctx.out.line(`start a run from it: whetstone run <environment> --model ${name}`);
  return EXIT.OK;
}

export async function modelsListCommand(ctx: CommandContext): Promise<number> {
  const conn = await ctx.connect();
  const models = await call(conn, () => conn.api.models.list.query({ teamId: conn.teamId }));
  ctx.out.document({ models });
  if (models.length === 0) {
    ctx.out.line('no models: import a Hugging Face folder with whetstone models import <folder> --name NAME');
    return EXIT.OK;
  }
  const now = new Date();
  ctx.out.line(
    table(
      ['ID', 'NAME', 'FAMILY', 'PARAMETERS', 'CONTEXT', 'VOCAB', 'CHAT', 'SIZE', 'RUNS', 'IMPORTED'],
      models.map((m) => [m.id, m.name, m.card.family, `${(m.card.parameters / 1e6).toFixed(2)} M`, String(m.card.contextLength), String(m.card.vocabSize), m.card.hasChatTemplate ? 'yes' : 'no', formatBytes(m.bytes), String(m.runs), `${age(m.createdAt, now)} ago`]),
    ),
  );
  return EXIT.OK;
}

/**
 * `whetstone models export`: the server writes the checkpoint as a Hugging Face folder (the
 * merge runs there, beside the files), then the CLI downloads it as a tar and unpacks it.
 */
export async function modelsExportCommand(ctx: CommandContext, ref: string, folderArg: string, format: ExportFormat): Promise<number> {
  const folder = path.resolve(ctx.io.cwd, folderArg);
  if (fs.existsSync(folder) && (!fs.statSync(folder).isDirectory() || fs.readdirSync(folder).length > 0)) {
    throw new CliError(`${folderArg} exists and is not an empty folder: name a new one`, EXIT.USAGE);
  }
  const conn = await ctx.connect();
  const { checkpointId } = await checkpointNamed(conn, ref);
  ctx.out.note(`exporting checkpoint ${checkpointId} (${format}) on the server…`);
  // Merging a large model takes minutes: the call waits for as long as it takes.
  const exported = await call(conn, () => conn.api.models.exportCheckpoint.mutate({ teamId: conn.teamId, checkpointId, format }, LONG_CALL));
  let res: Response;
  try {
    res = await fetch(`${conn.url}${exported.download}`, { headers: { authorization: `Bearer ${conn.apiKey}` } });
  } catch (err) {
    throw conn.fail(err);
  }
  if (!res.ok || !res.body) {
    const answer = (await res.json().catch(() => ({}))) as { error?: string };
    throw new CliError(`the download of ${exported.name} failed (${res.status}): ${answer.error ?? res.statusText}`, res.status === 404 ? EXIT.NOT_FOUND : EXIT.SERVER_ERROR);
  }
  // Unpacked aside and moved into place whole: a download cut midway leaves no half folder.
  const aside = `${folder}.${process.pid}.partial`;
  await fs.promises.rm(aside, { recursive: true, force: true });
  await fs.promises.mkdir(aside, { recursive: true });
  try {
    // The archive holds one folder named for the export; its files go straight into the one asked for.
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), extractTar({ cwd: aside, strip: 1 }));
    await fs.promises.rm(folder, { recursive: true, force: true });
    await fs.promises.rename(aside, folder);
  } finally {
    await fs.promises.rm(aside, { recursive: true, force: true });
  }
  ctx.out.document({ checkpointId, format, folder, files: exported.files });
  ctx.out.line(`exported checkpoint ${checkpointId} (${format}) to ${folderArg}: ${exported.files.map((f) => f.path).join(', ')} (${formatBytes(exported.bytes)})`);
  ctx.out.line(
    format === 'merged'
      ? `load it with transformers: AutoModelForCausalLM.from_pretrained("${folder}")`
      : `load it with peft on its base model: PeftModel.from_pretrained(base, "${folder}")`,
  );
  return EXIT.OK;
}
