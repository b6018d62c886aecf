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
import { type ModelCard, modelFileNames } from '../../../sdk/models';
import { readDecoderConfig } from './hf-folder';
import { HfTokenizer } from './hf-tokenizer';

export async function inspectHfFolder(folder: string): Promise<ModelCard> {
  let files: string[];
  try {
    files = await modelFileNames((name) => fs.existsSync(path.join(folder, name)), () => fs.promises.readFile(path.join(folder, 'model.safetensors.index.json'), 'utf8'));
  } catch (err) {
    throw new CheckpointError(folder, (err as Error).message);
  }
  const config = readDecoderConfig(folder);
  const weightFiles = files.filter((f) => f.endsWith('.safetensors'));
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
