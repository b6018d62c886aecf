import fs from 'node:fs';
import path from 'node:path';
import type { Command } from '../args';
import { CliError, EXIT } from '../errors';
import { httpManifest } from '../../http-manifest';
import { parseManifest } from '../../manifest';
import { validationSummary } from '../validation';
import { call, type CommandContext } from './context';
import { checkRequestSize } from './datasets';
import { failedDryRun } from './run';

type EnvCreate = Extract<Command, { name: 'env-create' }>;

/**
 * `whetstone env create <name> --http URL…`: an environment served over HTTP (docs/http-
 * environments.md), saved from the flags alone: the manifest is written here, there is no code.
 * The server dry-runs it against the live servers, as a save from the IDE is; a server that does
 * not answer leaves the version invalid, and this command says so by its URL.
 */
export async function envCreateCommand(ctx: CommandContext, command: EnvCreate): Promise<number> {
  const datasetFile = command.dataset ? readDataset(ctx, command.dataset) : null;
  const raw = httpManifest({
    name: command.environmentName,
    urls: command.urls,
    kind: command.kind,
    maxTurns: command.maxTurns,
    maxTokens: command.maxTokens,
    timeoutSeconds: command.timeoutSeconds,
    promptField: command.promptField,
    tokenSecret: command.tokenSecret,
    datasetFile: datasetFile?.name,
  });
  // The manifest's own schema first: a mistake is said here, field by field, before anything is sent.
  const parsed = parseManifest(raw);
  if (!parsed.ok) throw new CliError('these flags do not make a valid manifest', EXIT.USAGE, parsed.problems);
  const conn = await ctx.connect();
  const name = command.environmentName;
  const input = { teamId: conn.teamId, name, description: parsed.manifest.description || undefined, entry: parsed.manifest.entry, files: {}, manifest: raw, datasetText: datasetFile?.text };
  checkRequestSize('the environment (its manifest and dataset)', input);
  const saved = await call(conn, () => conn.api.environments.saveVersion.mutate(input));
  ctx.out.document({ environment: { name, environmentId: saved.environmentId, versionId: saved.versionId, version: saved.version, created: saved.created, manifest: raw, validation: saved.validation } });
  if (saved.validation && !saved.validation.ok) throw failedDryRun(name, saved.version, saved.validation, null, ctx.io.cwd);
  const how = saved.created ? `saved${saved.validation ? `; ${validationSummary(saved.validation)}` : ''}` : 'unchanged, reused';
  ctx.out.line(`environment ${name}: version ${saved.version} (${how})`);
  ctx.out.line(`train on it: whetstone run ${name} --watch`);
  return EXIT.OK;
}

function readDataset(ctx: CommandContext, file: string): { name: string; text: string } {
  try {
    return { name: path.basename(file), text: fs.readFileSync(path.resolve(ctx.io.cwd, file), 'utf8') };
  } catch {
    throw new CliError(`cannot read dataset file ${file}`, EXIT.NOT_FOUND);
  }
}
