/**
 * Where a job's policy comes from, in one switch (nanoGPT's `init_from`): resumed from the job's
 * own newest training checkpoint (weights, optimiser, RNG, step), started from a base checkpoint
 * (weights only), from an imported pretrained model (its weights, tokenizer and chat template,
 * with LoRA adapters unless `lora` is false), or new from scratch with the run's model options.
 * Train, SFT and eval load through here, and every storage-key lookup of the assignment goes
 * through `blobKey`.
 */
import { attachLora } from '../engine/lora';
import { GPT, type LanguageModel } from '../engine/model';
import { PretrainedDecoder } from '../engine/pretrained/decoder';
import { HfTokenizer } from '../engine/pretrained/hf-tokenizer';
import { CharTokenizer, type Tokenizer } from '../engine/tokenizer';
import { type TrainerState } from '../engine/trainer-core';
import { type loraOptionsSchema, type ModelOptions } from '../../sdk/training-config';
import { type z } from 'zod';
import { cachedModelFolder, runContextLength } from './model-cache';
import { type JobSink } from './sink';
import { type Assignment } from '../../sdk/worker-protocol';
import { type CheckpointStore, type RunnerNote } from './checkpoints';
import { type Emitter } from './emit';
import { JobFailure } from './types';

export interface LoadedPolicy {
  model: LanguageModel;
  tokenizer: Tokenizer;
  /** The trainer's state to import, when resumed. */
  trainerState: TrainerState | null;
  /** The KL reference the resumed checkpoint kept (the policy as its training began); the caller disposes it. */
  reference: LanguageModel | null;
  /** The first step to run: the resumed checkpoint's count of completed steps, else 0. */
  startStep: number;
  /** How it was loaded, for the log and the run page. */
  source: 'resume' | 'base' | 'pretrained' | 'scratch';
  /** The resumed checkpoint's runner note (where a warm start stood); null otherwise. */
  note: RunnerNote | null;
}

export interface PolicyRequest {
  /** A checkpoint of the team's to start from (config.baseCheckpointId, or an eval's checkpoint). */
  baseCheckpointId?: string;
  /** The shape of a new policy; without it, a base checkpoint is required (eval). */
  model?: ModelOptions;
  /** PPO's critic: a new policy gets a value head. */
  valueHead?: boolean;
  seed?: number;
  /** Eval never resumes: it has no training state of its own. */
  resume?: boolean;
  /** Where the assignment's imported model (config.baseModelId) is fetched from, for a new policy on it. */
  sink?: JobSink;
  /**
   * training.lora: adapters on a policy that has none yet (from a base checkpoint, a pretrained
   * model, or new); false trains every weight. Unset: adapters on an imported model only.
   */
  lora?: false | z.output<typeof loraOptionsSchema>;
}

/** The adapters `lora` asks for on a policy just loaded, logged; a resumed one keeps its own. */
function withAdapters(loaded: LoadedPolicy, request: PolicyRequest, emit: Emitter): LoadedPolicy {
  const lora = request.lora ?? (loaded.source === 'pretrained' ? {} : false);
  if (lora === false || loaded.model.adapters.size > 0) return loaded;
  try {
    const c = attachLora(loaded.model, { ...lora, seed: request.seed ?? 0 });
    emit.log('info', `LoRA: rank ${c.rank}, alpha ${c.alpha} on ${c.targets.join(', ')}; the base weights stay frozen`);
  } catch (err) {
    loaded.model.dispose();
    throw new JobFailure(`training.lora: ${(err as Error).message}`);
  }
  return loaded;
}

/** The storage key of a checkpoint or dataset version the config names (the server puts them in the assignment). */
export function blobKey(assignment: Assignment, id: string, what: string): string {
  const key = assignment.blobKeys?.[id];
  if (!key) throw new JobFailure(`the assignment has no storage key for ${what} ${id}`);
  return key;
}

export async function loadPolicy(assignment: Assignment, store: CheckpointStore, emit: Emitter, request: PolicyRequest): Promise<LoadedPolicy> {
  const loaded = await loadWeights(assignment, store, emit, request);
  return loaded.source === 'resume' ? loaded : withAdapters(loaded, request, emit);
}

async function loadWeights(assignment: Assignment, store: CheckpointStore, emit: Emitter, request: PolicyRequest): Promise<LoadedPolicy> {
  if (assignment.resumeFrom && request.resume !== false) {
    const ckpt = await store.load(assignment.resumeFrom.storageKey);
    if (ckpt.kind !== 'training' || !ckpt.trainerState) throw new JobFailure(`checkpoint ${assignment.resumeFrom.checkpointId} is not a training checkpoint`);
    const startStep = ckpt.note?.step ?? assignment.resumeFrom.step;
    const at = ckpt.note?.warmStartStep !== undefined ? `warm-start step ${ckpt.note.warmStartStep}` : `after step ${startStep}`;
    emit.log('info', `resumed from checkpoint ${assignment.resumeFrom.checkpointId} ${at}`);
    return { model: ckpt.model, tokenizer: ckpt.tokenizer, trainerState: ckpt.trainerState, reference: ckpt.reference, startStep, source: 'resume', note: ckpt.note };
  }
  if (request.baseCheckpointId) {
    const ckpt = await store.load(blobKey(assignment, request.baseCheckpointId, 'checkpoint'));
    // A new run's KL reference is the policy it starts from, not the one the checkpoint's run started from.
    ckpt.reference?.dispose();
    emit.log('info', `starting from checkpoint ${request.baseCheckpointId} (${ckpt.model.numParameters} parameters)`);
    return { model: ckpt.model, tokenizer: ckpt.tokenizer, trainerState: null, reference: null, startStep: 0, source: 'base', note: null };
  }
  const named = (assignment.config as { baseModelId?: unknown }).baseModelId;
  if (typeof named === 'string' && !assignment.baseModel) throw new JobFailure(`imported model ${named} is not in the assignment (removed from the team?)`);
  if (assignment.baseModel && request.sink) {
    const base = assignment.baseModel;
    const { folder, fetched } = await cachedModelFolder(base, request.sink);
    const ref = { modelId: base.modelId, contentHash: base.contentHash };
    const model = await PretrainedDecoder.fromFolder(folder, { valueHead: request.valueHead ?? false, base: ref, contextLength: runContextLength(assignment) });
    const tokenizer = HfTokenizer.fromFolder(folder, base.modelId);
    emit.log('info', `starting from imported model ${base.modelId} (${model.config.family}, ${model.numParameters} parameters, ${fetched ? 'fetched to this worker' : "from this worker's cache"})`);
    return { model, tokenizer, trainerState: null, reference: null, startStep: 0, source: 'pretrained', note: null };
  }
  const m = request.model;
  if (!m) throw new JobFailure('no checkpoint to load: this job needs one');
  const tokenizer = new CharTokenizer();
  const model = new GPT({ ...m, vocabSize: tokenizer.vocabSize, valueHead: request.valueHead ?? false, seed: request.seed ?? 0 });
  emit.log('info', `new policy: ${m.layers} layers, width ${m.width}, ${m.heads} heads, context ${m.contextLength} (${model.numParameters} parameters)`);
  return { model, tokenizer, trainerState: null, reference: null, startStep: 0, source: 'scratch', note: null };
}
