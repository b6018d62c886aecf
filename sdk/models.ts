/**
 * Pretrained models as the server, the CLI, the IDE and the worker describe them: the card an
 * import produces (gpu-worker/engine/pretrained/inspect.ts makes it from the folder; the server
 * stores it with the model), and the messages of the process the server checks a folder in.
 */
import { z } from 'zod';

const MODEL_FAMILIES = ['llama', 'qwen2', 'qwen3'] as const;

export const modelCardSchema = z.object({
  family: z.enum(MODEL_FAMILIES),
  /** Weights of the model (a tied head counted once). */
  parameters: z.number().int().nonnegative(),
  /** max_position_embeddings: the longest sequence the model reads. */
  contextLength: z.number().int().positive(),
  vocabSize: z.number().int().positive(),
  layers: z.number().int().positive(),
  hiddenSize: z.number().int().positive(),
  heads: z.number().int().positive(),
  kvHeads: z.number().int().positive(),
  /** Width of one attention head (Qwen3 sets it apart from hiddenSize / heads); absent on cards imported before it was recorded. */
  headDim: z.number().int().positive().optional(),
  tiedEmbeddings: z.boolean(),
  hasChatTemplate: z.boolean(),
  /** The stored dtypes of the weights, e.g. ["BF16"]. */
  dtypes: z.array(z.string()),
  /** The folder's files the model consists of, sorted. */
  files: z.array(z.string()),
  /** Their total size in bytes. */
  bytes: z.number().int().nonnegative(),
});
export type ModelCard = z.infer<typeof modelCardSchema>;

/** To the inspect process: check this folder. */
export interface InspectCommand {
  folder: string;
}
/** From it: the card, or why the folder is refused (file and reason). */
export type InspectAnswer = { ok: true; card: ModelCard } | { ok: false; error: string };

/** Model names: as checkpoint bases and datasets are named. */
export const modelNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$/, 'letters, digits, and _ . - (up to 80), starting with a letter or digit');
