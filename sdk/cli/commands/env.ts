import fs from 'node:fs';
import path from 'node:path';
import type { Command } from '../args';
import { CliError, EXIT } from '../errors';
import { httpManifest } from '../../http-manifest';
import { parseManifest } from '../../manifest';
import { validationSummary } from '../validation';
import { call, type CommandContext } from './context';
import { checkRequestSize, uploadDataset } from './datasets';
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
    agents: command.agents,
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
  // The rows become the team's dataset `<name>/<file>`, as a folder's are on `run`: the dry run
  // reads them now, and jobs later (whetstone run <name> finds them by that name).
  if (command.dataset && datasetFile) await uploadDataset(ctx, conn, command.dataset, `${name}/${datasetFile.name}`);
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

type EnvExport = Extract<Command, { name: 'env-export' }>;
type EnvImport = Extract<Command, { name: 'env-import' }>;

/**
 * `whetstone env export <env>`: a version of the team's environment (its newest, or --version N)
 * as a package (`.wsenv`, server/environments/package.ts), to stdout or --output.
 */
export async function envExportCommand(ctx: CommandContext, command: EnvExport): Promise<number> {
  const conn = await ctx.connect();
  const { api, teamId } = conn;
  const list = await call(conn, () => api.environments.list.query({ teamId, includeArchived: true }));
  const found = list.find((env) => env.name === command.environment || env.id === command.environment);
  if (!found) {
    throw new CliError(`no environment "${command.environment}" in this team`, EXIT.NOT_FOUND, [
      list.length > 0 ? `the team's environments: ${list.map((env) => env.name).join(', ')}` : 'the team has no environments',
    ]);
  }
  const { versions } = await call(conn, () => api.environments.get.query({ teamId, environmentId: found.id }));
  const version = command.version === undefined ? versions[0] : versions.find((v) => v.version === command.version);
  if (!version) {
    throw new CliError(`environment ${found.name} has no version ${command.version ?? ''}`.trim(), EXIT.NOT_FOUND, versions.length > 0 ? [`its versions: ${versions.map((v) => v.version).join(', ')}`] : []);
  }
  const pkg = await call(conn, () => api.environments.exportPackage.query({ teamId, versionId: version.id }));
  const text = `${JSON.stringify(pkg, null, 1)}\n`;
  if (command.output === undefined) {
    ctx.io.stdout.write(text);
  } else {
    fs.writeFileSync(path.resolve(ctx.io.cwd, command.output), text);
    ctx.out.document({ package: { file: command.output, name: pkg.name, version: version.version, contentHash: pkg.contentHash, datasets: pkg.datasets.map((d) => d.file) } });
    ctx.out.line(`environment ${pkg.name} version ${version.version} written to ${command.output} (content hash ${pkg.contentHash.slice(0, 12)}…)`);
  }
  return EXIT.OK;
}

/** `whetstone env import <file>`: a package into the team, keeping its content hash. */
export async function envImportCommand(ctx: CommandContext, command: EnvImport): Promise<number> {
  let text: string;
  try {
    text = fs.readFileSync(path.resolve(ctx.io.cwd, command.file), 'utf8');
  } catch {
    throw new CliError(`cannot read package file ${command.file}`, EXIT.NOT_FOUND);
  }
  let pkg: unknown;
  try {
    pkg = JSON.parse(text);
  } catch (e) {
    throw new CliError(`${command.file} is not a Whetstone environment package: not JSON (${(e as Error).message})`, EXIT.USAGE, ['make one with whetstone env export <environment>']);
  }
  const conn = await ctx.connect();
  const input = { teamId: conn.teamId, package: pkg as Parameters<typeof conn.api.environments.importPackage.mutate>[0]['package'], name: command.environmentName };
  checkRequestSize(command.file, input);
  const imported = await call(conn, () => conn.api.environments.importPackage.mutate(input));
  ctx.out.document({ environment: imported });
  if (imported.validation && !imported.validation.ok) throw failedDryRun(imported.name, imported.version, imported.validation, null, ctx.io.cwd);
  const hash = imported.keptContentHash ? 'its content hash kept' : 'renamed, so its content hash is new';
  ctx.out.line(`environment ${imported.name}: version ${imported.version} (${imported.created ? `imported, ${hash}` : 'unchanged: the team has this version'})`);
  for (const d of imported.datasets) ctx.out.line(`  dataset ${d.name}: version ${d.version}`);
  ctx.out.line(`train on it: whetstone run ${imported.name} --watch`);
  return EXIT.OK;
}
