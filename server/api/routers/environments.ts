import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { environmentNameSchema } from '../../../sdk/manifest';
import { TEMPLATE_NAMES } from '../../../env-templates/load-template';
import { httpAnswersSchema, httpManifest } from '../../../sdk/http-manifest';
import { checkSecretUse } from '../../secrets/secret-use';
import { saveEnvironmentVersion } from '../../environments/save-version';
import { router, teamProcedure } from '../trpc';
import { MAX_DATASET_CHARS } from '../../datasets/store-version';
import { DryRunQueueFull } from '../../environments/dry-run-pool';
import { environmentSourceInput } from '../../environments/source-input';
import { lastRunsOfEnvironments } from '../../environments/last-runs';
import { createEnvironment } from '../../environments/create-environment';
import { dryRunDataset, environmentDatasets } from '../../environments/dataset';
import { environmentPackageSchema, exportEnvironmentPackage } from '../../environments/package';
import { importPackageAnswer } from '../import-package';
import { audit } from '../../auth/audit';

const environmentName = environmentNameSchema;
const id = z.string().min(1).max(64);

/** A dry-run pool with no room answers "try again" rather than failing the save. */
function queueFullAsTooMany(error: unknown): never {
  if (error instanceof DryRunQueueFull) throw new TRPCError({ code: 'TOO_MANY_REQUESTS', message: `Not saved: ${error.message}` });
  throw error;
}

