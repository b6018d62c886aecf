/**
 * Checkpoints, in the safetensors layout (safetensors.ts):
 * - training: weights (+ adapters), optimiser moments, trainer step, optimiser step, RNG state,
 *   trainer config, model config, tokenizer: enough to resume exactly;
 * - sampler: weights (adapters merged, or kept separate), model config, tokenizer;
 * - adapter: only the LoRA adapters and their config (a small fraction of a full checkpoint).
 *
 * A pretrained model's checkpoint (`whetstone.architecture` "pretrained") names the imported model
 * it started from (its id and content hash) rather than holding a copy of it: with LoRA it holds
 * the adapters (and a value head) alone, and loads on top of that base (`loadBase`); fully
 * fine-tuned, it holds every weight, in the engine's layout under their Hugging Face names. Its
 * tokenizer is the base's.
 *
 * A training checkpoint of a trainer with a KL penalty keeps its frozen reference: every weight,
 * or under LoRA only the reference's adapters (`whetstone.reference`), put back on the policy's
 * base when loaded (reference.ts).
 */
import * as tf from '@tensorflow/tfjs';
import { type ModelConfig } from './config';
import { CheckpointError } from './errors';
import { type LoraConfig, adapterWeights, attachLora, loraConfigOf } from './lora';
import { GPT, type LanguageModel, mergedTensors } from './model';
import { type BaseModelRef, PretrainedDecoder } from './pretrained/decoder';
import { type DecoderConfig } from './pretrained/hf-config';
import { prefetch } from './reads';
import { referenceLora, referenceOnBase } from './reference';
import { type NamedTensor, readSafetensors, writeSafetensors } from './safetensors';
import { type Tokenizer, type TokenizerJSON, tokenizerFromJSON } from './tokenizer';
import { type TrainerCore, type TrainerState } from './trainer-core';

export type CheckpointKind = 'training' | 'sampler' | 'adapter';
const FORMAT = '1';

export interface SaveOptions {
  /** Sampler checkpoints: fold LoRA adapters into the weights (default true). */
  mergeLora?: boolean;
  /** Free-form string stored in the metadata (e.g. the base checkpoint of an adapter). */
  note?: string;
}

/** Loads the imported model a pretrained checkpoint names, with its tokenizer (the worker's model cache). */
export type BaseModelLoader = (ref: BaseModelRef, opts: { valueHead: boolean }) => Promise<{ model: PretrainedDecoder; tokenizer: Tokenizer }>;

/** A KL reference saved as adapters on the policy's base (reference.ts): their config; the tensors are "reference.lora.*". */
interface ReferenceMetadata {
  lora: LoraConfig;
}

interface PretrainedMetadata {
  base: BaseModelRef | null;
  config: DecoderConfig;
  valueHead: boolean;
}

export interface LoadedCheckpoint {
  kind: CheckpointKind;
  model: LanguageModel;
  tokenizer: Tokenizer;
  lora: LoraConfig | null;
  /** Training checkpoints only. */
  trainerState: TrainerState | null;
  /** Training checkpoints of a trainer with a KL penalty: its frozen reference policy. */
  reference: LanguageModel | null;
  metadata: Record<string, string>;
}

/**
 * Pretrained decoders loaded from a fully fine-tuned checkpoint: their weights are not the imported
 * model's, so their checkpoints hold every weight even once adapters are put on top (a run from
 * such a checkpoint with `training.lora`); naming the base alone would lose the fine-tuning.
 */
const tunedWeights = new WeakSet<LanguageModel>();

/** Whether a pretrained decoder's weights under its adapters are a fine-tune's, not the imported model's (a PEFT export would lose them). */
export function hasTunedWeights(model: LanguageModel): boolean {
  return tunedWeights.has(model);
}

/**
 * The model's weights (merged with its adapters, or as they are) read to the CPU; of a pretrained
 * model with adapters on the imported weights, only its value head (the base is named, not copied).
 */
