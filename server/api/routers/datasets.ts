import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import type { ObjectSchema, ValueSchema } from '../../../sdk/environment/schema';
import { audit } from '../../auth/audit';
import { MAX_DATASET_CHARS, storeDatasetVersion } from '../../datasets/store-version';
import { datasetUsage } from '../../datasets/usage';
import { LineProblems } from '../line-problems';
import { router, teamProcedure } from '../trpc';

/**
 * Datasets: JSONL files that SFT jobs train on and data-dependent environments read rows of. Each
 * upload is an immutable version, deduplicated by content (server/datasets/store-version.ts).
 */

const datasetName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_./-]{0,119}$/, 'letters, digits, and _ . / - (up to 120)')
  .refine((name) => !name.includes('..'), 'must not contain ..');

// The SDK's row-schema subset (sdk/environment/schema.ts), checked before it is stored.
const valueSchema: z.ZodType<ValueSchema> = z.lazy(() =>
  z.union([
    z.object({ type: z.literal('string'), description: z.string().max(500).optional(), enum: z.array(z.string().max(200)).max(200).optional() }),
    z.object({ type: z.literal('number'), description: z.string().max(500).optional(), integer: z.boolean().optional(), minimum: z.number().optional(), maximum: z.number().optional() }),
    z.object({ type: z.literal('boolean'), description: z.string().max(500).optional() }),
    z.object({ type: z.literal('array'), description: z.string().max(500).optional(), items: valueSchema }),
    objectSchema,
  ]),
);
const objectSchema: z.ZodType<ObjectSchema> = z.lazy(() =>
  z.object({
    type: z.literal('object'),
    description: z.string().max(500).optional(),
    properties: z.record(z.string().max(100), valueSchema),
    required: z.array(z.string().max(100)).max(100).optional(),
  }),
);

const versionFields = { id: true, version: true, rowCount: true, bytes: true, contentHash: true, rowSchema: true, createdAt: true } as const;
/** The versions a list shows per dataset (newest first); `versionCount` says how many there are. */
const LISTED_VERSIONS = 20;
/** Bad lines named in an upload's error message (error.data.lineProblems lists more). */
const PROBLEMS_IN_MESSAGE = 10;
const id = z.string().min(1).max(64);

