import { TRPCError } from '@trpc/server';
import { type DryRunReport, firstProblem } from '../../sdk/dry-run-report';
import { jobConfigSchemas, resolveJobTraining, type TrainJobConfig } from '../../sdk/job-config';
import { estimateTrainingBytes, type TrainingConfig } from '../../sdk/training-config';
import { roleAtLeast } from '../auth/roles';
import type { Db } from '../db/client';
import type { Prisma } from '../db/generated/prisma/client';
import { admitJob } from '../scheduler/admission';
import { notifyScheduler } from '../scheduler/notify';
import type { TeamMemberContext } from './context';
import type { SubmitInput } from './submit.schema';

/** Every environment version, dataset version and checkpoint a config names must be the team's own. */
async function checkReferences(db: Db, teamId: string, config: Record<string, unknown>): Promise<void> {
  const missing = (what: string) => new TRPCError({ code: 'NOT_FOUND', message: `No such ${what} in this team` });
  if (typeof config.environmentVersionId === 'string') {
    const found = await db.environmentVersion.findFirst({ where: { id: config.environmentVersionId, environment: { teamId } } });
    if (!found) throw missing('environment version');
  }
  // A warm start's dataset may come from the job's training or from the manifest's (resolved here).
  const warmStart = (config.training as { warmStart?: { datasetVersionId?: unknown } | null } | undefined)?.warmStart;
  for (const id of [config.datasetVersionId, config.evalDatasetVersionId, warmStart?.datasetVersionId]) {
    if (typeof id === 'string' && !(await db.datasetVersion.findFirst({ where: { id, dataset: { teamId } } }))) throw missing('dataset version');
  }
  const against = config.against as { checkpointId?: unknown } | undefined;
  for (const id of [config.baseCheckpointId, config.checkpointId, against?.checkpointId]) {
    if (typeof id === 'string' && !(await db.checkpoint.findFirst({ where: { id, teamId } }))) throw missing('checkpoint');
  }
}

/**
 * A TRAIN or SFT job's full training config: the manifest's options and the job's over the
 * documented defaults (sdk/training-config.ts). It is stored resolved, so the job's row says
 * exactly what it trains with, whatever defaults change later. A TRAIN job on a version whose dry
 * run failed is refused here, whatever a client checked before.
 */
async function resolveSubmittedTraining(db: Db, teamId: string, kind: 'TRAIN' | 'SFT', config: TrainJobConfig): Promise<Prisma.InputJsonObject> {
  let manifest: unknown;
  if (kind === 'TRAIN') {
    const version = await db.environmentVersion.findUniqueOrThrow({
      where: { id: config.environmentVersionId },
      select: { manifest: true, version: true, validationStatus: true, validation: true, environment: { select: { name: true } } },
    });
    if (version.validationStatus === 'INVALID') {
      const report = version.validation as unknown as DryRunReport | null;
      const why = report ? firstProblem(report) : 'see its report';
      throw new TRPCError({ code: 'BAD_REQUEST', message: `Environment ${version.environment.name} version ${version.version} failed its dry run: ${why}. Fix it and save a new version.` });
    }
    manifest = version.manifest;
  }
  const resolved = resolveJobTraining(kind, config, manifest);
  if (!resolved.ok) {
    throw new TRPCError({ code: 'BAD_REQUEST', message: `Invalid ${kind.toLowerCase()} config: ${resolved.problems.map((p) => `config.training.${p}`).join('; ')}` });
  }
  await refuseWhatFitsNowhere(db, teamId, resolved.config);
  return resolved.config as Prisma.InputJsonObject;
}

/**
 * Refuses a run no device of the team's pools could hold (its estimated memory: weights, optimiser
 * state, activations, KV cache), with both sizes: it would otherwise wait for ever, or start and
 * die out of memory. Devices that do not say their memory are not counted against it.
 */
