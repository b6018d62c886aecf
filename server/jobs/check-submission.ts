import type { TRPC_ERROR_CODE_KEY } from '@trpc/server';
import { type DryRunReport, firstProblem } from '../../sdk/dry-run-report';
import { jobConfigSchemas, resolveJobTraining, type TrainJobConfig } from '../../sdk/job-config';
import { estimatePretrainedBytes, estimateTrainingBytes, OPPONENT_CHECKPOINT, type TrainingConfig } from '../../sdk/training-config';
import { type ModelCard, modelCardSchema } from '../../sdk/models';
import { roleAtLeast } from '../auth/roles';
import type { Db } from '../db/client';
import type { Role } from '../db/generated/prisma/enums';
import { environmentDatasetName, manifestDatasetFiles } from '../environments/dataset';
import { admitJob, DEFAULT_QUOTA } from '../scheduler/admission';
import type { SubmitInput } from './submit.schema';

// The one check of a job submission, shared by jobs.submit (which then queues) and jobs.preview
// (which answers the launcher before anything is created): the two cannot disagree about what is
// refused or why. Every refusal names the offending input, so the launcher shows it beside its field.

/**
 * Why a submission is refused. `field` is the path of the offending input: a config path
 * ("training.learningRate", "datasetVersionId") or a field of the submission itself ("priority",
 * "deviceCount"); absent when no one field is to blame (a full queue).
 */
export interface Refusal {
  code: TRPC_ERROR_CODE_KEY;
  field?: string;
  message: string;
  cause?: unknown;
}

/** The team's limits a submission is checked against (a TeamQuota row, or the schema's defaults). */
export interface SubmissionQuota {
  maxConcurrentDevices: number;
  maxQueuedJobs: number;
  maxPriority: number;
  defaultTimeLimitSeconds: number;
}

/** The schema's TeamQuota defaults, for a team without a row (read without writing one). */
export const QUOTA_DEFAULTS: SubmissionQuota = { ...DEFAULT_QUOTA, defaultTimeLimitSeconds: 86_400 };

export interface CheckedSubmission {
  /** The config the job stores: validated, with a TRAIN or SFT job's `training` fully resolved. */
  config: Record<string, unknown>;
  /** TRAIN and SFT: the resolved training config (also `config.training`). */
  training: TrainingConfig | null;
  /** TRAIN and SFT: the estimated memory of the run and the largest device of the team's pools (null: none says). */
  estimate: { bytes: number; fits: boolean; largestDeviceBytes: number | null } | null;
  /** The least device memory the job may ask for (a pretrained model's run: its estimate). */
  minMemoryBytes?: number;
}

export type CheckResult = ({ ok: true } & CheckedSubmission) | ({ ok: false } & Refusal);

interface Caller {
  db: Db;
  teamId: string;
}

const refuse = (code: TRPC_ERROR_CODE_KEY, message: string, field?: string, cause?: unknown): { ok: false } & Refusal => ({
  ok: false,
  code,
  message,
  ...(field === undefined ? {} : { field }),
  ...(cause === undefined ? {} : { cause }),
});

/**
 * Everything about a submission that does not depend on the queue: the config against its
 * kind's schema, every id it names belonging to the team, a version whose dry run failed, a
 * data-dependent environment without its dataset, the training options resolved over the
 * manifest's, and a run no device of the team's pools could hold. Reads only.
 */