async function modelTensors(model: LanguageModel, merge: boolean): Promise<Map<string, NamedTensor>> {
  const out = new Map<string, NamedTensor>();
  const weights = merge ? mergedTensors(model) : model.params;
  if (model instanceof PretrainedDecoder && model.adapters.size > 0 && !merge && !tunedWeights.has(model)) {
    const kept = new Map([...model.params].filter(([name]) => name.startsWith('value.')));
    await prefetch(kept.values());
    for (const [name, t] of kept) out.set(`model.${name}`, { shape: t.shape, data: t.dataSync() as Float32Array });
    return out;
  }
  try {
    await prefetch(weights.values());
    for (const [name, t] of weights) out.set(`model.${name}`, { shape: t.shape, data: t.dataSync() as Float32Array });
  } finally {
    if (merge) weights.forEach((t) => t.dispose());
  }
  return out;
}

/** The adapters' tensors read to the CPU. */
async function adapterTensors(model: LanguageModel): Promise<Map<string, NamedTensor>> {
  await prefetch([...model.adapters.values()].flatMap((ad) => [ad.a, ad.b]));
  return adapterWeights(model);
}

function baseMetadata(kind: CheckpointKind, model: LanguageModel, tokenizer: Tokenizer, lora: LoraConfig | null, note?: string): Record<string, string> {
  const meta: Record<string, string> = {
    'whetstone.format': FORMAT,
    'whetstone.kind': kind,
    'whetstone.tokenizer': JSON.stringify(tokenizer.toJSON()),
  };
  if (model instanceof PretrainedDecoder) {
    meta['whetstone.architecture'] = 'pretrained';
    meta['whetstone.model'] = JSON.stringify({ base: model.base, config: model.config, valueHead: model.hasValueHead } satisfies PretrainedMetadata);
  } else if (model instanceof GPT) meta['whetstone.model'] = JSON.stringify(model.config);
  else throw new Error('a checkpoint holds a GPT or a pretrained decoder');
  if (lora) meta['whetstone.lora'] = JSON.stringify(lora);
  if (note) meta['whetstone.note'] = note;
  return meta;
}

/** Weights, config and tokenizer, for serving. Returns the file size in bytes. */
export async function saveSamplerCheckpoint(
  file: string,
  model: LanguageModel,
  tokenizer: Tokenizer,
  lora: LoraConfig | null = null,
  opts: SaveOptions = {},
): Promise<number> {
  // A pretrained model's adapters stay apart: merged, the checkpoint would be a copy of the base.
  const merge = (opts.mergeLora ?? true) && !(model instanceof PretrainedDecoder);
  const tensors = await modelTensors(model, merge && model.adapters.size > 0);
  if (!merge) for (const [k, t] of await adapterTensors(model)) tensors.set(k, t);
  return writeSafetensors(file, tensors, baseMetadata('sampler', model, tokenizer, merge ? null : (lora ?? loraConfigOf(model)), opts.note));
}

/** Everything needed to resume training exactly. */
export async function saveTrainingCheckpoint(
  file: string,
  model: LanguageModel,
  tokenizer: Tokenizer,
  trainer: { exportState(): TrainerState; core: Pick<TrainerCore, 'lastCheckpoint' | 'momentTensors'>; reference?: LanguageModel | null },
  lora: LoraConfig | null = null,
  opts: SaveOptions = {},
): Promise<number> {
  await prefetch(trainer.core.momentTensors());
  const referenceAdapters = trainer.reference ? referenceLora(trainer.reference) : null;
  if (trainer.reference && !referenceAdapters) await prefetch(trainer.reference.params.values());
  const state = trainer.exportState();
  const tensors = await modelTensors(model, false);
  for (const [k, t] of await adapterTensors(model)) tensors.set(k, t);
  const shapes = model.trainableVariables();
  for (const [kind, moments] of [
    ['m', state.moments.m],
    ['v', state.moments.v],
  ] as const) {
    for (const [name, data] of moments) tensors.set(`optim.${kind}.${name}`, { shape: shapes.get(name)!.shape, data });
  }
  // The KL reference is the policy at the start of training, not at the resume: keep it. Under
  // LoRA it is the policy's own (frozen) base with the adapters it started with: those alone.
  if (trainer.reference && referenceAdapters) {
    for (const [k, t] of await adapterTensors(trainer.reference)) tensors.set(`reference.${k}`, t);
  } else if (trainer.reference) {
    for (const [name, v] of trainer.reference.params) tensors.set(`reference.${name}`, { shape: v.shape, data: v.dataSync() as Float32Array });
  }
  const meta = baseMetadata('training', model, tokenizer, lora ?? loraConfigOf(model), opts.note);
  if (referenceAdapters) meta['whetstone.reference'] = JSON.stringify({ lora: referenceAdapters } satisfies ReferenceMetadata);
  meta['whetstone.trainer'] = JSON.stringify({
    algorithm: state.algorithm,
    step: state.step,
    optimizerStep: state.optimizerStep,
    rng: state.rng,
    config: state.config,
  });
  const bytes = await writeSafetensors(file, tensors, meta);
  trainer.core.lastCheckpoint = file;
  return bytes;
}

