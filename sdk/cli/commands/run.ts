import fs from 'node:fs';
import path from 'node:path';
import type { CatalogueKey } from '../../live';
import type { Command } from '../args';
import type { Connection } from '../client';
import { CliError, EXIT, UsageError } from '../errors';
import { readEnvironmentFolder, isEnvironmentFolder } from '../env-folder';
import { validationProblems, validationSummary } from '../validation';
import type { z } from 'zod';
import { resolveJobTraining, type sftJobConfigSchema, type trainJobConfigSchema } from '../../job-config';
import { applySet, type TrainingOverrides } from '../../training-config';
import { call, type CommandContext } from './context';
import { checkRequestSize, uploadDataset } from './datasets';
import { followToEnd, outcomeJson, printOutcome } from './follow';
import { checkpointNamed, modelNamed } from './references';
import type { DryRunReport } from '../../dry-run-report';

type RunCommand = Extract<Command, { name: 'run' }>;

export interface ResolvedEnvironment {
  name: string;
  environmentId: string;
  versionId: string;
  version: number;
  /** True when this run uploaded new content; false when an identical version existed. */
  created: boolean | null;
  /** The manifest's `training` as written, which the job's options are resolved over. */
  training: TrainingOverrides;
  /** A data-dependent environment's JSONL file: its path in the folder, and its text when uploaded from one. */
  dataset: { path: string; text?: string } | null;
  /** Its held-out split, for the evaluations during training: its path, and its text when uploaded from a folder. */
  heldOut: { path: string; text?: string } | null;
}

