import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { EXPORT_FORMATS, hubRepoSchema, hubRevisionSchema, modelCardSchema, modelNameFromRepo, modelNameSchema } from '../../../sdk/models';
import { audit } from '../../auth/audit';
import { importFromHub } from '../../models/hub-import';
import { MAX_MODEL_BYTES, MODEL_CHUNK_BYTES, MODEL_FILE_NAME, ModelImportError, abandonModelUpload, removeModel, beginModelUpload, finishModelUpload, writeModelChunk } from '../../models/model-uploads';
import { exportCheckpoint } from '../../models/export-checkpoint';
import { EXPORT_ROUTE } from '../../models/export-route';
import { router, teamProcedure } from '../trpc';

/**
 * Pretrained models (Llama and Qwen families) imported from Hugging Face folders: an import is
 * begun with the files' names, sizes and hashes, sent in chunks, and finished by the engine's check
 * of the whole folder (server/models/model-uploads.ts); or the server downloads one from the
 * Hugging Face hub itself (importFromHub, server/models/hub-import.ts). Runs start from a model by id
 * (config.baseModelId).
 */

const id = z.string().min(1).max(64);
const sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 in lowercase hex');

/** An import's refusal as the API's error: what is wrong, with the file where there is one. */
async function importing<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof ModelImportError) throw new TRPCError({ code: err.code, message: err.message });
    throw err;
  }
}

const modelFields = { id: true, name: true, family: true, card: true, contentHash: true, bytes: true, createdAt: true } as const;

