import { z } from 'zod';
import { closest, resolveTraining, type Resolved, type TrainingOverrides } from './training-config';

// What each kind of job is asked to do, validated by the server at submit time and again by the
// worker's job runner before it starts. A job's `training` holds only the options it changes:
// they are resolved over the environment manifest's and the documented defaults
// (sdk/training-config.ts, `resolveTraining`) by the server at submit and by the runner.

const id = z.string().min(1).max(64);

/** Words a run is found by in the runs list ("baseline", "lr-sweep", "paper:fig3"). */
export const runTagsSchema = z
  .array(z.string().trim().min(1).max(40).regex(/^[\w.:/+-]+$/, 'a tag is letters, digits and . : / + - _ (no spaces)'))
  .max(16)
  .refine((tags) => new Set(tags).size === tags.length, 'a tag is given twice');

/**
 * A base's name: a checkpoint of the team's saved under a name that runs start from ("gomoku-9x9-bc",
 * "arith-base"). Lower case, so that two names differing only in case cannot both exist; no spaces
 * or slashes, so that it stands as one word on a command line (`--from <name>`).
 */
export const baseNameSchema = z
  .string()
  .trim()
  .regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'a base name is 1 to 63 lower-case letters, digits and . _ - (starting with a letter or digit), e.g. "gomoku-9x9-bc"');

/** Fields that moved, and where to write them now. */
const MOVED: Record<string, string> = {
  model: 'training.model (e.g. "training": { "model": { "contextLength": 256 } })',
  steps: 'training.steps',
  batchSize: 'training.batchSize',
  learningRate: 'training.learningRate',
  checkpointEvery: 'training.checkpointEvery',
  seed: 'training.seed',
};

/**
 * An object schema that names every key it does not know, with the closest known one or where it
 * moved, instead of dropping it: a misspelt option silently ignored is a run wasted.
 */
