import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { roleAtLeast } from '../../auth/roles';
import type { Role } from '../../db/generated/prisma/enums';
import type { Prisma } from '../../db/generated/prisma/client';
import { SCHEDULER_CHANNEL } from '../../scheduler/loop';
import { router, teamProcedure } from '../trpc';
import { jobConfigSchemas, resolveJobTraining, type TrainJobConfig } from '../../../sdk/job-config';
import type { Db } from '../../db/client';
import { admitJob, PRIORITY_CAP } from '../../scheduler/plan';

/** Every environment version, dataset version and checkpoint a config names must be the team's own. */
async function checkReferences(db: Db, teamId: string, config: Record<string, unknown>): Promise<void> {
  const missing = (what: string) => new TRPCError({ code: 'NOT_FOUND', message: `No such ${what} in this team` });
  if (typeof config.environmentVersionId === 'string') {
    const found = await db.environmentVersion.findFirst({ where: { id: config.environmentVersionId, environment: { teamId } } });
    if (!found) throw missing('environment version');
  }
  if (typeof config.datasetVersionId === 'string') {
    const found = await db.datasetVersion.findFirst({ where: { id: config.datasetVersionId, dataset: { teamId } } });
    if (!found) throw missing('dataset version');
  }
  const against = config.against as { checkpointId?: unknown } | undefined;
  for (const id of [config.baseCheckpointId, config.checkpointId, against?.checkpointId]) {
    if (typeof id === 'string' && !(await db.checkpoint.findFirst({ where: { id, teamId } }))) throw missing('checkpoint');
  }
}

/**
 * A TRAIN or SFT job's full training config: the manifest's options and the job's over the
 * documented defaults (sdk/training-config.ts). It is stored resolved, so the job's row says
 * exactly what it trains with, whatever defaults change later.
 */
async function resolveSubmittedTraining(db: Db, kind: 'TRAIN' | 'SFT', config: TrainJobConfig): Promise<Prisma.InputJsonObject> {
  const manifest = kind === 'TRAIN' ? (await db.environmentVersion.findUniqueOrThrow({ where: { id: config.environmentVersionId }, select: { manifest: true } })).manifest : undefined;
  const resolved = resolveJobTraining(kind, config, manifest);
  if (!resolved.ok) {
    throw new TRPCError({ code: 'BAD_REQUEST', message: `Invalid ${kind.toLowerCase()} config: ${resolved.problems.map((p) => `config.training.${p}`).join('; ')}` });
  }
  return resolved.config as Prisma.InputJsonObject;
}

const jobId = z.object({ jobId: z.string().min(1).max(64) });
const jsonObject = z.record(z.string(), z.unknown());

/** What `jobs.submit` takes (without teamId); inference.open queues through the same path. */
export const submitInput = z.object({
  kind: z.enum(['TRAIN', 'SFT', 'INFERENCE', 'EVAL']),
  experimentId: z.string().min(1).max(64).optional(),
  priority: z.number().int().min(0).max(PRIORITY_CAP).default(0),
  deviceCount: z.number().int().min(1).max(64).default(1),
  deviceKind: z.enum(['CUDA', 'CPU', 'WASM']).optional(),
  memoryBytes: z.number().int().min(0).max(2 ** 50).default(0),
  timeLimitSeconds: z.number().int().min(1).max(30 * 86400).optional(),
  maxAttempts: z.number().int().min(1).max(20).default(3),
  config: jsonObject,
});
export type SubmitInput = z.output<typeof submitInput>;

export const queuedJobSelect = { id: true, state: true, kind: true, priority: true, createdAt: true } as const;
export type QueuedJob = Prisma.JobGetPayload<{ select: typeof queuedJobSelect }>;

interface QueueContext {
  db: Db;
  user: { id: string };
  membership: { teamId: string; role: Role };
}

/**
 * Queues a job. Its config is validated against its kind's schema (sdk/job-config.ts), every id
 * it names must belong to the team, and admission applies the team's quotas (the planner's rule).
 * `reuse` runs under the team's queue lock, before admission: a job it returns is answered instead
 * of queueing a new one, so two racing callers cannot both queue (inference.open relies on it).
 */