export async function checkSubmission({ db, teamId }: Caller, input: SubmitInput): Promise<CheckResult> {
  const parsed = jobConfigSchemas[input.kind].safeParse(input.config);
  if (!parsed.success) {
    const issues = parsed.error.issues;
    const message = `Invalid ${input.kind.toLowerCase()} config: ${issues.map((i) => `${['config', ...i.path].join('.')}: ${i.message}`).join('; ')}`;
    return refuse('BAD_REQUEST', message, issues[0].path.join('.') || undefined, parsed.error);
  }
  const config = parsed.data as Record<string, unknown>;
  const missing = await missingReference(db, teamId, config);
  if (missing) return missing;
  // A checkpoint of an imported model (a run's start, an evaluation's or a playground's policy)
  // loads on that model: the worker needs its files too.
  const checkpointId = config.baseCheckpointId ?? config.checkpointId;
  const inherited = await baseModelOfCheckpoint(db, teamId, checkpointId);
  if (inherited && config.baseModelId === undefined) config.baseModelId = inherited;
  else if (inherited && config.baseModelId !== inherited) return refuse('BAD_REQUEST', `checkpoint ${String(checkpointId)} is of imported model ${inherited}, not ${String(config.baseModelId)}: leave baseModelId out`, 'baseModelId');
  else if (!inherited && typeof checkpointId === 'string' && config.baseModelId !== undefined) {
    return refuse('BAD_REQUEST', `checkpoint ${checkpointId} is not of an imported model: start from the checkpoint or from the model (baseModelId), not both`, 'baseModelId');
  }
  // The model must still be the team's (a checkpoint's may have been removed since).
  const card = typeof config.baseModelId === 'string' ? await modelCard(db, teamId, config.baseModelId) : null;
  if (config.baseModelId !== undefined && !card) {
    return refuse('NOT_FOUND', inherited ? `No such model in this team: checkpoint ${String(checkpointId)} was trained on imported model ${inherited}, which has been removed` : 'No such model in this team', 'baseModelId');
  }
  if (card && !card.hasChatTemplate && input.kind !== 'INFERENCE') {
    return refuse('BAD_REQUEST', 'This model has no chat template, and runs lay out every conversation with it: import a chat or instruct version of the model (with chat_template.jinja or tokenizer_config.json\'s chat_template)', 'baseModelId');
  }
  // An evaluation's opposing checkpoint loads on the job's model: one of another model cannot.
  const against = (config.against as { checkpointId?: unknown } | undefined)?.checkpointId;
  const opposing = await foreignModelCheckpoint(db, teamId, against, config.baseModelId, 'against.checkpointId');
  if (opposing) return opposing;
  const dataset = input.kind === 'TRAIN' || input.kind === 'EVAL' ? await datasetProblem(db, teamId, input.kind, config) : null;
  if (dataset) return dataset;
  if (input.experimentId && !(await db.experiment.findFirst({ where: { id: input.experimentId, teamId }, select: { id: true } }))) {
    return refuse('NOT_FOUND', 'No such experiment in this team', 'experimentId');
  }
  // Evaluating or serving a pretrained checkpoint holds the model's f32 weights and a KV cache.
  if (input.kind !== 'TRAIN' && input.kind !== 'SFT') return { ok: true, config, training: null, estimate: null, minMemoryBytes: card ? Math.ceil(card.parameters * 4 * 1.5) : 0 };

  const resolved = await resolveSubmittedTraining(db, input.kind, config as TrainJobConfig);
  if (!resolved.ok) return resolved;
  // A warm start's dataset may come from the job's training or from the manifest's: checked resolved.
  const warmDataset = (resolved.training as { warmStart?: { datasetVersionId?: unknown } | null }).warmStart?.datasetVersionId;
  if (typeof warmDataset === 'string' && !(await db.datasetVersion.findFirst({ where: { id: warmDataset, dataset: { teamId } }, select: { id: true } }))) {
    return refuse('NOT_FOUND', 'No such dataset version in this team', 'training.warmStart.datasetVersionId');
  }
  const opponent = await missingOpponentCheckpoint(db, teamId, resolved.training, config.baseModelId);
  if (opponent) return opponent;
  const estimate = await memoryEstimate(db, teamId, resolved.training, card);
  if (!estimate.fits) {
    const gb = (n: number) => `${(n / 1024 ** 3).toFixed(n < 1024 ** 3 ? 2 : 1)} GB`;
    return refuse(
      'BAD_REQUEST',
      `This run needs about ${gb(estimate.bytes)} (weights, optimiser state, activations, KV cache) and the largest device of this team's workers has ${gb(estimate.largestDeviceBytes ?? 0)}: make the model (${card ? 'a smaller imported model, or LoRA' : 'training.model'}), the batch (batchSize × groupSize) or the context smaller, or use miniBatches.`,
      card ? 'baseModelId' : 'training.model',
    );
  }
  // A pretrained model's size is part of the run's resource request, so that placement never
  // hands it to a device it cannot fit on (the engine's own small models ask for nothing).
  return { ok: true, config: { ...config, training: resolved.training }, training: resolved.training, estimate, minMemoryBytes: card ? estimate.bytes : 0 };
}