function strictConfig<T extends z.ZodRawShape>(shape: T) {
  return z.looseObject(shape).superRefine((value, ctx) => {
    for (const key of Object.keys(value)) {
      if (key in shape) continue;
      const near = closest(key, Object.keys(shape));
      const message = key in MOVED ? `moved; write ${MOVED[key]}` : `unknown field${near ? `; did you mean \`${near}\`?` : ''}`;
      ctx.addIssue({ code: 'custom', path: [key], message });
    }
  }) as unknown as z.ZodObject<T>;
}

/** A job's training options: any subset, checked by resolving (the server does, with the manifest). */
const trainingOverridesSchema = z.record(z.string(), z.unknown()) as z.ZodType<TrainingOverrides>;

export const trainJobConfigSchema = strictConfig({
  /** Found by in the runs list's tag filter. */
  tags: runTagsSchema.optional(),
  environmentVersionId: id,
  /** Start from this checkpoint's weights; without one, a new policy of `training.model`'s shape. */
  baseCheckpointId: id.optional(),
  /**
   * Start from this imported pretrained model of the team's (server/models): its weights,
   * tokenizer and chat template. Training adapts it with LoRA unless `training.lora` is false.
   * Set by the server too when baseCheckpointId is a checkpoint of such a model.
   */
  baseModelId: id.optional(),
  /**
   * On success, the run's newest sampler checkpoint becomes the team's base of this name. A name
   * already taken leaves the run SUCCEEDED and says so in its events (server/runs/bases.ts).
   */
  saveAs: baseNameSchema.optional(),
  datasetVersionId: id.optional(),
  /** Held-out rows for the evaluations during training (a data-dependent environment's held-out split). */
  evalDatasetVersionId: id.optional(),
  training: trainingOverridesSchema.default({}),
});

/** SFT on a dataset version: `training` takes the SFT options (algorithm "sft"). */
export const sftJobConfigSchema = strictConfig({
  /** Found by in the runs list's tag filter. */
  tags: runTagsSchema.optional(),
  datasetVersionId: id,
  baseCheckpointId: id.optional(),
  /** As a TRAIN job's: start from an imported pretrained model. */
  baseModelId: id.optional(),
  /** As a TRAIN job's: the newest sampler checkpoint becomes the base of this name on success. */
  saveAs: baseNameSchema.optional(),
  training: trainingOverridesSchema.default({}),
});

export const evalJobConfigSchema = strictConfig({
  /** Found by in the runs list's tag filter. */
  tags: runTagsSchema.optional(),
  checkpointId: id,
  /** Set by the server when the checkpoint is of an imported pretrained model: the worker loads it on that model. */
  baseModelId: id.optional(),
  environmentVersionId: id,
  /** A data-dependent environment's rows: its held-out split (the CLI finds the team's `<environment>/<heldOut file>`). */
  datasetVersionId: id.optional(),
  /** The environment's first scripted bot ("bot"), random moves, a bot by name, or another checkpoint. */
  against: z.union([z.literal('bot'), z.literal('random'), z.object({ bot: id }), z.object({ checkpointId: id })]).default('bot'),
  /** The tournament this evaluation is one pairing of (server/tournaments): its games count in that table. */
  tournamentId: id.optional(),
  games: z.number().int().min(1).max(10_000).default(20),
  seed: z.number().int().min(0).default(0),
  /** Sampling temperature of the evaluated policy; 0 is greedy. Default: the manifest's training temperature. */
  temperature: z.number().min(0).max(5).optional(),
  /** Constrain the policy to the legal actions the environment offers (legal-move masking). Default true. */
  maskActions: z.boolean().default(true),
});

export const inferenceJobConfigSchema = strictConfig({
  /** The checkpoint served; without one, the imported model `baseModelId` as it was imported. */
  checkpointId: id.optional(),
  /** The imported model served, or (set by the server) the one the checkpoint was trained on. */
  baseModelId: id.optional(),
  /** The session ends, freeing its device, after this long without a request. */
  idleSeconds: z.number().int().min(10).max(86_400).default(600),
}).refine((c) => c.checkpointId !== undefined || c.baseModelId !== undefined, { message: 'name a checkpointId or an imported model (baseModelId) to serve', path: ['checkpointId'] });

export const jobConfigSchemas = {
  TRAIN: trainJobConfigSchema,
  SFT: sftJobConfigSchema,
  EVAL: evalJobConfigSchema,
  INFERENCE: inferenceJobConfigSchema,
} as const;

export type TrainJobConfig = z.infer<typeof trainJobConfigSchema>;
export type InferenceJobConfig = z.infer<typeof inferenceJobConfigSchema>;

/**
 * The resolved training config of a TRAIN or SFT job (the server resolves it at submit and stores
 * it; the runner resolves it again). TRAIN: the manifest's options, then the job's. SFT: the
 * job's, always algorithm "sft".
 */
export function resolveJobTraining(kind: 'TRAIN' | 'SFT', config: { training: TrainingOverrides }, rawManifest?: unknown): Resolved {
  if (kind === 'SFT') {
    if (config.training.algorithm !== undefined && config.training.algorithm !== 'sft') return { ok: false, problems: ['algorithm: an SFT job trains with "sft"'] };
    return resolveTraining({ algorithm: 'sft' }, config.training);
  }
  const manifest = rawManifest as { training?: unknown; server?: unknown } | null | undefined;
  const manifestTraining = manifest?.training;
  // A game served over HTTP whose episodes fail is a server that is down or broken, not a policy
  // still learning: its jobs fail sooner (the manifest or the job may set another share).
  const kindDefaults = manifest?.server ? HTTP_TRAINING_DEFAULTS : undefined;
  const resolved = resolveTraining(kindDefaults, isOverrides(manifestTraining) ? manifestTraining : undefined, config.training);
  if (resolved.ok && resolved.config.algorithm === 'sft') return { ok: false, problems: ['algorithm: "sft" trains on a dataset; submit an SFT job'] };
  return resolved;
}

/** What an HTTP environment's jobs get before the manifest's options (docs/http-environments.md). */
const HTTP_TRAINING_DEFAULTS: TrainingOverrides = { maxEpisodeErrorShare: 0.1 };

function isOverrides(v: unknown): v is TrainingOverrides {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