export async function queueJob(
  ctx: QueueContext,
  input: SubmitInput,
  reuse?: (tx: Prisma.TransactionClient) => Promise<QueuedJob | null>,
): Promise<{ job: QueuedJob; reused: boolean }> {
  const teamId = ctx.membership.teamId;
  const parsed = jobConfigSchemas[input.kind].safeParse(input.config);
  if (!parsed.success) {
    throw new TRPCError({ code: 'BAD_REQUEST', message: `Invalid ${input.kind.toLowerCase()} config: ${parsed.error.issues.map((i) => `${['config', ...i.path].join('.')}: ${i.message}`).join('; ')}`, cause: parsed.error });
  }
  const config = parsed.data as Record<string, unknown>;
  await checkReferences(ctx.db, teamId, config);
  if (input.kind === 'TRAIN' || input.kind === 'SFT') config.training = await resolveSubmittedTraining(ctx.db, input.kind, config as TrainJobConfig);
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
        timeLimitSeconds: input.timeLimitSeconds,
        maxAttempts: input.maxAttempts,
        config: config as Prisma.InputJsonObject,
        events: { create: { toState: 'QUEUED', actorType: 'USER', actorId: ctx.user.id, reason: 'submitted' } },
      },
      select: queuedJobSelect,
    });
    await tx.$executeRaw`SELECT pg_notify(${SCHEDULER_CHANNEL}, ${job.id})`;
    return { job, reused: false };
  });
}

export const jobsRouter = router({
  /** Queues a job (see queueJob). */
  submit: teamProcedure('MEMBER')
    .input(submitInput)
    .mutation(async ({ ctx, input }) => (await queueJob(ctx, input)).job),

  list: teamProcedure('VIEWER')
    .input(
      z.object({
        state: z.enum(['QUEUED', 'ASSIGNED', 'RUNNING', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED']).optional(),
        limit: z.number().int().min(1).max(200).default(50),
      }),
    )
    .query(({ ctx, input }) =>
      ctx.db.job.findMany({
        where: { teamId: ctx.membership.teamId, ...(input.state ? { state: input.state } : {}) },
        orderBy: { createdAt: 'desc' },
        take: input.limit,
        select: {
          id: true, kind: true, state: true, priority: true, deviceCount: true, deviceKind: true, attempts: true,
          waitingReason: true, failureReason: true, createdAt: true, startedAt: true, finishedAt: true,
          owner: { select: { id: true, name: true } },
          // The newest sampler checkpoint: what the playground opens and `whetstone eval` scores.
          checkpoints: { where: { kind: 'SAMPLER' }, orderBy: { step: 'desc' }, take: 1, select: { id: true, step: true } },
          _count: { select: { checkpoints: true } },
        },
      }),
    ),

  get: teamProcedure('VIEWER')
    .input(jobId)
    .query(async ({ ctx, input }) => {
      const job = await ctx.db.job.findFirst({
        where: { id: input.jobId, teamId: ctx.membership.teamId },
        include: { events: { orderBy: { at: 'asc' } }, owner: { select: { id: true, name: true } } },
      });
      if (!job) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such job' });
      return job;
    }),

  /** Cancels your own job (admins: anyone's). A queued job ends at once; a running one is stopped by its worker. */
  cancel: teamProcedure('MEMBER')
    .input(jobId)
    .mutation(async ({ ctx, input }) => {
      const job = await ctx.db.job.findFirst({ where: { id: input.jobId, teamId: ctx.membership.teamId } });
      if (!job) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such job' });
      if (job.ownerId !== ctx.user.id && !roleAtLeast(ctx.membership.role, 'ADMIN')) {
        throw new TRPCError({ code: 'FORBIDDEN', message: "Only an admin can cancel another member's job" });
      }
      if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(job.state)) return { state: job.state };
      return ctx.db.$transaction(async (tx) => {
        const queued = await tx.job.updateMany({
          where: { id: job.id, state: { in: ['QUEUED', 'PREEMPTED'] } },
          data: { state: 'CANCELLED', finishedAt: new Date(), cancelRequestedAt: new Date() },
        });
        if (queued.count === 1) {
          await tx.jobEvent.create({ data: { jobId: job.id, fromState: job.state, toState: 'CANCELLED', actorType: 'USER', actorId: ctx.user.id, reason: 'cancelled before it ran' } });
          return { state: 'CANCELLED' as const };
        }
        await tx.job.update({ where: { id: job.id }, data: { cancelRequestedAt: new Date() } });
        await tx.$executeRaw`SELECT pg_notify(${SCHEDULER_CHANNEL}, ${job.id})`;
        const attempt = await tx.jobAttempt.findFirst({ where: { jobId: job.id, state: 'ACTIVE' } });
        // The worker also learns it from its next heartbeat; the push makes it immediate.
        if (attempt?.workerId) ctx.deps.realtime.signalWorker(attempt.workerId, { attemptId: attempt.id, cancel: true });
        return { state: job.state, cancelRequested: true };
      });
    }),
});
