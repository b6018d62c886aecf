/**
 * Checks a Hugging Face model folder completely without loading its weights, and describes it: the
 * import's gate (the CLI runs it before uploading, the server again on what arrived). Everything a
 * worker would later trip over is refused here with the file and the reason: a missing file, a
 * shard the index lists but the folder lacks, a tensor missing, extra, of the wrong shape or of an
 * unsupported dtype, a tokenizer the library cannot read, a chat template that fails to render, a
 * tokenizer with more tokens than the model has rows.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CheckpointError, ConfigError } from '../errors';
import { readSafetensorsHeader } from '../safetensors';
import { expectedTensors, ignorable } from './decoder';
import { type ModelCard } from '../../../sdk/models';
import { type DecoderConfig, parseDecoderConfig } from './hf-config';
import { readJson, weightFilesOf } from './hf-folder';
import { HfTokenizer } from './hf-tokenizer';

/** Files a model may carry beside its weights; read when present, uploaded with it. */
const OPTIONAL_FILES = ['generation_config.json', 'chat_template.jinja', 'special_tokens_map.json'];
const REQUIRED_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json'];

export async function inspectHfFolder(folder: string): Promise<ModelCard> {
  for (const file of REQUIRED_FILES) {
    if (!fs.existsSync(path.join(folder, file))) throw new CheckpointError(path.join(folder, file), 'is missing: a model folder needs config.json, the weights, tokenizer.json and tokenizer_config.json');
  }
  const configPath = path.join(folder, 'config.json');
  let config: DecoderConfig;
  try {
    config = parseDecoderConfig(readJson(configPath));
  } catch (err) {
    if (err instanceof ConfigError) throw new CheckpointError(configPath, err.message);
    throw err;
  }
  const weightFiles = weightFilesOf(folder);
  const expected = new Map(expectedTensors(config));
  const seen = new Set<string>();
  const dtypes = new Set<string>();
  for (const file of weightFiles) {
    const where = path.join(folder, file);
    for (const [name, entry] of (await readSafetensorsHeader(where)).entries) {
      const shape = expected.get(name);
      if (!shape) {
        if (ignorable(name, config)) continue;
        throw new CheckpointError(where, `tensor "${name}" is not part of a ${config.family} model with this config`);
      }
      if (entry.shape.join(',') !== shape.join(',')) throw new CheckpointError(where, `tensor "${name}" has shape [${entry.shape}] but the config needs [${shape}]`);
      if (seen.has(name)) throw new CheckpointError(where, `tensor "${name}" is stored twice`);
      seen.add(name);
      dtypes.add(entry.dtype);
    }
  }
  const missing = [...expected.keys()].find((name) => !seen.has(name));
  if (missing) throw new CheckpointError(folder, `tensor "${missing}" is missing (${config.family} config with ${config.layers} layers needs it)`);

  // The tokenizer as the engine will use it: read, its template rendered (HfTokenizer finds the end of a turn by rendering one).
  let tokenizer: HfTokenizer;
  try {
    tokenizer = HfTokenizer.fromFolder(folder);
  } catch (err) {
    if (err instanceof ConfigError) throw new CheckpointError(folder, err.message);
    throw err;
  }
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new CheckpointError(path.join(folder, 'tokenizer.json'), `has ${tokenizer.vocabSize} tokens but the model only ${config.vocabSize} (config.json vocab_size): this tokenizer is not the model's`);
  }
  const files = [...REQUIRED_FILES, ...OPTIONAL_FILES.filter((f) => fs.existsSync(path.join(folder, f))), ...weightFiles];
  if (fs.existsSync(path.join(folder, 'model.safetensors.index.json')) && !weightFiles.includes('model.safetensors')) files.push('model.safetensors.index.json');
  files.sort();
  const bytes = files.reduce((sum, f) => sum + fs.statSync(path.join(folder, f)).size, 0);
  let parameters = 0;
  for (const shape of expected.values()) parameters += shape.reduce((a, b) => a * b, 1);
  return {
    family: config.family,
    parameters,
    contextLength: config.maxPositions,
    vocabSize: config.vocabSize,
    layers: config.layers,
    hiddenSize: config.hiddenSize,
    heads: config.heads,
    kvHeads: config.kvHeads,
    headDim: config.headDim,
    tiedEmbeddings: config.tiedEmbeddings,
    hasChatTemplate: tokenizer.hasChatTemplate,
    dtypes: [...dtypes].sort(),
    files,
    bytes,
  };
}
