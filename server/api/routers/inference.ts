import { randomUUID } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { cancelJob } from '../../jobs/cancel.handler';
import { queuedJobSelect, submitJob } from '../../jobs/submit.handler';
import { agentSystemPrompt, type DryRunReport } from '../../../sdk/dry-run-report';
import { sampleParamsSchema } from '../../../sdk/worker-protocol';
import { router, teamProcedure } from '../trpc';

/**
 * Inference sessions: the playground's one click. A session is an INFERENCE job holding a
 * checkpoint loaded on a worker; `sample` sends a request to that worker over socket.io and the
 * tokens come back to the run's room (`run:<jobId>`, event "sample") as they are produced. The
 * worker ends the session by itself after the job's idleSeconds without a request.
 */
const LIVE = ['QUEUED', 'ASSIGNED', 'RUNNING'] as const;

export const inferenceRouter = router({
  /**
   * What the playground shows of a checkpoint before a session is open: the checkpoint, the run
   * that wrote it, and a first prompt in its environment's own words (the system prompt and first
   * observation of the version's dry run, for its first agent) to start from.
   */
  checkpoint: teamProcedure('VIEWER')
    .input(z.object({ checkpointId: z.string().min(1).max(64) }))
    .query(async ({ ctx, input }) => {
      const checkpoint = await ctx.db.checkpoint.findFirst({
        where: { id: input.checkpointId, teamId: ctx.membership.teamId },
        select: { id: true, kind: true, step: true, bytes: true, isAdapter: true, createdAt: true, jobId: true, job: { select: { config: true } } },
      });
      if (!checkpoint) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such checkpoint in this team' });
      const versionId = (checkpoint.job?.config as { environmentVersionId?: unknown } | null)?.environmentVersionId;
      const version =
        typeof versionId === 'string'
          ? await ctx.db.environmentVersion.findFirst({
              where: { id: versionId, environment: { teamId: ctx.membership.teamId } },
              select: { id: true, version: true, validation: true, environment: { select: { id: true, name: true } } },
            })
          : null;
      // A checkpoint of an imported model: the playground names the model and offers its export.
      const modelId = (checkpoint.job?.config as { baseModelId?: unknown } | null)?.baseModelId;
      const model = typeof modelId === 'string' ? await ctx.db.pretrainedModel.findFirst({ where: { id: modelId, teamId: ctx.membership.teamId }, select: { id: true, name: true, family: true } }) : null;
      const report = version?.validation as Partial<DryRunReport> | null | undefined;
      const agents = report?.description?.agents ?? [];
      const first = report?.transcripts?.find((t) => t.turns.length > 0);
      const agent = first?.turns[0].agent ?? agents[0];
      return {
        checkpoint: { id: checkpoint.id, kind: checkpoint.kind, step: checkpoint.step, bytes: Number(checkpoint.bytes), isAdapter: checkpoint.isAdapter, createdAt: checkpoint.createdAt, jobId: checkpoint.jobId },
        model,
        environment: version ? { id: version.environment.id, name: version.environment.name, versionId: version.id, version: version.version, agents, bots: report?.description?.bots ?? [] } : null,
        example: first && agent ? { agent, system: agentSystemPrompt(first.systemPrompts[agent] ?? '', report?.description?.toolPrompt ?? ''), observation: first.turns[0].observation } : null,
      };
    }),

  /** Reuses the team's live session for this checkpoint (or imported model), or queues one (priority 0, one device). */
  open: teamProcedure('MEMBER')
    .input(
      z
        .object({
          checkpointId: z.string().min(1).max(64).optional(),
          /** An imported model served as it was imported (no checkpoint). */
          modelId: z.string().min(1).max(64).optional(),
          idleSeconds: z.number().int().min(10).max(86_400).optional(),
        })
        .refine((i) => (i.checkpointId === undefined) !== (i.modelId === undefined), { message: 'name either a checkpointId or a modelId', path: ['checkpointId'] }),
    )
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      if (input.checkpointId !== undefined && !(await ctx.db.checkpoint.findFirst({ where: { id: input.checkpointId, teamId }, select: { id: true } }))) {
        throw new TRPCError({ code: 'NOT_FOUND', message: 'No such checkpoint in this team' });
      }
      if (input.modelId !== undefined && !(await ctx.db.pretrainedModel.findFirst({ where: { id: input.modelId, teamId }, select: { id: true } }))) {
        throw new TRPCError({ code: 'NOT_FOUND', message: 'No such model in this team' });
      }
      const served = input.checkpointId !== undefined ? { checkpointId: input.checkpointId } : { baseModelId: input.modelId! };
      const config = { ...served, ...(input.idleSeconds ? { idleSeconds: input.idleSeconds } : {}) };
      // The live-session lookup runs under the team's queue lock, so two clicks at once share one session.
      const { job, reused } = await submitJob({
        ctx,
        input: { kind: 'INFERENCE', priority: 0, deviceCount: 1, memoryBytes: 0, maxAttempts: 3, config },
        reuse: async (tx) => {
          if (input.checkpointId !== undefined) {
            return tx.job.findFirst({
              where: { teamId, kind: 'INFERENCE', state: { in: [...LIVE] }, cancelRequestedAt: null, config: { path: ['checkpointId'], equals: input.checkpointId } },
              orderBy: { createdAt: 'desc' },
              select: queuedJobSelect,
            });
          }
          // A model's own session is one without a checkpoint (a checkpoint's session names its model too).
          const [live] = await tx.$queryRaw<{ id: string }[]>`
            SELECT id FROM "Job"
             WHERE "teamId" = ${teamId} AND kind = 'INFERENCE' AND state::text = ANY(${[...LIVE]}::text[]) AND "cancelRequestedAt" IS NULL
               AND config->>'baseModelId' = ${input.modelId!} AND NOT (config ? 'checkpointId')
             ORDER BY "createdAt" DESC LIMIT 1`;
          return live ? tx.job.findUnique({ where: { id: live.id }, select: queuedJobSelect }) : null;
        },
      });
      return { jobId: job.id, state: job.state, reused };
    }),

  /** Sends a sampling request to the session's worker; answers its id (tokens arrive on the run's room). */
  sample: teamProcedure('MEMBER')
    .input(sampleParamsSchema.extend({ jobId: z.string().min(1).max(64) }))
    .mutation(async ({ ctx, input }) => {
      const job = await ctx.db.job.findFirst({ where: { id: input.jobId, teamId: ctx.membership.teamId, kind: 'INFERENCE' }, select: { id: true, state: true } });
      if (!job) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such inference session' });
      const attempt = job.state === 'RUNNING' ? await ctx.db.jobAttempt.findFirst({ where: { jobId: job.id, state: 'ACTIVE' }, select: { id: true, workerId: true } }) : null;
      if (!attempt?.workerId) {
        throw new TRPCError({ code: 'PRECONDITION_FAILED', message: `The session is not running (it is ${job.state.toLowerCase()})` });
      }
      const requestId = randomUUID();
      const { jobId: _jobId, teamId: _teamId, ...params } = input;
      ctx.deps.realtime.requestSample(attempt.workerId, { requestId, attemptId: attempt.id, ...params });
      return { requestId };
    }),

  /** Ends the session (a cancel of its job). */
  close: teamProcedure('MEMBER')
    .input(z.object({ jobId: z.string().min(1).max(64) }))
    .mutation(async ({ ctx, input }) => {
      const job = await ctx.db.job.findFirst({ where: { id: input.jobId, teamId: ctx.membership.teamId, kind: 'INFERENCE' }, select: { id: true } });
      if (!job) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such inference session' });
      return cancelJob({ ctx, input: { jobId: job.id } });
    }),
});
