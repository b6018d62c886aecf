/**
 * Reads a Hugging Face model folder: `config.json` and the weights, either `model.safetensors` or
 * the shards that `model.safetensors.index.json` lists. Tensors come back as f32 whatever the
 * stored dtype (F32, F16, BF16; see ../safetensors.ts). Each shard is read whole: fine for the
 * small models this step targets; streaming tensor by tensor is issue 19's import step.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CheckpointError, ConfigError } from '../errors';
import { type NamedTensor, readSafetensors } from '../safetensors';
import { type DecoderConfig, parseDecoderConfig } from './hf-config';

export interface HfFolder {
  config: DecoderConfig;
  /** Hugging Face tensor names (`model.layers.0.self_attn.q_proj.weight`, …) → f32 values. */
  tensors: Map<string, NamedTensor>;
}

export async function readHfFolder(folder: string): Promise<HfFolder> {
  const configPath = path.join(folder, 'config.json');
  let config: DecoderConfig;
  try {
    config = parseDecoderConfig(await readJson(configPath));
  } catch (err) {
    // Name the file too: a user importing a folder needs to know which file to look at.
    if (err instanceof ConfigError) throw new CheckpointError(configPath, err.message);
    throw err;
  }
  const single = path.join(folder, 'model.safetensors');
  const index = path.join(folder, 'model.safetensors.index.json');
  let files: string[];
  if (fs.existsSync(single)) files = [single];
  else if (fs.existsSync(index)) files = shardFiles(folder, index, await readJson(index));
  else throw new CheckpointError(folder, 'has neither model.safetensors nor model.safetensors.index.json');
  const tensors = new Map<string, NamedTensor>();
  for (const file of files) {
    for (const [name, t] of (await readSafetensors(file)).tensors) tensors.set(name, t);
  }
  return { config, tensors };
}

/** The shard files an index names, each once, refusing a listed shard that is absent. */
function shardFiles(folder: string, indexPath: string, index: unknown): string[] {
  const map = (index as { weight_map?: unknown } | null)?.weight_map;
  if (typeof map !== 'object' || map === null) throw new CheckpointError(indexPath, 'has no "weight_map" object');
  const names = [...new Set(Object.values(map as Record<string, unknown>))];
  return names.map((name) => {
    // A shard name is a file beside the index, never a path out of the folder.
    if (typeof name !== 'string' || name !== path.basename(name)) throw new CheckpointError(indexPath, `lists an invalid shard name ${JSON.stringify(name)}`);
    const file = path.join(folder, name);
    if (!fs.existsSync(file)) throw new CheckpointError(indexPath, `lists shard "${name}", which is not in the folder`);
    return file;
  });
}

async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await fs.promises.readFile(file, 'utf8');
  } catch (err) {
    throw new CheckpointError(file, `cannot be read: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new CheckpointError(file, `is not valid JSON (${(err as Error).message})`);
  }
}
