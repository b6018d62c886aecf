import { foldBuckets } from '../../../sdk/series-buckets';
import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import type { Prisma } from '../../db/generated/prisma/client';
import { metricGroup } from '../../../sdk/live';
import { audit } from '../../auth/audit';
import { roleAtLeast } from '../../auth/roles';
import type { Db } from '../../db/client';
import { deleteRun } from '../../streams/delete-run';
import { baseNameSchema } from '../../../sdk/job-config';
import { listBases, nameCheckpoint } from '../../runs/bases';
import { checkpointContents } from '../../runs/checkpoint-contents';
import { listRuns } from '../../runs/list-runs';
import { listTeamCheckpoints } from '../../runs/team-checkpoints';
import { listTeamMatches } from '../../runs/team-matches';
import { readSince } from '../../streams/positions';
import { ROLLUP_STEPS } from '../../streams/rollup';
import { router, teamProcedure } from '../trpc';

// A run is a train, sft or eval job seen through what it streamed: metrics, rollouts, logs,
// matches and checkpoints. Live updates come over socket.io (room run:<jobId>); these queries
// serve history, zoomed ranges and the catch-up after a reconnect.

const jobInput = z.object({ jobId: z.string().min(1).max(64) });
const cursor = z.coerce.bigint().nonnegative().optional();
const jobState = z.enum(['QUEUED', 'ASSIGNED', 'RUNNING', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED']);
const page = { offset: z.number().int().min(0).max(1_000_000).default(0), limit: z.number().int().min(1).max(200).default(50) };

async function teamJob(db: Db, teamId: string, jobId: string) {
  const job = await db.job.findFirst({ where: { id: jobId, teamId }, select: { id: true } });
  if (!job) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such run' });
  return job;
}

export interface SeriesBucket {
  fromStep: number;
  toStep: number;
  min: number;
  max: number;
  /** The value at the bucket's last step: what the line is drawn through. */
  last: number;
  count: number;
  /** When the bucket's last step was stored: a chart's x axis by wall or relative time. */
  at?: Date;
}

/**
 * A metric as at most `buckets` buckets of min, max and last over a step range: a chart draws
 * the line through `last` and shades min..max, so no spike disappears however far it is zoomed
 * out, and zooming in asks again at full fidelity for the smaller range.
 */
export async function metricSeries(db: Db, jobId: string, key: string, buckets: number, fromStep?: number, toStep?: number): Promise<SeriesBucket[]> {
  // The range's ends first, from the (job, key, step) index, so the grouping below works on
  // constants (a join against an aggregate of the same rows made PostgreSQL rescan it per row).
  const [range] = await db.$queryRaw<Array<{ lo: number | null; hi: number | null }>>`
    SELECT min(step) AS lo, max(step) AS hi FROM "MetricPoint"
     WHERE "jobId" = ${jobId} AND key = ${key} AND step >= ${fromStep ?? -2147483648}::int AND step <= ${toStep ?? 2147483647}::int`;
  if (range.lo === null || range.hi === null) return [];
  const width = Math.max(1, Math.ceil((range.hi - range.lo + 1) / buckets));
  // Wide buckets come from the rollups (256 steps each; rounding a bucket's width up to whole
  // rollups costs at most a quarter of the buckets); narrow ones from the points.
  const out = width >= 4 * ROLLUP_STEPS ? await seriesFromRollups(db, jobId, key, buckets, range.lo, range.hi) : foldBuckets(await pointSummaries(db, jobId, key, range.lo, range.hi, width), range.lo, width);
  // Each bucket's time: one index lookup per bucket, at its last step.
  const times = await db.$queryRaw<Array<{ step: number; time: Date }>>`
    SELECT step, time FROM "MetricPoint" WHERE "jobId" = ${jobId} AND key = ${key} AND step = ANY(${out.map((b) => b.toStep)}::int[])`;
  const at = new Map(times.map((t) => [t.step, t.time]));
  for (const b of out) b.at = at.get(b.toStep);
  return out;
}

/** One row per group of `width` steps from lo, straight from the points. */
async function pointSummaries(db: Db, jobId: string, key: string, lo: number, hi: number, width: number): Promise<SeriesBucket[]> {
  const rows = await db.$queryRaw<Array<{ from_step: number; to_step: number; min: number; max: number; count: bigint }>>`
    SELECT min(step) AS from_step, max(step) AS to_step, min(value) AS min, max(value) AS max, count(*) AS count
      FROM "MetricPoint"
     WHERE "jobId" = ${jobId} AND key = ${key} AND step >= ${lo}::int AND step <= ${hi}::int
     GROUP BY (step - ${lo}::int) / ${width}::int
     ORDER BY 1`;
  // Each group's last value is the value at its last step: one index lookup per group, where an
  // ordered array_agg per group sorted every row (it doubled the time over 1,000,000 points).
  const lasts = await db.$queryRaw<Array<{ step: number; value: number }>>`
    SELECT step, value FROM "MetricPoint" WHERE "jobId" = ${jobId} AND key = ${key} AND step = ANY(${rows.map((r) => r.to_step)}::int[])`;
  const lastAt = new Map(lasts.map((l) => [l.step, l.value]));
  return rows.map((r) => ({ fromStep: r.from_step, toStep: r.to_step, min: r.min, max: r.max, last: lastAt.get(r.to_step)!, count: Number(r.count) }));
}

/**
 * The rollups inside [lo, hi] as they are, and the at most two at the edges that reach past
 * it summarised again from their points within the range; then grouped into output buckets.
 */
async function seriesFromRollups(db: Db, jobId: string, key: string, buckets: number, lo: number, hi: number): Promise<SeriesBucket[]> {
  const rollups = await db.metricRollup.findMany({
    where: { jobId, key, bucket: { gte: Math.floor(lo / ROLLUP_STEPS), lte: Math.floor(hi / ROLLUP_STEPS) } },
    orderBy: { bucket: 'asc' },
  });
  const parts: SeriesBucket[] = [];
  for (const r of rollups) {
    if (r.firstStep >= lo && r.lastStep <= hi) {
      parts.push({ fromStep: r.firstStep, toStep: r.lastStep, min: r.min, max: r.max, last: r.last, count: r.count });
    } else {
      const from = Math.max(lo, r.bucket * ROLLUP_STEPS);
      const to = Math.min(hi, r.bucket * ROLLUP_STEPS + ROLLUP_STEPS - 1);
      parts.push(...(await pointSummaries(db, jobId, key, from, to, ROLLUP_STEPS)));
    }
  }
  // Output buckets are whole rollups wide, so none is split.
  const width = Math.ceil((hi - lo + 1) / buckets / ROLLUP_STEPS) * ROLLUP_STEPS;
  return foldBuckets(parts, Math.floor(lo / ROLLUP_STEPS) * ROLLUP_STEPS, width);
}


export const runsRouter = router({
  /**
   * A page of the team's runs (TRAIN, SFT and EVAL jobs unless `kinds` says otherwise) as
   * summaries (server/runs/list-runs.ts: environment, dataset, worker, step of total, last reward),
   * and how many match. `order: 'queue'` lists them as the scheduler considers them.
   */
  list: teamProcedure('VIEWER')
    .input(
      z.object({
        states: z.array(jobState).max(7).optional(),
        kinds: z.array(z.enum(['TRAIN', 'SFT', 'EVAL', 'INFERENCE'])).min(1).max(4).default(['TRAIN', 'SFT', 'EVAL']),
        order: z.enum(['newest', 'queue']).default('newest'),
        environmentId: z.string().min(1).max(64).optional(),
        ownerId: z.string().min(1).max(64).optional(),
        tag: z.string().trim().min(1).max(40).optional(),
        ...page,
      }),
    )
    .query(({ ctx, input }) => listRuns(ctx.db, ctx.membership.teamId, input)),

  /** One run's summary, as `list` gives it (any kind of job). */
  summary: teamProcedure('VIEWER')
    .input(jobInput)
    .query(async ({ ctx, input }) => {
      const { runs } = await listRuns(ctx.db, ctx.membership.teamId, {
        kinds: ['TRAIN', 'SFT', 'EVAL', 'INFERENCE'], order: 'newest', offset: 0, limit: 1, jobIds: [input.jobId],
      });
      if (!runs[0]) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such run' });
      return runs[0];
    }),

  /** A page of the team's checkpoints with the run that wrote each, newest first (of one environment's runs with `environmentId`). */
  teamCheckpoints: teamProcedure('VIEWER')
    .input(z.object({ kind: z.enum(['TRAINING', 'SAMPLER']).optional(), environmentId: z.string().min(1).max(64).optional(), ...page }))
    .query(({ ctx, input }) => listTeamCheckpoints(ctx.db, ctx.membership.teamId, input)),

  /**
   * The team's bases (named checkpoints), by name, each with its card: the run that wrote it and
   * how (algorithm, environment, steps, warm start) and its latest finished eval. `name` asks for
   * one (the CLI's `--from <name>`).
   */
  bases: teamProcedure('VIEWER')
    .input(z.object({ name: baseNameSchema.optional() }))
    .query(({ ctx, input }) => listBases(ctx.db, ctx.membership.teamId, input)),

  /**
   * What a checkpoint holds, read from its own header: the engine's own model (its shape) or an
   * imported model's, and LoRA adapters kept apart or every weight. The launcher says it.
   */
  checkpointContents: teamProcedure('VIEWER')
    .input(z.object({ checkpointId: z.string().min(1).max(64) }))
    .query(async ({ ctx, input }) => {
      let contents;
      try {
        contents = await checkpointContents(ctx.db, ctx.deps.blobs, ctx.membership.teamId, input.checkpointId);
      } catch (err) {
        throw new TRPCError({ code: 'UNPROCESSABLE_CONTENT', message: `checkpoint ${input.checkpointId} cannot be read: ${(err as Error).message}` });
      }
      if (!contents) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such checkpoint in this team' });
      return contents;
    }),

  /** Names one of the team's checkpoints as a base, or clears its name (`name: null`); a name taken by another is a CONFLICT. */
  nameCheckpoint: teamProcedure('MEMBER')
    .input(z.object({ checkpointId: z.string().min(1).max(64), name: baseNameSchema.nullable() }))
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const named = await nameCheckpoint(ctx.db, teamId, input.checkpointId, input.name);
      await audit(ctx.db, {
        teamId, actorUserId: ctx.user.id, action: input.name === null ? 'checkpoint.unnamed' : 'checkpoint.named', targetType: 'checkpoint', targetId: named.id,
        details: { name: named.name, previous: named.previous }, ipAddress: ctx.ip,
      });
      return { id: named.id, name: named.name };
    }),

  /** A page of the team's matches (players, result, moves), newest first; of one run with `jobId`. */
  teamMatches: teamProcedure('VIEWER')
    .input(
      z.object({
        jobId: z.string().min(1).max(64).optional(),
        result: z.enum(['win', 'draw', 'error']).optional(),
        player: z.string().min(1).max(100).optional(),
        checkpointId: z.string().min(1).max(64).optional(),
        minMoves: z.number().int().min(0).max(100_000).optional(),
        maxMoves: z.number().int().min(0).max(100_000).optional(),
        ...page,
      }),
    )
    .query(({ ctx, input }) => listTeamMatches(ctx.db, ctx.membership.teamId, input)),

  /** The run's metrics, each with its group (sdk/live.ts: keys are `group/name`), for a page to lay charts out by. */
  metricKeys: teamProcedure('VIEWER')
    .input(jobInput)
    .query(async ({ ctx, input }) => {
      await teamJob(ctx.db, ctx.membership.teamId, input.jobId);
      const rows = await ctx.db.$queryRaw<Array<{ key: string; count: bigint; last_step: number }>>`
        SELECT key, count(*) AS count, max(step) AS last_step FROM "MetricPoint" WHERE "jobId" = ${input.jobId} GROUP BY key ORDER BY key`;
      return rows.map((r) => ({ key: r.key, group: metricGroup(r.key), count: Number(r.count), lastStep: r.last_step }));
    }),

  series: teamProcedure('VIEWER')
    .input(
      jobInput.extend({
        key: z.string().min(1).max(100),
        buckets: z.number().int().min(1).max(5000).default(500),
        fromStep: z.number().int().optional(),
        toStep: z.number().int().optional(),
      }),
    )
    .query(async ({ ctx, input }) => {
      await teamJob(ctx.db, ctx.membership.teamId, input.jobId);
      return metricSeries(ctx.db, input.jobId, input.key, input.buckets, input.fromStep, input.toStep);
    }),

  /**
   * Everything stored after a position (attempt, seq): the catch-up after a reconnect, from
   * where sdk/stream-cursor.ts says, with no gap and no duplicate (server/streams/positions.ts).
   * Ask again after `through` until `complete`.
   */
  since: teamProcedure('VIEWER')
    .input(
      jobInput.extend({
        after: z.object({ attempt: z.number().int().min(0), seq: z.number().int().min(-1) }).optional(),
        limit: z.number().int().min(1).max(10_000).default(5_000),
      }),
    )
    .query(async ({ ctx, input }) => {
      await teamJob(ctx.db, ctx.membership.teamId, input.jobId);
      return readSince(ctx.db, input.jobId, input.after ?? null, input.limit);
    }),

  /**
   * Rollout samples: one step's (the newest by default), or with `task` the samples of that task
   * at every step where it was played, newest first ("same prompt across steps"). `task` is the
   * task as JSON text, as the samples' `info.task` holds it. Reward range and end reason narrow
   * either. `latestStep` is the newest step with samples.
   */
  rollouts: teamProcedure('VIEWER')
    .input(
      jobInput.extend({
        step: z.number().int().min(0).optional(),
        agent: z.string().max(64).optional(),
        task: z.string().max(10_000).optional(),
        minReward: z.number().optional(),
        maxReward: z.number().optional(),
        endReason: z.string().max(64).optional(),
        limit: z.number().int().min(1).max(200).default(20),
      }),
    )
    .query(async ({ ctx, input }) => {
      await teamJob(ctx.db, ctx.membership.teamId, input.jobId);
      let task: Prisma.InputJsonValue | undefined;
      if (input.task !== undefined) {
        try {
          task = JSON.parse(input.task) as Prisma.InputJsonValue;
        } catch {
          throw new TRPCError({ code: 'BAD_REQUEST', message: 'task must be JSON text, as a sample’s info.task' });
        }
      }
      const latestStep = (await ctx.db.rolloutSample.aggregate({ where: { jobId: input.jobId }, _max: { step: true } }))._max.step;
      const step = task === undefined ? (input.step ?? latestStep) : input.step;
      if (latestStep === null || (task === undefined && (step === null || step === undefined))) return { step: null, latestStep: null, samples: [] };
      const samples = await ctx.db.rolloutSample.findMany({
        where: {
          jobId: input.jobId,
          ...(step !== undefined && step !== null ? { step } : {}),
          ...(input.agent ? { agent: input.agent } : {}),
          ...(task !== undefined ? { info: { path: ['task'], equals: task } } : {}),
          ...(input.minReward !== undefined || input.maxReward !== undefined ? { reward: { gte: input.minReward, lte: input.maxReward } } : {}),
          ...(input.endReason ? { endReason: input.endReason } : {}),
        },
        orderBy: task !== undefined ? [{ step: 'desc' }, { agent: 'asc' }, { index: 'asc' }] : [{ agent: 'asc' }, { index: 'asc' }],
        take: input.limit,
      });
      return { step: step ?? null, latestStep, samples };
    }),

  logs: teamProcedure('VIEWER')
    .input(jobInput.extend({ afterId: cursor, limit: z.number().int().min(1).max(5000).default(500) }))
    .query(async ({ ctx, input }) => {
      await teamJob(ctx.db, ctx.membership.teamId, input.jobId);
      return ctx.db.logLine.findMany({
        where: { jobId: input.jobId, id: { gt: input.afterId ?? 0n } }, orderBy: { id: 'asc' }, take: input.limit,
        select: { id: true, attempt: true, line: true, level: true, message: true, time: true },
      });
    }),

  matches: teamProcedure('VIEWER')
    .input(jobInput.extend({ limit: z.number().int().min(1).max(200).default(50) }))
    .query(async ({ ctx, input }) => {
      await teamJob(ctx.db, ctx.membership.teamId, input.jobId);
      return ctx.db.match.findMany({
        where: { jobId: input.jobId, teamId: ctx.membership.teamId }, orderBy: { createdAt: 'desc' }, take: input.limit,
        select: { id: true, step: true, agents: true, winner: true, result: true, createdAt: true },
      });
    }),

  match: teamProcedure('VIEWER')
    .input(z.object({ matchId: z.string().min(1).max(64) }))
    .query(async ({ ctx, input }) => {
      const match = await ctx.db.match.findFirst({ where: { id: input.matchId, teamId: ctx.membership.teamId } });
      if (!match) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such match' });
      // Games branched from this one ("branch from here"), each with the move it left at.
      const branched = await ctx.db.match.findMany({
        where: { teamId: ctx.membership.teamId, result: { path: ['parent', 'matchId'], equals: match.id } },
        orderBy: { createdAt: 'asc' }, take: 100, select: { id: true, result: true, winner: true, agents: true },
      });
      const variations = branched.map((v) => ({ id: v.id, move: Number((v.result as { parent?: { move?: unknown } }).parent?.move ?? 0), winner: v.winner, agents: v.agents }));
      return { ...match, variations };
    }),

  /**
   * Deletes a finished run of the caller's (admins: anyone's) with all it streamed, which frees
   * its bytes of the team's stream storage quota; its checkpoints stay. Answers the bytes freed.
   */
  delete: teamProcedure('MEMBER')
    .input(jobInput)
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const job = await ctx.db.job.findFirst({ where: { id: input.jobId, teamId }, select: { id: true, teamId: true, ownerId: true, state: true, kind: true } });
      if (!job) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such run' });
      if (job.ownerId !== ctx.user.id && !roleAtLeast(ctx.membership.role, 'ADMIN')) {
        throw new TRPCError({ code: 'FORBIDDEN', message: "Only an admin can delete another member's run" });
      }
      if (!['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(job.state)) {
        throw new TRPCError({ code: 'BAD_REQUEST', message: `Run ${job.id} is ${job.state}: cancel it first, then delete it once it has ended` });
      }
      const freedBytes = await deleteRun(ctx.db, job);
      await audit(ctx.db, {
        teamId, actorUserId: ctx.user.id, action: 'run.deleted', targetType: 'job', targetId: job.id,
        details: { kind: job.kind, state: job.state, freedBytes: Number(freedBytes) }, ipAddress: ctx.ip,
      });
      return { deleted: true, freedBytes };
    }),

  checkpoints: teamProcedure('VIEWER')
    .input(z.object({ jobId: z.string().min(1).max(64).optional(), limit: z.number().int().min(1).max(500).default(100) }))
    .query(({ ctx, input }) =>
      ctx.db.checkpoint.findMany({
        where: { teamId: ctx.membership.teamId, ...(input.jobId ? { jobId: input.jobId } : {}) },
        orderBy: { createdAt: 'desc' }, take: input.limit,
        select: { id: true, jobId: true, kind: true, step: true, agent: true, bytes: true, isAdapter: true, metrics: true, name: true, createdAt: true },
      }),
    ),
});
