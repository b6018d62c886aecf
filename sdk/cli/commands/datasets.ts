import fs from 'node:fs';
import path from 'node:path';
import type { Connection } from '../client';
import { MAX_REQUEST_BYTES } from '../../limits';
import { CliError, EXIT } from '../errors';
import { age, bytes, table } from '../format';
import { call, type CommandContext } from './context';

export interface UploadedDataset {
  name: string;
  datasetId: string;
  versionId: string;
  version: number;
  rowCount: number;
  created: boolean;
}

/** Stores a JSONL file as a dataset version (or finds the identical one) and says which. */
export async function uploadDataset(ctx: CommandContext, conn: Connection, file: string, name?: string): Promise<UploadedDataset> {
  const full = path.resolve(ctx.io.cwd, file);
  let jsonl: string;
  try {
    jsonl = fs.readFileSync(full, 'utf8');
  } catch {
    throw new CliError(`cannot read dataset file ${file}`, EXIT.NOT_FOUND);
  }
  const datasetName = name ?? path.basename(full);
  checkRequestSize(file, { teamId: conn.teamId, name: datasetName, jsonl });
  const saved = await call(conn, () => conn.api.datasets.upload.mutate({ teamId: conn.teamId, name: datasetName, jsonl }));
  ctx.out.line(`dataset ${datasetName}: version ${saved.version}, ${saved.rowCount} rows (${saved.created ? 'uploaded' : 'unchanged, reused'})`);
  return { name: datasetName, datasetId: saved.datasetId, versionId: saved.versionId, version: saved.version, rowCount: saved.rowCount, created: saved.created };
}

/** Refuses, before sending, a request the server would refuse for its size: naming the file and the limit. */
export function checkRequestSize(file: string, input: unknown): void {
  const size = Buffer.byteLength(JSON.stringify({ json: input }));
  if (size > MAX_REQUEST_BYTES) {
    const mb = (n: number) => `${(n / 1_000_000).toFixed(1)} MB`;
    throw new CliError(`${file} is too large to upload: the request would be ${mb(size)}, and the server takes at most ${mb(MAX_REQUEST_BYTES)}`, EXIT.REJECTED, [
      'split it into several datasets, or shorten its rows',
    ]);
  }
}

export async function datasetsUploadCommand(ctx: CommandContext, file: string, name?: string): Promise<number> {
  const conn = await ctx.connect();
  ctx.out.document({ dataset: await uploadDataset(ctx, conn, file, name) });
  return EXIT.OK;
}

export async function datasetsCommand(ctx: CommandContext): Promise<number> {
  const conn = await ctx.connect();
  const datasets = await call(conn, () => conn.api.datasets.list.query({ teamId: conn.teamId, includeArchived: false }));
  ctx.out.document({ datasets });
  if (datasets.length === 0) {
    ctx.out.line('no datasets: upload one with whetstone datasets upload <file.jsonl>');
    return EXIT.OK;
  }
  const now = new Date();
  ctx.out.line(
    table(
      ['NAME', 'VERSION', 'ROWS', 'SIZE', 'UPDATED', 'VERSION ID'],
      datasets.map((d) => [d.name, d.latest ? String(d.latest.version) : '-', d.latest ? String(d.latest.rowCount) : '-', d.latest ? bytes(d.latest.bytes) : '-', `${age(d.updatedAt, now)} ago`, d.latest?.id ?? '-']),
    ),
  );
  return EXIT.OK;
}
