/**
 * What a checkpoint holds, read from its own header (the safetensors metadata the engine writes,
 * gpu-worker/engine/checkpoint.ts) rather than guessed from the run that wrote it: a run from a
 * checkpoint keeps the adapters it finds, so a chain of runs holds what its first run chose. The
 * launcher says it where the user picks what to start from.
 */
import { z } from 'zod';
import { type BlobStore } from '../blobs/store';
import { type Db } from '../db/client';

export interface CheckpointContents {
  /** "gpt": the engine's own model; "pretrained": an imported model's. */
  architecture: 'gpt' | 'pretrained';
  /** LoRA adapters kept apart from the weights they adapt; null when every weight is in the checkpoint (or adapters were merged into them). */
  lora: { rank: number; alpha: number; targets: string[] } | null;
  /** The imported model it loads on (pretrained); its name is null once the team removed it. */
  model: { id: string; name: string | null } | null;
  /** The engine's own model's shape (gpt). */
  shape: { layers: number; width: number; heads: number; contextLength: number } | null;
  /** Whether every weight is in the file (a GPT's always; an imported model's once fully fine-tuned, adapters on top or not). */
  allWeights: boolean;
}

/** The header is a few kilobytes (configs and a tokenizer's reference or characters); more is not a checkpoint. */
const MAX_HEADER_BYTES = 16 * 2 ** 20;

const loraSchema = z.object({ rank: z.number(), alpha: z.number(), targets: z.array(z.string()) });
const gptSchema = z.object({ layers: z.number(), width: z.number(), heads: z.number(), contextLength: z.number() });
const pretrainedSchema = z.object({ base: z.object({ modelId: z.string() }).nullable() });

/** The safetensors header at the start of a blob (its `__metadata__` and the tensors' names), read without reading the tensors. */
async function readHeader(blobs: BlobStore, key: string): Promise<{ meta: Record<string, unknown>; tensors: string[] }> {
  let head = Buffer.alloc(0);
  let need = Infinity;
  for await (const chunk of blobs.stream(key)) {
    head = Buffer.concat([head, chunk as Buffer]);
    if (need === Infinity && head.length >= 8) {
      const length = Number(head.readBigUInt64LE(0));
      if (length > MAX_HEADER_BYTES) throw new Error(`a header of ${length} bytes`);
      need = 8 + length;
    }
    if (head.length >= need) break;
  }
  if (head.length < need) throw new Error('the header is cut short');
  const { __metadata__: meta, ...tensors } = JSON.parse(head.subarray(8, need).toString('utf8')) as { __metadata__?: Record<string, unknown> };
  return { meta: meta ?? {}, tensors: Object.keys(tensors) };
}

/** A metadata value that is JSON text, parsed with `schema`; null when absent or not of that shape. */
function jsonField<T>(meta: Record<string, unknown>, key: string, schema: z.ZodType<T>): T | null {
  const raw = meta[key];
  if (typeof raw !== 'string') return null;
  try {
    const parsed = schema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The team's checkpoint's contents; null when it is not the team's, and an Error when its file cannot be read as a checkpoint. */
export async function checkpointContents(db: Db, blobs: BlobStore, teamId: string, checkpointId: string): Promise<CheckpointContents | null> {
  const row = await db.checkpoint.findFirst({ where: { id: checkpointId, teamId }, select: { storageKey: true } });
  if (!row) return null;
  const { meta, tensors } = await readHeader(blobs, row.storageKey);
  const lora = jsonField(meta, 'whetstone.lora', loraSchema);
  if (meta['whetstone.architecture'] === 'pretrained') {
    const modelId = jsonField(meta, 'whetstone.model', pretrainedSchema)?.base?.modelId ?? null;
    const model = modelId ? await db.pretrainedModel.findFirst({ where: { id: modelId, teamId }, select: { name: true } }) : null;
    // The engine's names of an imported model's weights are its Hugging Face names ("model.model.…", "model.lm_head.…"); a value head is not one.
    const allWeights = tensors.some((name) => name.startsWith('model.') && !name.startsWith('model.value.'));
    return { architecture: 'pretrained', lora, model: modelId ? { id: modelId, name: model?.name ?? null } : null, shape: null, allWeights };
  }
  const shape = jsonField(meta, 'whetstone.model', gptSchema);
  if (!shape) throw new Error('its header names no model');
  return { architecture: 'gpt', lora, model: null, shape: { layers: shape.layers, width: shape.width, heads: shape.heads, contextLength: shape.contextLength }, allWeights: true };
}