export const modelsRouter = router({
  list: teamProcedure('VIEWER').query(async ({ ctx }) => {
    const teamId = ctx.membership.teamId;
    const models = await ctx.db.pretrainedModel.findMany({ where: { teamId }, orderBy: { createdAt: 'desc' }, select: modelFields });
    // Runs that start from each model (any state, inference sessions left out), counted through the job's config as the environments list counts them.
    const counts = await ctx.db.$queryRaw<{ modelId: string; runs: bigint }[]>`
      SELECT j.config->>'baseModelId' AS "modelId", count(*) AS runs FROM "Job" j
       WHERE j."teamId" = ${teamId} AND j.kind <> 'INFERENCE' AND jsonb_typeof(j.config->'baseModelId') = 'string'
       GROUP BY 1`;
    const runs = new Map(counts.map((c) => [c.modelId, Number(c.runs)]));
    return models.map((m) => ({ ...m, card: modelCardSchema.parse(m.card), bytes: Number(m.bytes), runs: runs.get(m.id) ?? 0 }));
  }),

  get: teamProcedure('VIEWER')
    .input(z.object({ modelId: id }))
    .query(async ({ ctx, input }) => {
      const model = await ctx.db.pretrainedModel.findFirst({ where: { id: input.modelId, teamId: ctx.membership.teamId }, select: modelFields });
      if (!model) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such model in this team' });
      const jobs = await ctx.db.job.findMany({
        // Runs and evaluations; the playground's and `whetstone sample`'s sessions are not runs.
        where: { teamId: ctx.membership.teamId, kind: { not: 'INFERENCE' }, config: { path: ['baseModelId'], equals: model.id } },
        orderBy: { queuedAt: 'desc' },
        take: 50,
        select: { id: true, kind: true, state: true, queuedAt: true, experiment: { select: { name: true } } },
      });
      return { ...model, card: modelCardSchema.parse(model.card), bytes: Number(model.bytes), jobs };
    }),

  /** Announces the files of an import; returns the upload's id, and the chunk size to send them in. */
  beginImport: teamProcedure('MEMBER')
    .input(
      z.object({
        name: modelNameSchema,
        files: z
          .array(z.object({ path: z.string().regex(MODEL_FILE_NAME, 'a flat folder of .json, .jinja and .safetensors files'), bytes: z.number().int().min(0).max(MAX_MODEL_BYTES), sha256 }))
          .min(1)
          .max(1000),
      }),
    )
    .mutation(async ({ ctx, input }) =>
      importing(async () => ({
        ...(await beginModelUpload(ctx.db, ctx.deps.blobs, { teamId: ctx.membership.teamId, userId: ctx.user.id, name: input.name, files: input.files })),
        chunkBytes: MODEL_CHUNK_BYTES,
      })),
    ),

  /** One chunk of one announced file, base64, at its byte offset (in order; a resent chunk is harmless). */
  uploadChunk: teamProcedure('MEMBER')
    .input(z.object({ uploadId: id, path: z.string().max(200), offset: z.number().int().min(0), data: z.base64().max(Math.ceil(MODEL_CHUNK_BYTES / 3) * 4) }))
    .mutation(async ({ ctx, input }) =>
      importing(() => writeModelChunk(ctx.deps.blobs, { teamId: ctx.membership.teamId, uploadId: input.uploadId, path: input.path, offset: input.offset, data: Buffer.from(input.data, 'base64') })),
    ),

  /** Checks the whole folder and makes it the team's model; on a refusal nothing of the upload is kept. */
  finishImport: teamProcedure('MEMBER')
    .input(z.object({ uploadId: id }))
    .mutation(async ({ ctx, input }) => {
      const result = await importing(() => finishModelUpload(ctx.db, ctx.deps.blobs, { teamId: ctx.membership.teamId, uploadId: input.uploadId }));
      await audit(ctx.db, {
        teamId: ctx.membership.teamId, actorUserId: ctx.user.id, action: 'model.imported', targetType: 'model', targetId: result.modelId,
        details: { family: result.card.family, parameters: result.card.parameters }, ipAddress: ctx.ip,
      });
      return result;
    }),

  /**
   * Downloads a model from the Hugging Face hub on the server and imports it as finishImport does.
   * The call lasts as long as the download: the answer is the model, or why it was refused.
   */
  importFromHub: teamProcedure('MEMBER')
    .input(z.object({ repo: hubRepoSchema, revision: hubRevisionSchema.default('main'), name: modelNameSchema.optional() }))
    .mutation(async ({ ctx, input }) => {
      const name = input.name ?? modelNameFromRepo(input.repo);
      const result = await importing(() =>
        importFromHub(ctx.db, ctx.deps.blobs, ctx.deps.hub, { teamId: ctx.membership.teamId, userId: ctx.user.id, repo: input.repo, revision: input.revision, name }),
      );
      await audit(ctx.db, {
        teamId: ctx.membership.teamId, actorUserId: ctx.user.id, action: 'model.imported', targetType: 'model', targetId: result.modelId,
        details: { family: result.card.family, parameters: result.card.parameters, source: `hf:${input.repo}@${input.revision}` }, ipAddress: ctx.ip,
      });
      return { ...result, name };
    }),

  abandonImport: teamProcedure('MEMBER')
    .input(z.object({ uploadId: id }))
    .mutation(async ({ ctx, input }) => {
      await importing(() => abandonModelUpload(ctx.deps.blobs, { teamId: ctx.membership.teamId, uploadId: input.uploadId }));
      return { ok: true };
    }),

  /**
   * Writes a checkpoint of an imported model as a Hugging Face folder (merged weights, or a PEFT
   * adapter) on the server, or finds the one written before; answers its files and where to
   * download it (a tar, from the HTTP route that this call warms).
   */
  exportCheckpoint: teamProcedure('MEMBER')
    .input(z.object({ checkpointId: id, format: z.enum(EXPORT_FORMATS).default('merged') }))
    .mutation(async ({ ctx, input }) => {
      const exported = await importing(() => exportCheckpoint(ctx.db, ctx.deps.blobs, { teamId: ctx.membership.teamId, checkpointId: input.checkpointId, format: input.format }));
      return {
        name: exported.name,
        files: exported.files,
        bytes: exported.files.reduce((sum, f) => sum + f.bytes, 0),
        download: `${EXPORT_ROUTE}${input.checkpointId}/${input.format}`,
      };
    }),

  /** Removes a model no queued or running job starts from, and its files from the blob store unless another model shares them. */
  remove: teamProcedure('ADMIN')
    .input(z.object({ modelId: id }))
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const model = await ctx.db.pretrainedModel.findFirst({ where: { id: input.modelId, teamId }, select: { id: true, name: true } });
      if (!model) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such model in this team' });
      const live = await ctx.db.job.count({ where: { teamId, config: { path: ['baseModelId'], equals: model.id }, state: { in: ['QUEUED', 'ASSIGNED', 'RUNNING', 'PREEMPTED'] } } });
      if (live > 0) throw new TRPCError({ code: 'CONFLICT', message: `${live} queued or running job${live === 1 ? '' : 's'} start${live === 1 ? 's' : ''} from ${model.name}: cancel ${live === 1 ? 'it' : 'them'} first` });
      await removeModel(ctx.db, ctx.deps.blobs, model.id);
      await audit(ctx.db, { teamId, actorUserId: ctx.user.id, action: 'model.removed', targetType: 'model', targetId: model.id, details: { name: model.name }, ipAddress: ctx.ip });
      return { ok: true };
    }),
});