/** Only the LoRA adapters. */
export async function saveAdapterCheckpoint(file: string, model: GPT, tokenizer: Tokenizer, lora: LoraConfig, opts: SaveOptions = {}): Promise<number> {
  if (model.adapters.size === 0) throw new CheckpointError(file, 'the model has no LoRA adapters to save');
  const tensors = await adapterTensors(model);
  return writeSafetensors(file, tensors, baseMetadata('adapter', model, tokenizer, lora, opts.note));
}

function parseJSON<T>(file: string, meta: Record<string, string>, key: string): T {
  const raw = meta[key];
  if (raw === undefined) throw new CheckpointError(file, `metadata is missing "${key}"`);
  try {
    return JSON.parse(raw) as T;
  } catch {
    throw new CheckpointError(file, `metadata "${key}" is not valid JSON`);
  }
}

/**
 * Load a training or sampler checkpoint into a new model (with its adapters and trainer state). A
 * pretrained model's checkpoint needs `loadBase`, which gives the imported model it names.
 */
export async function loadCheckpoint(file: string, opts: { loadBase?: BaseModelLoader } = {}): Promise<LoadedCheckpoint> {
  const { tensors, metadata } = await readSafetensors(file);
  if (metadata['whetstone.format'] !== FORMAT) throw new CheckpointError(file, `unknown format "${metadata['whetstone.format']}" (expected ${FORMAT})`);
  const kind = metadata['whetstone.kind'] as CheckpointKind;
  if (kind !== 'training' && kind !== 'sampler') {
    throw new CheckpointError(file, kind === 'adapter' ? 'is an adapter checkpoint: load a base model and call loadAdapterCheckpoint' : `unknown kind "${kind}"`);
  }
  const weights = new Map<string, tf.Tensor>();
  for (const [name, t] of tensors) if (name.startsWith('model.')) weights.set(name.slice(6), tf.tensor(t.data, t.shape));
  let model: LanguageModel;
  let tokenizer: Tokenizer;
  let newReference: (refWeights: Map<string, tf.Tensor>) => LanguageModel;
  try {
    if (metadata['whetstone.architecture'] === 'pretrained') {
      const meta = parseJSON<PretrainedMetadata>(file, metadata, 'whetstone.model');
      if (!meta.base) throw new CheckpointError(file, 'names no imported model to load on');
      if (!opts.loadBase) throw new CheckpointError(file, `is a checkpoint of the imported model ${meta.base.modelId}: it loads on that model`);
      const loaded = await opts.loadBase(meta.base, { valueHead: meta.valueHead });
      model = loaded.model;
      tokenizer = loaded.tokenizer;
      // Fully fine-tuned weights (and a value head) replace the base's.
      for (const [name, w] of weights) {
        const v = model.params.get(name);
        if (!v || v.shape.join(',') !== w.shape.join(',')) {
          model.dispose();
          throw new CheckpointError(file, `tensor "model.${name}" does not fit the imported model ${meta.base.modelId}`);
        }
        v.assign(w);
      }
      if ([...weights.keys()].some((name) => !name.startsWith('value.'))) tunedWeights.add(model);
      newReference = (refWeights) => new PretrainedDecoder(meta.config, refWeights, { valueHead: meta.valueHead, base: meta.base });
    } else {
      const config = parseJSON<ModelConfig>(file, metadata, 'whetstone.model');
      tokenizer = tokenizerFromJSON(parseJSON<TokenizerJSON>(file, metadata, 'whetstone.tokenizer'));
      try {
        model = new GPT(config, weights);
      } catch (err) {
        throw new CheckpointError(file, (err as Error).message);
      }
      newReference = (refWeights) => new GPT(config, refWeights);
    }
  } finally {
    weights.forEach((t) => t.dispose());
  }
  const lora = metadata['whetstone.lora'] ? parseJSON<LoraConfig>(file, metadata, 'whetstone.lora') : null;
  if (lora) {
    const ad = new Map<string, Float32Array>();
    for (const [name, t] of tensors) if (name.startsWith('lora.')) ad.set(name, t.data);
    try {
      attachLora(model, lora, ad);
    } catch (err) {
      model.dispose();
      throw new CheckpointError(file, (err as Error).message);
    }
  }
  let trainerState: TrainerState | null = null;
  if (kind === 'training') {
    const t = parseJSON<Omit<TrainerState, 'moments'>>(file, metadata, 'whetstone.trainer');
    const m = new Map<string, Float32Array>();
    const v = new Map<string, Float32Array>();
    for (const [name, ten] of tensors) {
      if (name.startsWith('optim.m.')) m.set(name.slice(8), ten.data);
      else if (name.startsWith('optim.v.')) v.set(name.slice(8), ten.data);
    }
    for (const name of model.trainableVariables().keys()) {
      if (!m.has(name) || !v.has(name)) {
        model.dispose();
        throw new CheckpointError(file, `training checkpoint is missing optimiser moments of "${name}"`);
      }
    }
    trainerState = { ...t, moments: { m, v } };
  }
  let reference: LanguageModel | null = null;
  const refWeights = new Map<string, tf.Tensor>();
  if (metadata['whetstone.reference']) {
    // Adapters on the policy's own base, which is exactly the base they were trained on.
    const { lora: refLora } = parseJSON<ReferenceMetadata>(file, metadata, 'whetstone.reference');
    const ad = new Map<string, Float32Array>();
    for (const [name, t] of tensors) if (name.startsWith('reference.lora.')) ad.set(name.slice(10), t.data);
    try {
      reference = referenceOnBase(model, refLora, ad);
    } catch (err) {
      model.dispose();
      throw new CheckpointError(file, `reference policy: ${(err as Error).message}`);
    }
  } else for (const [name, t] of tensors) if (name.startsWith('reference.')) refWeights.set(name.slice(10), tf.tensor(t.data, t.shape));
  if (refWeights.size > 0) {
    try {
      reference = newReference(refWeights);
    } catch (err) {
      model.dispose();
      throw new CheckpointError(file, `reference policy: ${(err as Error).message}`);
    } finally {
      refWeights.forEach((t) => t.dispose());
    }
  }
  return { kind, model, tokenizer, lora, trainerState, reference, metadata };
}

/** Attach the adapters of an adapter checkpoint to `model` (a base with the same config). */
export async function loadAdapterCheckpoint(file: string, model: GPT): Promise<LoraConfig> {
  const { tensors, metadata } = await readSafetensors(file);
  if (metadata['whetstone.kind'] !== 'adapter') throw new CheckpointError(file, `is a ${metadata['whetstone.kind']} checkpoint, not an adapter`);
  const config = parseJSON<ModelConfig>(file, metadata, 'whetstone.model');
  for (const key of ['layers', 'width', 'vocabSize'] as const) {
    if (config[key] !== model.config[key]) throw new CheckpointError(file, `adapter was trained on a model with ${key} ${config[key]}, this model has ${model.config[key]}`);
  }
  const lora = parseJSON<LoraConfig>(file, metadata, 'whetstone.lora');
  const ad = new Map<string, Float32Array>();
  for (const [name, t] of tensors) ad.set(name, t.data);
  try {
    return attachLora(model, lora, ad);
  } catch (err) {
    throw new CheckpointError(file, (err as Error).message);
  }
}