/** Every environment version, dataset version and checkpoint a config names must be the team's own. */
async function missingReference(db: Db, teamId: string, config: Record<string, unknown>): Promise<({ ok: false } & Refusal) | null> {
  const missing = (what: string, field: string) => refuse('NOT_FOUND', `No such ${what} in this team`, field);
  if (typeof config.environmentVersionId === 'string') {
    const found = await db.environmentVersion.findFirst({ where: { id: config.environmentVersionId, environment: { teamId } }, select: { id: true } });
    if (!found) return missing('environment version', 'environmentVersionId');
  }
  for (const field of ['datasetVersionId', 'evalDatasetVersionId'] as const) {
    const id = config[field];
    if (typeof id === 'string' && !(await db.datasetVersion.findFirst({ where: { id, dataset: { teamId } }, select: { id: true } }))) return missing('dataset version', field);
  }
  const against = config.against as { checkpointId?: unknown } | undefined;
  const checkpoints: Array<[unknown, string]> = [[config.baseCheckpointId, 'baseCheckpointId'], [config.checkpointId, 'checkpointId'], [against?.checkpointId, 'against.checkpointId']];
  for (const [id, field] of checkpoints) {
    if (typeof id === 'string' && !(await db.checkpoint.findFirst({ where: { id, teamId }, select: { id: true } }))) return missing('checkpoint', field);
  }
  return null;
}

/** The imported model the job that wrote a checkpoint started from, if any. */
async function baseModelOfCheckpoint(db: Db, teamId: string, checkpointId: unknown): Promise<string | null> {
  if (typeof checkpointId !== 'string') return null;
  const row = await db.checkpoint.findFirst({ where: { id: checkpointId, teamId }, select: { job: { select: { config: true } } } });
  const base = (row?.job?.config as { baseModelId?: unknown } | undefined)?.baseModelId;
  return typeof base === 'string' ? base : null;
}

async function modelCard(db: Db, teamId: string, modelId: string): Promise<ModelCard | null> {
  const row = await db.pretrainedModel.findFirst({ where: { id: modelId, teamId }, select: { card: true } });
  return row ? modelCardSchema.parse(row.card) : null;
}

/**
 * A multi-agent opponent mix may name saved checkpoints of the team's ("checkpoint:<id>", frozen
 * opponents): each must be the team's own. The scheduler hands their storage keys to the worker
 * with the assignment's blobKeys (server/scheduler/assignments.ts).
 */
async function missingOpponentCheckpoint(db: Db, teamId: string, training: TrainingConfig, baseModelId: unknown): Promise<({ ok: false } & Refusal) | null> {
  const mix = (training as { opponents?: Record<string, number> }).opponents ?? {};
  for (const name of Object.keys(mix)) {
    if (!name.startsWith(OPPONENT_CHECKPOINT)) continue;
    const id = name.slice(OPPONENT_CHECKPOINT.length);
    if (!(await db.checkpoint.findFirst({ where: { id, teamId }, select: { id: true } }))) {
      return refuse('NOT_FOUND', `No such checkpoint in this team: training.opponents names "${name}"`, 'training.opponents');
    }
    const foreign = await foreignModelCheckpoint(db, teamId, id, baseModelId, 'training.opponents');
    if (foreign) return foreign;
  }
  return null;
}

/**
 * A frozen opponent's checkpoint loads on the job's own model (a worker holds one imported model
 * per job): a checkpoint of another imported model, or of one where the policy is the engine's own
 * GPT (or the reverse), is refused here rather than failing on the worker.
 */
async function foreignModelCheckpoint(db: Db, teamId: string, checkpointId: unknown, baseModelId: unknown, field: string): Promise<({ ok: false } & Refusal) | null> {
  if (typeof checkpointId !== 'string') return null;
  const its = await baseModelOfCheckpoint(db, teamId, checkpointId);
  const mine = typeof baseModelId === 'string' ? baseModelId : null;
  if (its === mine) return null;
  const what = (model: string | null) => (model ? `imported model ${model}` : "the engine's own model");
  return refuse('BAD_REQUEST', `checkpoint ${checkpointId} is of ${what(its)} and this job's policy is of ${what(mine)}: a frozen opponent plays on the job's model, so pick a checkpoint of the same one`, field);
}

/**
 * A data-dependent environment reads rows: a TRAIN or EVAL job on one must name a dataset version
 * (the runner would otherwise fail at its start). The answer names the team's dataset that the
 * environment's manifest implies (server/environments/dataset.ts), when there is one.
 */
async function datasetProblem(db: Db, teamId: string, kind: 'TRAIN' | 'EVAL', config: Record<string, unknown>): Promise<({ ok: false } & Refusal) | null> {
  if (typeof config.datasetVersionId === 'string' || typeof config.environmentVersionId !== 'string') return null;
  const version = await db.environmentVersion.findUniqueOrThrow({
    where: { id: config.environmentVersionId },
    select: { manifest: true, environment: { select: { name: true } } },
  });
  const files = manifestDatasetFiles(version.manifest);
  if (files.train === undefined) return null;
  // An evaluation reads the held-out split where there is one (gpu-worker/job-runner/eval.ts).
  const name = environmentDatasetName(version.environment.name, kind === 'EVAL' && files.heldOut !== undefined ? files.heldOut : files.train);
  const dataset = await db.dataset.findFirst({
    where: { teamId, name, archivedAt: null },
    select: { versions: { orderBy: { version: 'desc' }, take: 1, select: { id: true, version: true } } },
  });
  const latest = dataset?.versions[0];
  const hint = latest ? `the team's dataset ${name} is at version ${latest.version} (id ${latest.id})` : `upload one (e.g. as ${name})`;
  return refuse('BAD_REQUEST', `Environment ${version.environment.name} reads dataset rows: set datasetVersionId; ${hint}.`, 'datasetVersionId');
}