/** --config: inline JSON (it starts with "{"), else a file's path. */
function readJsonConfig(file: string, cwd: string): Record<string, unknown> {
  let text = file;
  if (!file.trimStart().startsWith('{')) {
    try {
      text = fs.readFileSync(path.resolve(cwd, file), 'utf8');
    } catch {
      throw new UsageError(`--config: cannot read ${file} (give a JSON file or inline JSON such as '{"training": {"steps": 10}}')`);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`--config: ${file} is not valid JSON: ${(e as Error).message}`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`--config: ${file} must hold a JSON object (a job config)`);
  return value as Record<string, unknown>;
}

export function failedDryRun(name: string, version: number, report: DryRunReport, dir: string | null, cwd: string): CliError {
  const problems = validationProblems(report, dir, cwd);
  return new CliError(`environment ${name} version ${version} failed its dry run; not submitted`, EXIT.REJECTED, problems.length > 0 ? problems : ['(the report names no problem; open it in the editor)']);
}

function trainingOf(manifest: unknown): TrainingOverrides {
  const training = (manifest as { training?: unknown } | null)?.training;
  return training && typeof training === 'object' && !Array.isArray(training) ? (training as TrainingOverrides) : {};
}

/** Uploads a folder (only new content makes a new version) and checks its dry run. */
async function uploadFolder(ctx: CommandContext, conn: Connection, target: string): Promise<ResolvedEnvironment> {
  const folder = readEnvironmentFolder(target, ctx.io.cwd);
  const input = {
    teamId: conn.teamId,
    name: folder.manifest.name,
    description: folder.manifest.description || undefined,
    entry: folder.manifest.entry,
    files: folder.files,
    manifest: folder.rawManifest,
    datasetText: folder.datasetText,
  };
  checkRequestSize(`the environment folder ${target} (code and dataset)`, input);
  const saved = await call(conn, () => conn.api.environments.saveVersion.mutate(input));
  const name = folder.manifest.name;
  if (saved.validation && !saved.validation.ok) throw failedDryRun(name, saved.version, saved.validation, folder.dir, ctx.io.cwd);
  const how = saved.created ? `uploaded${saved.validation ? `; ${validationSummary(saved.validation)}` : ''}` : 'unchanged, reused';
  ctx.out.line(`environment ${name}: version ${saved.version} (${how})`);
  const dataset = folder.manifest.dataset ? { path: folder.manifest.dataset.train, text: folder.datasetText } : null;
  const heldOut = folder.manifest.dataset?.heldOut ? { path: folder.manifest.dataset.heldOut, text: folder.heldOutText } : null;
  return { name, environmentId: saved.environmentId, versionId: saved.versionId, version: saved.version, created: saved.created, training: trainingOf(folder.rawManifest), dataset, heldOut };
}

/** An environment id, an environment version id, or an environment's name in the team. */
async function lookUp(ctx: CommandContext, conn: Connection, target: string): Promise<ResolvedEnvironment> {
  const api = conn.api;
  const teamId = conn.teamId;
  const notFound = (e: unknown) => conn.fail(e).exitCode === EXIT.NOT_FOUND;
  const fromEnvironment = async (environmentId: string) => {
    const env = await call(conn, () => api.environments.get.query({ teamId, environmentId }));
    const latest = env.versions[0];
    if (!latest) throw new CliError(`environment ${env.name} has no saved version`, EXIT.NOT_FOUND);
    return latest.id;
  };
  let versionId: string | null = null;
  try {
    versionId = await fromEnvironment(target);
  } catch (e) {
    if (!(e instanceof CliError && e.exitCode === EXIT.NOT_FOUND)) throw e;
  }
  if (!versionId) {
    try {
      versionId = (await api.environments.version.query({ teamId, versionId: target })).id;
    } catch (e) {
      if (!notFound(e)) throw conn.fail(e);
    }
  }
  if (!versionId) {
    const list = await call(conn, () => api.environments.list.query({ teamId, includeArchived: false }));
    const byName = list.find((env) => env.name === target);
    if (!byName) {
      throw new CliError(`no environment folder, environment id, version id or name "${target}"`, EXIT.NOT_FOUND, [
        list.length > 0 ? `the team's environments: ${list.map((env) => env.name).join(', ')}` : "the team has no environments",
      ]);
    }
    versionId = await fromEnvironment(byName.id);
  }
  const version = await call(conn, () => api.environments.version.query({ teamId, versionId: versionId! }));
  const env = await call(conn, () => api.environments.get.query({ teamId, environmentId: version.environmentId }));
  const report = version.validation as unknown as DryRunReport | null;
  if (version.validationStatus === 'INVALID' && report) throw failedDryRun(env.name, version.version, report, null, ctx.io.cwd);
  ctx.out.line(`environment ${env.name}: version ${version.version}`);
  const train = (version.manifest as { dataset?: { train?: unknown } } | null)?.dataset?.train;
  const dataset = typeof train === 'string' ? { path: train } : null;
  const heldOutPath = (version.manifest as { dataset?: { heldOut?: unknown } } | null)?.dataset?.heldOut;
  const heldOut = typeof heldOutPath === 'string' ? { path: heldOutPath } : null;
  return { name: env.name, environmentId: env.id, versionId: version.id, version: version.version, created: null, training: trainingOf(version.manifest), dataset, heldOut };
}

/**
 * The dataset version a job trains on: --dataset (a version id, or a JSONL file to upload), else
 * the config's, else for a data-dependent environment its own file — uploaded from the folder, or
 * the team's dataset of that name (`<environment>/<path>`, as the built-in templates are seeded).
 */
async function resolveDataset(ctx: CommandContext, conn: Connection, option: string | undefined, fromConfig: unknown, env: ResolvedEnvironment): Promise<string | undefined> {
  if (option !== undefined) {
    const file = path.resolve(ctx.io.cwd, option);
    if (fs.existsSync(file) && fs.statSync(file).isFile()) return (await uploadDataset(ctx, conn, option)).versionId;
    return option;
  }
  if (typeof fromConfig === 'string') return fromConfig;
  if (!env.dataset) return undefined;
  const name = `${env.name}/${env.dataset.path}`;
  if (env.dataset.text !== undefined) return (await call(conn, () => conn.api.datasets.upload.mutate({ teamId: conn.teamId, name, jsonl: env.dataset!.text! }))).versionId;
  const found = (await call(conn, () => conn.api.datasets.list.query({ teamId: conn.teamId, includeArchived: false }))).find((d) => d.name === name);
  if (!found?.latest) {
    throw new CliError(`environment ${env.name} reads a dataset, and the team has none named ${name}`, EXIT.NOT_FOUND, [
      'pass --dataset <dataset version id | file.jsonl>, or run from the environment folder to upload its file',
    ]);
  }
  ctx.out.line(`dataset ${name}: version ${found.latest.version}`);
  return found.latest.id;
}

/** The job's training options: --config's, then each --set, then --algo and --steps. */
function trainingOptions(cmd: RunCommand, fileConfig: Record<string, unknown>): TrainingOverrides {
  const given = fileConfig.training;
  let training: TrainingOverrides = given && typeof given === 'object' && !Array.isArray(given) ? { ...(given as TrainingOverrides) } : {};
  for (const assignment of cmd.set) {
    try {
      training = applySet(training, assignment);
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
  }
  if (cmd.algo) training.algorithm = cmd.algo;
  if (cmd.steps) training.steps = cmd.steps;
  return training;
}

/**
 * The held-out split the run evaluates on (`evalEvery`): uploaded from the folder, else the team's
 * dataset `<environment>/<heldOut>` (the built-in templates are seeded with theirs); none when the
 * environment names no held-out split or the team has none by that name (the job then says so).
 */
async function heldOutDataset(ctx: CommandContext, conn: Connection, env: ResolvedEnvironment): Promise<string | undefined> {
  if (!env.heldOut) return undefined;
  const name = `${env.name}/${env.heldOut.path}`;
  if (env.heldOut.text !== undefined) return (await call(conn, () => conn.api.datasets.upload.mutate({ teamId: conn.teamId, name, jsonl: env.heldOut!.text! }))).versionId;
  const found = (await call(conn, () => conn.api.datasets.list.query({ teamId: conn.teamId, includeArchived: false }))).find((d) => d.name === name);
  if (found?.latest) ctx.out.line(`held-out dataset ${name}: version ${found.latest.version}`);
  return found?.latest?.id;
}

/** `--from`: a base's name (the team's named checkpoints) or a checkpoint id. */
async function startingCheckpoint(ctx: CommandContext, conn: Connection, from: string): Promise<string> {
  const { checkpointId, base } = await checkpointNamed(conn, from);
  if (base) ctx.out.line(`starting from base ${base.name}: step ${base.step} (checkpoint ${base.id})`);
  return checkpointId;
}

/** `--model`: an imported model's name or id (whetstone models list). */
async function startingModel(ctx: CommandContext, conn: Connection, named: string): Promise<string> {
  const model = await modelNamed(conn, named);
  ctx.out.line(`starting from imported model ${model.name} (${model.card.family}, ${(model.card.parameters / 1e6).toFixed(1)} M parameters)`);
  return model.id;
}

export async function runCommand(ctx: CommandContext, cmd: RunCommand): Promise<number> {
  const fileConfig = cmd.config ? readJsonConfig(cmd.config, ctx.io.cwd) : {};
  const training = trainingOptions(cmd, fileConfig);
  if (training.algorithm === 'sft' && !cmd.dataset && typeof fileConfig.datasetVersionId !== 'string') {
    throw new UsageError('--algo sft trains on a dataset: pass --dataset <dataset version id | file.jsonl> or put datasetVersionId in --config');
  }
  const conn = await ctx.connect();
  const env = isEnvironmentFolder(cmd.target, ctx.io.cwd) ? await uploadFolder(ctx, conn, cmd.target) : await lookUp(ctx, conn, cmd.target);

  // The algorithm is the manifest's unless --config, --set or --algo names another.
  const algorithm = (training.algorithm ?? env.training.algorithm ?? 'grpo') as string;
  const sft = algorithm === 'sft';
  const datasetVersionId = await resolveDataset(ctx, conn, cmd.dataset, fileConfig.datasetVersionId, sft ? { ...env, dataset: null } : env);
  const evalDatasetVersionId = sft ? undefined : await heldOutDataset(ctx, conn, env);
  if (sft && !datasetVersionId) throw new UsageError(`${env.name} trains with sft, which needs a dataset: pass --dataset <dataset version id | file.jsonl>`);
  const kind = sft ? 'SFT' : 'TRAIN';
  const config: z.input<typeof trainJobConfigSchema> | z.input<typeof sftJobConfigSchema> = sft
    ? { ...fileConfig, datasetVersionId: datasetVersionId ?? '', training }
    : { ...fileConfig, environmentVersionId: env.versionId, ...(datasetVersionId ? { datasetVersionId } : {}), ...(evalDatasetVersionId ? { evalDatasetVersionId } : {}), training };
  if (cmd.from) config.baseCheckpointId = await startingCheckpoint(ctx, conn, cmd.from);
  if (cmd.model) config.baseModelId = await startingModel(ctx, conn, cmd.model);
  if (cmd.saveAs) config.saveAs = cmd.saveAs;
  if (cmd.tags.length > 0) config.tags = [...new Set([...(config.tags ?? []), ...cmd.tags])];
  // Resolved here only for the progress bar's total; the server resolves it again and refuses what is wrong.
  const resolved = sft ? resolveJobTraining('SFT', { training }) : resolveJobTraining('TRAIN', { training }, { training: env.training });
  const total = resolved.ok ? resolved.config.steps : null;
  const job = await call(conn, () => conn.api.jobs.submit.mutate({ teamId: conn.teamId, kind, config, ...(cmd.priority !== undefined ? { priority: cmd.priority } : {}) }));
  ctx.out.line(`submitted job ${job.id}: ${kind} ${algorithm}${total ? `, ${total} steps` : ''}, priority ${job.priority}`);
  const document = {
    environment: { name: env.name, environmentId: env.environmentId, versionId: env.versionId, version: env.version, created: env.created },
    job: { id: job.id, kind: job.kind, state: job.state, priority: job.priority, createdAt: job.createdAt, steps: total },
  };
  if (!cmd.watch) {
    ctx.out.line(`  follow it: whetstone logs ${job.id} --follow    list: whetstone jobs    stop it: whetstone cancel ${job.id}`);
    ctx.out.document(document);
    return EXIT.OK;
  }
  const keys: CatalogueKey[] = kind === 'SFT' ? ['loss/total'] : ['reward/mean', 'loss/total'];
  const outcome = await followToEnd(ctx, conn, job.id, { total, logs: cmd.logs ? 'all' : 'problems', keys });
  printOutcome(ctx, outcome, keys);
  ctx.out.document({ ...document, final: outcomeJson(outcome) });
  return outcome.exitCode;
}
