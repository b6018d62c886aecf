import { z } from 'zod';
import { trainingDefaultsSchema } from './manifest';

// What each kind of job is asked to do, validated by the server at submit time and again by the
// worker's job runner before it starts. Training fields left out come from the environment's
// manifest (`training`), then from the documented defaults in sdk/manifest.ts.

const id = z.string().min(1).max(64);

/** The policy's shape for a run that starts from scratch (no base checkpoint). */
export const modelShapeSchema = z
  .object({
    layers: z.number().int().min(1).max(48).default(2),
    width: z.number().int().min(8).max(4096).default(64),
    heads: z.number().int().min(1).max(64).default(4),
    context: z.number().int().min(8).max(8192).default(128),
  })
  .refine((m) => m.width % m.heads === 0, { message: 'heads must divide width', path: ['heads'] });

/**
 * The training fields a job may set: each optional and without its default. What a job leaves out
 * must come from the environment's manifest when the job runs (gpu-worker/job-runner/train.ts,
 * `mergeTraining`), not be filled in here with the documented defaults, which Zod 4 applies to a
 * missing key even under `.partial()` (and did: a template's learning rate gave way to 1e-4).
 */
const trainingOverridesSchema = z.object(
  Object.fromEntries(
    Object.entries(trainingDefaultsSchema.shape).map(([key, field]) => [
      key,
      (field instanceof z.ZodDefault || field instanceof z.ZodPrefault ? field.unwrap() : field).optional(),
    ]),
  ),
) as unknown as z.ZodType<Partial<z.output<typeof trainingDefaultsSchema>>, Partial<z.input<typeof trainingDefaultsSchema>>>;

export const trainJobConfigSchema = z.object({
  environmentVersionId: id,
  /** Start from this checkpoint's weights; without one, a new policy of `model`'s shape. */
  baseCheckpointId: id.optional(),
  datasetVersionId: id.optional(),
  model: modelShapeSchema.prefault({}),
  training: trainingOverridesSchema.default({}),
});

export const sftJobConfigSchema = z.object({
  datasetVersionId: id,
  baseCheckpointId: id.optional(),
  model: modelShapeSchema.prefault({}),
  steps: z.number().int().min(1).max(1_000_000).default(500),
  batchSize: z.number().int().min(1).max(4096).default(32),
  learningRate: z.number().positive().max(1).default(1e-3),
  checkpointEvery: z.number().int().min(1).default(100),
  seed: z.number().int().min(0).default(0),
});

export const evalJobConfigSchema = z.object({
  checkpointId: id,
  environmentVersionId: id,
  /** A scripted bot of the environment, random moves, or another checkpoint. */
  against: z.union([z.literal('bot'), z.literal('random'), z.object({ checkpointId: id })]).default('bot'),
  games: z.number().int().min(1).max(10_000).default(20),
  seed: z.number().int().min(0).default(0),
});

export const inferenceJobConfigSchema = z.object({
  checkpointId: id,
  /** The session ends, freeing its device, after this long without a request. */
  idleSeconds: z.number().int().min(10).max(86_400).default(600),
});

export const jobConfigSchemas = {
  TRAIN: trainJobConfigSchema,
  SFT: sftJobConfigSchema,
  EVAL: evalJobConfigSchema,
  INFERENCE: inferenceJobConfigSchema,
} as const;

export type JobKindName = keyof typeof jobConfigSchemas;
export type TrainJobConfig = z.infer<typeof trainJobConfigSchema>;
export type SftJobConfig = z.infer<typeof sftJobConfigSchema>;
export type EvalJobConfig = z.infer<typeof evalJobConfigSchema>;
export type InferenceJobConfig = z.infer<typeof inferenceJobConfigSchema>;