export const datasetsRouter = router({
  list: teamProcedure('VIEWER')
    .input(z.object({ includeArchived: z.boolean().default(false) }))
    .query(async ({ ctx, input }) => {
      const datasets = await ctx.db.dataset.findMany({
        where: { teamId: ctx.membership.teamId, ...(input.includeArchived ? {} : { archivedAt: null }) },
        orderBy: { updatedAt: 'desc' },
        select: {
          id: true, name: true, description: true, createdAt: true, updatedAt: true, archivedAt: true,
          versions: { orderBy: { version: 'desc' }, take: LISTED_VERSIONS, select: versionFields },
          _count: { select: { versions: true } },
        },
      });
      return datasets.map(({ versions, _count, ...d }) => {
        const listed = versions.map((v) => ({ ...v, bytes: Number(v.bytes) }));
        return { ...d, latest: listed[0] ?? null, versions: listed, versionCount: _count.versions };
      });
    }),

  get: teamProcedure('VIEWER')
    .input(z.object({ datasetId: id }))
    .query(async ({ ctx, input }) => {
      const dataset = await ctx.db.dataset.findFirst({
        where: { id: input.datasetId, teamId: ctx.membership.teamId },
        select: { id: true, name: true, description: true, createdAt: true, updatedAt: true, archivedAt: true, versions: { orderBy: { version: 'desc' }, select: versionFields } },
      });
      if (!dataset) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such dataset' });
      return { ...dataset, versions: dataset.versions.map((v) => ({ ...v, bytes: Number(v.bytes) })) };
    }),

  /** A page of a version's rows (non-empty lines, from 0), for a preview; `rowCount` is the total. */
  rows: teamProcedure('VIEWER')
    .input(z.object({ versionId: id, offset: z.number().int().min(0).default(0), limit: z.number().int().min(1).max(200).default(20) }))
    .query(async ({ ctx, input }) => {
      const version = await ctx.db.datasetVersion.findFirst({ where: { id: input.versionId, dataset: { teamId: ctx.membership.teamId } }, select: { storageKey: true, rowCount: true } });
      if (!version) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such dataset version' });
      const text = (await ctx.deps.blobs.get(version.storageKey)).toString('utf8');
      const lines = text.split('\n').filter((line) => line.trim() !== '');
      return { rowCount: version.rowCount, offset: input.offset, rows: lines.slice(input.offset, input.offset + input.limit).map((line) => JSON.parse(line) as unknown) };
    }),

  /**
   * Who uses a dataset: the environments whose manifest reads it (`<environment>/<file>`, their
   * next dry run and runs take its latest version), and per version the environment versions
   * whose dry run read it and the jobs (TRAIN, SFT, EVAL) that name it, with their state.
   */
  usage: teamProcedure('VIEWER')
    .input(z.object({ datasetId: id }))
    .query(async ({ ctx, input }) => {
      const usage = await datasetUsage(ctx.db, ctx.membership.teamId, input.datasetId);
      if (!usage) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such dataset' });
      return usage;
    }),

  /**
   * Stores JSONL text as the dataset's next version (creating the dataset on first upload), or
   * answers the existing version with the same content. Every bad line is named: a refused
   * upload is a BAD_REQUEST whose `data.lineProblems` holds `{ problems: { line, message }[] }`
   * (the first 100) and `total`.
   */
  upload: teamProcedure('MEMBER')
    .input(
      z.object({
        name: datasetName,
        description: z.string().max(2000).optional(),
        jsonl: z.string().min(1).max(MAX_DATASET_CHARS),
        rowSchema: objectSchema.optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const result = await storeDatasetVersion(ctx.db, ctx.deps.blobs, {
        teamId: ctx.membership.teamId, name: input.name, description: input.description, text: input.jsonl, rowSchema: input.rowSchema, createdById: ctx.user.id,
      });
      if (!result.ok) {
        const named = result.problems.slice(0, PROBLEMS_IN_MESSAGE).map((p) => `line ${p.line}: ${p.message}`);
        const more = result.problemCount - named.length;
        const message = `Dataset not stored: ${named.join('; ')}${more > 0 ? `; and ${more} more` : ''}. Fix the lines named and upload again.`;
        throw new TRPCError({ code: 'BAD_REQUEST', message, cause: new LineProblems(message, result.problems, result.problemCount) });
      }
      if (result.created) {
        await audit(ctx.db, {
          teamId: ctx.membership.teamId, actorUserId: ctx.user.id, action: 'dataset.uploaded', targetType: 'dataset_version', targetId: result.versionId,
          details: { name: input.name, version: result.version, rows: result.rowCount, bytes: result.bytes }, ipAddress: ctx.ip,
        });
      }
      const { ok: _ok, ...answer } = result;
      return answer;
    }),

  /** Hides a dataset from the list; its versions stay, so jobs that name them still run. */
  archive: teamProcedure('ADMIN')
    .input(z.object({ datasetId: z.string().min(1).max(64) }))
    .mutation(async ({ ctx, input }) => {
      const { count } = await ctx.db.dataset.updateMany({ where: { id: input.datasetId, teamId: ctx.membership.teamId, archivedAt: null }, data: { archivedAt: new Date() } });
      if (count === 0) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such dataset (or already archived)' });
      await audit(ctx.db, { teamId: ctx.membership.teamId, actorUserId: ctx.user.id, action: 'dataset.archived', targetType: 'dataset', targetId: input.datasetId, ipAddress: ctx.ip });
      return { archived: true };
    }),
});