/**
 * A TRAIN or SFT job's full training config: the manifest's options and the job's over the
 * documented defaults (sdk/training-config.ts). It is stored resolved, so the job's row says
 * exactly what it trains with, whatever defaults change later. A TRAIN job on a version whose dry
 * run failed is refused here, whatever a client checked before.
 */
async function resolveSubmittedTraining(db: Db, kind: 'TRAIN' | 'SFT', config: TrainJobConfig): Promise<{ ok: true; training: TrainingConfig } | ({ ok: false } & Refusal)> {
  let manifest: unknown;
  if (kind === 'TRAIN') {
    const version = await db.environmentVersion.findUniqueOrThrow({
      where: { id: config.environmentVersionId },
      select: { manifest: true, version: true, validationStatus: true, validation: true, environment: { select: { name: true } } },
    });
    if (version.validationStatus === 'INVALID') {
      const report = version.validation as unknown as DryRunReport | null;
      const why = report ? firstProblem(report) : 'see its report';
      return refuse('BAD_REQUEST', `Environment ${version.environment.name} version ${version.version} failed its dry run: ${why}. Fix it and save a new version.`, 'environmentVersionId');
    }
    manifest = version.manifest;
  }
  const resolved = resolveJobTraining(kind, config, manifest);
  if (!resolved.ok) {
    // Each problem reads "<option path>: <what is wrong>" (sdk/training-config.ts).
    const option = /^([A-Za-z0-9_.]+): /.exec(resolved.problems[0])?.[1];
    return refuse('BAD_REQUEST', `Invalid ${kind.toLowerCase()} config: ${resolved.problems.map((p) => `config.training.${p}`).join('; ')}`, option ? `training.${option}` : 'training');
  }
  return { ok: true, training: resolved.config };
}

/**
 * The run's estimated memory (weights, optimiser state, activations, KV cache) against the
 * largest device of the team's pools: a run none could hold would wait for ever, or start and die
 * out of memory. Devices that do not say their memory are not counted against it.
 */
async function memoryEstimate(db: Db, teamId: string, training: TrainingConfig, card: ModelCard | null): Promise<{ bytes: number; fits: boolean; largestDeviceBytes: number | null }> {
  const bytes = card ? estimatePretrainedBytes(training, card, Math.min(training.model.contextLength, card.contextLength)) : estimateTrainingBytes(training);
  const largest = await db.workerDevice.aggregate({
    _max: { memoryBytes: true },
    where: { memoryBytes: { gt: 0 }, worker: { state: { not: 'REVOKED' }, OR: [{ teamId }, { teamId: null }] } },
  });
  const most = largest._max.memoryBytes === null ? null : Number(largest._max.memoryBytes);
  return { bytes, fits: most === null || bytes <= most, largestDeviceBytes: most };
}

/**
 * The quota check at submit time (the planner's rule, admission.ts), with the status a refusal
 * answers: FORBIDDEN for a priority above what the caller may ask, TOO_MANY_REQUESTS for a full
 * queue, else BAD_REQUEST. `queuedJobs` is the team's QUEUED jobs now.
 */
export function admissionRefusal(input: Pick<SubmitInput, 'deviceCount' | 'priority'>, quota: SubmissionQuota, queuedJobs: number, role: Role): Refusal | null {
  const mayExceedMaxPriority = roleAtLeast(role, 'ADMIN');
  const admission = admitJob({ deviceCount: input.deviceCount, priority: input.priority, queuedJobs, quota: { teamId: '', ...quota }, mayExceedMaxPriority });
  if (admission.ok) return null;
  const message = `Not queued: ${admission.reason}`;
  if (input.priority > quota.maxPriority && !mayExceedMaxPriority) return { code: 'FORBIDDEN', field: 'priority', message };
  if (queuedJobs >= quota.maxQueuedJobs) return { code: 'TOO_MANY_REQUESTS', message };
  return { code: 'BAD_REQUEST', field: input.deviceCount > quota.maxConcurrentDevices ? 'deviceCount' : 'priority', message };
}