export const environmentsRouter = router({
  /**
   * Saves code and manifest as a new version (or finds the identical one) and dry-runs it. A
   * data-dependent environment's dry run reads `datasetText` when given, else the latest version
   * of the team's dataset `<name>/<manifest.dataset.train>`. With `baseVersionId` (the version the
   * editor started from), an environment that moved on since is answered as `conflict`: the save
   * stands (versions are immutable) and the editor offers the diff.
   */
  saveVersion: teamProcedure('MEMBER')
    .input(
      z.object({
        name: environmentName,
        description: z.string().max(2000).optional(),
        ...environmentSourceInput,
        datasetText: z.string().max(MAX_DATASET_CHARS).optional(),
        baseVersionId: id.optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      await checkSecretUse(ctx.db, teamId, ctx.membership.role, input.manifest);
      const dataset = await dryRunDataset(ctx.db, ctx.deps.blobs, teamId, input.name, input.manifest, input.datasetText);
      const result = await saveEnvironmentVersion(ctx.db, ctx.deps.dryRuns, {
        ...input, teamId, userId: ctx.user.id, datasetText: dataset?.text, datasetVersionId: dataset?.versionId,
      }, ctx.deps.secretsKey).catch(queueFullAsTooMany);
      if (!result.ok) throw new TRPCError({ code: 'BAD_REQUEST', message: result.problems.join('; ') });
      return result;
    }),

  /**
   * A new environment with a first version (dry-run like any save): from a built-in template,
   * from the blank starting point (env-templates/blank/), or a copy of one of the team's versions.
   * Its dataset files come along as `<name>/<file>` datasets.
   */
  create: teamProcedure('MEMBER')
    .input(
      z.object({
        name: environmentName,
        description: z.string().max(2000).optional(),
        from: z.union([
          z.strictObject({ template: z.enum(TEMPLATE_NAMES) }),
          z.strictObject({ blank: z.literal(true) }),
          z.strictObject({ versionId: id }),
          z.strictObject({ http: httpAnswersSchema }),
        ]),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      // Answers may name a secret for the server's token (a copy of a version keeps its servers).
      if ('http' in input.from) await checkSecretUse(ctx.db, ctx.membership.teamId, ctx.membership.role, httpManifest({ name: input.name, ...input.from.http }));
      const result = await createEnvironment(ctx.deps, { ...input, teamId: ctx.membership.teamId, userId: ctx.user.id }).catch(queueFullAsTooMany);
      if (!result.ok) throw new TRPCError({ code: 'code' in result ? result.code : 'BAD_REQUEST', message: result.problems.join('; ') });
      return result;
    }),

  /**
   * The team's datasets a version's manifest reads (train and held-out, `<environment>/<file>`)
   * with their latest versions, and the version its dry run read: the editor previews rows with
   * datasets.rows.
   */
  datasets: teamProcedure('VIEWER')
    .input(z.object({ versionId: id }))
    .query(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const version = await ctx.db.environmentVersion.findFirst({
        where: { id: input.versionId, environment: { teamId } },
        select: {
          manifest: true,
          environment: { select: { name: true } },
          dryRunDatasetVersion: { select: { id: true, version: true, rowCount: true, dataset: { select: { id: true, name: true } } } },
        },
      });
      if (!version) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such environment version' });
      const dryRun = version.dryRunDatasetVersion;
      return {
        splits: await environmentDatasets(ctx.db, teamId, version.environment.name, version.manifest),
        dryRun: dryRun ? { versionId: dryRun.id, version: dryRun.version, rowCount: dryRun.rowCount, datasetId: dryRun.dataset.id, name: dryRun.dataset.name } : null,
      };
    }),

  get: teamProcedure('VIEWER')
    .input(z.object({ environmentId: z.string().min(1).max(64) }))
    .query(async ({ ctx, input }) => {
      const env = await ctx.db.environment.findFirst({
        where: { id: input.environmentId, teamId: ctx.membership.teamId },
        include: {
          versions: {
            orderBy: { version: 'desc' },
            select: { id: true, version: true, contentHash: true, validationStatus: true, createdAt: true, entry: true, publishedAt: true, createdBy: { select: { id: true, name: true } } },
          },
        },
      });
      if (!env) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such environment' });
      return env;
    }),

  version: teamProcedure('VIEWER')
    .input(z.object({ versionId: z.string().min(1).max(64) }))
    .query(async ({ ctx, input }) => {
      const version = await ctx.db.environmentVersion.findFirst({
        where: { id: input.versionId, environment: { teamId: ctx.membership.teamId } },
        include: { createdBy: { select: { id: true, name: true } } },
      });
      if (!version) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such environment version' });
      return version;
    }),

  list: teamProcedure('VIEWER')
    .input(z.object({ includeArchived: z.boolean().default(false) }))
    .query(({ ctx, input }) =>
      ctx.db.environment.findMany({
        where: { teamId: ctx.membership.teamId, ...(input.includeArchived ? {} : { archivedAt: null }) },
        orderBy: { updatedAt: 'desc' },
        select: {
          id: true,
          name: true,
          description: true,
          template: true,
          updatedAt: true,
          versions: { orderBy: { version: 'desc' }, take: 1, select: { id: true, version: true, validationStatus: true, manifest: true } },
        },
      }),
    ),

  /** Each environment's newest job and its last mean reward (the environments list's "last run"). */
  lastRuns: teamProcedure('VIEWER').query(({ ctx }) => lastRunsOfEnvironments(ctx.db, ctx.membership.teamId)),

  /** A version as a package (server/environments/package.ts): its files, manifest and dataset rows, and its content hash. */
  exportPackage: teamProcedure('VIEWER')
    .input(z.object({ versionId: id }))
    .query(async ({ ctx, input }) => {
      const pkg = await exportEnvironmentPackage(ctx.db, ctx.deps.blobs, ctx.membership.teamId, input.versionId);
      if (!pkg) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such environment version' });
      return pkg;
    }),

  /**
   * A package into this team: a new environment of its name, or that environment's next version
   * (the same content answers the version there). Refused, storing nothing, when its files or
   * rows do not match the hashes it declares, or its format is newer than this installation's.
   */
  importPackage: teamProcedure('MEMBER')
    .input(z.object({ package: environmentPackageSchema, name: environmentName.optional() }))
    .mutation(({ ctx, input }) => importPackageAnswer(ctx, { teamId: ctx.membership.teamId, userId: ctx.user.id, role: ctx.membership.role }, input.package, input.name)),

  /** Publishes a version in the installation's gallery, where every signed-in user may read and import it, or takes it back. */
  publish: teamProcedure('ADMIN')
    .input(z.object({ versionId: id, published: z.boolean() }))
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const version = await ctx.db.environmentVersion.findFirst({ where: { id: input.versionId, environment: { teamId } }, select: { id: true, environmentId: true, validationStatus: true, publishedAt: true } });
      if (!version) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such environment version' });
      if (input.published && version.validationStatus !== 'VALID') {
        throw new TRPCError({ code: 'BAD_REQUEST', message: 'Not published: only a version that passed its dry run is published; this one has not' });
      }
      if (input.published === (version.publishedAt !== null)) return { publishedAt: version.publishedAt };
      const updated = await ctx.db.environmentVersion.update({ where: { id: version.id }, data: { publishedAt: input.published ? new Date() : null }, select: { publishedAt: true } });
      // The gallery lists the most recently changed environments first.
      await ctx.db.environment.update({ where: { id: version.environmentId }, data: { updatedAt: new Date() } });
      await audit(ctx.db, { teamId, actorUserId: ctx.user.id, action: input.published ? 'environment.published' : 'environment.unpublished', targetType: 'environment_version', targetId: version.id, ipAddress: ctx.ip });
      return updated;
    }),
});
