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

/** The folder's config.json as the engine's typed config; a refusal names the file. */
export function readDecoderConfig(folder: string): DecoderConfig {
  const configPath = path.join(folder, 'config.json');
  try {
    return parseDecoderConfig(readJson(configPath));
  } catch (err) {
    // Name the file too: a user importing a folder needs to know which file to look at.
    if (err instanceof ConfigError) throw new CheckpointError(configPath, err.message);
    throw err;
  }
}

export async function readHfFolder(folder: string): Promise<HfFolder> {
  const config = readDecoderConfig(folder);
  const tensors = new Map<string, NamedTensor>();
  for (const file of weightFilesOf(folder)) {
    for (const [name, t] of (await readSafetensors(path.join(folder, file))).tensors) tensors.set(name, t);
  }
  return { config, tensors };
}

/** `model.safetensors`, or the shards `model.safetensors.index.json` lists (each once, each present). */
function weightFilesOf(folder: string): string[] {
  if (fs.existsSync(path.join(folder, 'model.safetensors'))) return ['model.safetensors'];
  const indexPath = path.join(folder, 'model.safetensors.index.json');
  if (!fs.existsSync(indexPath)) throw new CheckpointError(folder, 'has neither model.safetensors nor model.safetensors.index.json');
  const map = (readJson(indexPath) as { weight_map?: unknown } | null)?.weight_map;
  if (typeof map !== 'object' || map === null) throw new CheckpointError(indexPath, 'has no "weight_map" object');
  return [...new Set(Object.values(map as Record<string, unknown>))].map((name) => {
    // A shard name is a file beside the index, never a path out of the folder.
    if (typeof name !== 'string' || name !== path.basename(name) || !name.endsWith('.safetensors')) throw new CheckpointError(indexPath, `lists an invalid shard name ${JSON.stringify(name)}`);
    if (!fs.existsSync(path.join(folder, name))) throw new CheckpointError(indexPath, `lists shard "${name}", which is not in the folder`);
    return name;
  });
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new CheckpointError(file, `cannot be read: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new CheckpointError(file, `is not valid JSON (${(err as Error).message})`);
  }
}