async function refuseWhatFitsNowhere(db: Db, teamId: string, training: TrainingConfig): Promise<void> {
  const needed = estimateTrainingBytes(training);
  const largest = await db.workerDevice.aggregate({
    _max: { memoryBytes: true },
    where: { memoryBytes: { gt: 0 }, worker: { state: { not: 'REVOKED' }, OR: [{ teamId }, { teamId: null }] } },
  });
  const most = Number(largest._max.memoryBytes ?? 0);
  if (most > 0 && needed > most) {
    const gb = (n: number) => `${(n / 1024 ** 3).toFixed(n < 1024 ** 3 ? 2 : 1)} GB`;
    throw new TRPCError({
      code: 'BAD_REQUEST',
      message: `This run needs about ${gb(needed)} (weights, optimiser state, activations, KV cache) and the largest device of this team's workers has ${gb(most)}: make the model (training.model), the batch (batchSize × groupSize) or the context smaller, or use miniBatches.`,
    });
  }
}

export const queuedJobSelect = { id: true, state: true, kind: true, priority: true, createdAt: true } as const;
type QueuedJob = Prisma.JobGetPayload<{ select: typeof queuedJobSelect }>;

/**
 * Queues a job. Its config is validated against its kind's schema (sdk/job-config.ts), every id
 * it names must belong to the team, and admission applies the team's quotas (the planner's rule).
 * `reuse` runs under the team's queue lock, before admission: a job it returns is answered instead
 * of queueing a new one, so two racing callers cannot both queue (inference.open relies on it).
 */
export async function submitJob({
  ctx,
  input,
  reuse,
}: {
  ctx: TeamMemberContext;
  input: SubmitInput;
  reuse?: (tx: Prisma.TransactionClient) => Promise<QueuedJob | null>;
}): Promise<{ job: QueuedJob; reused: boolean }> {
  const teamId = ctx.membership.teamId;
  const parsed = jobConfigSchemas[input.kind].safeParse(input.config);
  if (!parsed.success) {
    throw new TRPCError({ code: 'BAD_REQUEST', message: `Invalid ${input.kind.toLowerCase()} config: ${parsed.error.issues.map((i) => `${['config', ...i.path].join('.')}: ${i.message}`).join('; ')}`, cause: parsed.error });
  }
  const config = parsed.data as Record<string, unknown>;
  await checkReferences(ctx.db, teamId, config);
  if (input.kind === 'TRAIN' || input.kind === 'SFT') {
    config.training = await resolveSubmittedTraining(ctx.db, teamId, input.kind, config as TrainJobConfig);
    await checkReferences(ctx.db, teamId, { training: config.training });
  }
  if (input.experimentId && !(await ctx.db.experiment.findFirst({ where: { id: input.experimentId, teamId } }))) {
    throw new TRPCError({ code: 'NOT_FOUND', message: 'No such experiment in this team' });
  }
  const quota = await ctx.db.teamQuota.upsert({ where: { teamId }, update: {}, create: { teamId } });
  const mayExceedMaxPriority = roleAtLeast(ctx.membership.role, 'ADMIN');
  return ctx.db.$transaction(async (tx) => {
    // Serialise admissions per team so two submits cannot both take the last queue slot.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`queue:${teamId}`}))`;
    const existing = reuse ? await reuse(tx) : null;
    if (existing) return { job: existing, reused: true };
    const queuedJobs = await tx.job.count({ where: { teamId, state: 'QUEUED' } });
    const admission = admitJob({ deviceCount: input.deviceCount, priority: input.priority, queuedJobs, quota, mayExceedMaxPriority });
    if (!admission.ok) {
      const code = input.priority > quota.maxPriority && !mayExceedMaxPriority ? 'FORBIDDEN' : queuedJobs >= quota.maxQueuedJobs ? 'TOO_MANY_REQUESTS' : 'BAD_REQUEST';
      throw new TRPCError({ code, message: `Not queued: ${admission.reason}` });
    }
    const job = await tx.job.create({
      data: {
        teamId,
        ownerId: ctx.user.id,
        experimentId: input.experimentId,
        kind: input.kind,
        priority: input.priority,
        deviceCount: input.deviceCount,
        deviceKind: input.deviceKind,
        memoryBytes: BigInt(input.memoryBytes),
        // Every job has a limit: the team's default when none is asked for (the time-limit path ends it).
        timeLimitSeconds: input.timeLimitSeconds ?? quota.defaultTimeLimitSeconds,
        maxAttempts: input.maxAttempts,
        config: config as Prisma.InputJsonObject,
        events: { create: { toState: 'QUEUED', actorType: 'USER', actorId: ctx.user.id, reason: 'submitted' } },
      },
      select: queuedJobSelect,
    });
    await notifyScheduler(tx, job.id);
    return { job, reused: false };
  });
}
