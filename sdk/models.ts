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

/** How a checkpoint of an imported model leaves as a Hugging Face folder: weights merged, or a PEFT adapter. */
export const EXPORT_FORMATS = ['merged', 'peft'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** To the export process: load this checkpoint on the base folder's model and write the folder. */
export interface ExportCommand {
  checkpointFile: string;
  baseFolder: string;
  /** The model's name, recorded in a PEFT adapter's config as the model to load it on. */
  baseName: string;
  format: ExportFormat;
  outFolder: string;
}
/** From it: the files written, or why the checkpoint cannot be exported. */
export type ExportAnswer = { ok: true; files: string[] } | { ok: false; error: string };

/** Model names: as checkpoint bases and datasets are named. */
export const modelNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$/, 'letters, digits, and _ . - (up to 80), starting with a letter or digit');

/** Files a model folder needs, and those it may carry beside its weights. */
const REQUIRED_MODEL_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json'];
const OPTIONAL_MODEL_FILES = ['generation_config.json', 'chat_template.jinja', 'special_tokens_map.json'];

/**
 * The files a model folder consists of, by name, sorted: the configs, tokenizer and template, and
 * the weights (`model.safetensors`, or the index and the shards it lists). The one rule the CLI and
 * the Models page send files by, and the engine's check lists them by. `has` says whether the
 * folder holds a file; `readIndex` reads model.safetensors.index.json. A folder missing something
 * is refused with an Error that names it.
 */
export async function modelFileNames(has: (name: string) => boolean, readIndex: () => Promise<string>): Promise<string[]> {
  const missing = REQUIRED_MODEL_FILES.filter((n) => !has(n));
  if (missing.length > 0) throw new Error(`the folder has no ${missing.join(', ')}: a model folder needs config.json, the weights, tokenizer.json and tokenizer_config.json`);
  const files = [...REQUIRED_MODEL_FILES, ...OPTIONAL_MODEL_FILES.filter(has)];
  if (has('model.safetensors')) return [...files, 'model.safetensors'].sort();
  if (!has('model.safetensors.index.json')) throw new Error('the folder has neither model.safetensors nor model.safetensors.index.json');
  let map: unknown;
  try {
    map = (JSON.parse(await readIndex()) as { weight_map?: unknown } | null)?.weight_map;
  } catch (err) {
    throw new Error(`model.safetensors.index.json is not valid JSON (${(err as Error).message})`, { cause: err });
  }
  if (typeof map !== 'object' || map === null) throw new Error('model.safetensors.index.json has no "weight_map" object');
  const shards = [...new Set(Object.values(map as Record<string, unknown>))];
  for (const shard of shards) {
    // A shard is a file beside the index, never a path out of the folder.
    if (typeof shard !== 'string' || !/^[^/\\]+\.safetensors$/.test(shard)) throw new Error(`model.safetensors.index.json lists an invalid shard name ${JSON.stringify(shard)}`);
    if (!has(shard)) throw new Error(`model.safetensors.index.json lists shard "${shard}", which is not in the folder`);
  }
  return [...files, 'model.safetensors.index.json', ...(shards as string[])].sort();
}

/** A Hugging Face hub repo, `owner/name` as the hub spells them (never a path out of its URL). */
export const hubRepoSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}\/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$/, 'a Hugging Face repo: owner/name')
  .refine((v) => !v.includes('..'), 'a Hugging Face repo: owner/name');

/** A revision of one: a branch, a tag, a commit, or refs/pr/N. */
export const hubRevisionSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_./-]{0,199}$/, 'a branch, tag or commit')
  .refine((v) => !v.includes('..') && !v.endsWith('/'), 'a branch, tag or commit');

/** The name a model imported from the hub gets unless one is chosen: the repo's own, made a valid model name. */
export function modelNameFromRepo(repo: string): string {
  const own = repo.slice(repo.indexOf('/') + 1);
  return own.replace(/[^A-Za-z0-9_.-]/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 80) || 'model';
}
