/**
 * Messages between the daemon (EngineProcess) and the engine child process. Every request has an
 * id; the child answers each with exactly one response carrying the same id.
 */
import { type Sequence } from '../batch';
import { type BackendReport } from '../backend';
import { type ModelConfig } from '../config';
import { type GRPOConfig } from '../grpo';
import { type LoraConfig } from '../lora';
import { type PPOConfig } from '../ppo';
import { type SampleOptions, type SampleResult } from '../sampler';
import { type SFTConfig } from '../sft';
import { type TokenizerJSON } from '../tokenizer';
import { type StepMetrics } from '../trainer-core';

export type TrainerSpec =
  | { algorithm: 'sft'; config?: Partial<SFTConfig> }
  | { algorithm: 'grpo'; config?: Partial<GRPOConfig> }
  | { algorithm: 'ppo'; config?: Partial<PPOConfig> };

export interface InitParams {
  /** Backend choice; default WHETSTONE_BACKEND or auto. */
  backend?: string;
  /** A new model: its config (vocabSize is taken from the tokenizer) and tokenizer. */
  model?: { config: Partial<ModelConfig>; tokenizer: TokenizerJSON };
  /** Or a training or sampler checkpoint to load (a training checkpoint restores the trainer). */
  checkpoint?: string;
  /** Attach new LoRA adapters (ignored when the checkpoint has its own). */
  lora?: Partial<LoraConfig>;
  trainer?: TrainerSpec;
}

export interface InitResult {
  backend: BackendReport;
  numParameters: number;
  vocabSize: number;
  /** Trainer step (non-zero when resumed from a training checkpoint). */
  step: number;
}

export interface Requests {
  /** Initialise (or re-initialise) the backend only, to advertise it before any job. */
  backend: { params: { backend?: string }; result: BackendReport };
  init: { params: InitParams; result: InitResult };
  setTrainer: { params: TrainerSpec; result: { step: number } };
  sample: { params: { prompts: number[][]; options?: Partial<SampleOptions> }; result: SampleResult[] };
  train: { params: { batch: Sequence[] }; result: StepMetrics };
  save: { params: { path: string; kind: 'training' | 'sampler' | 'adapter'; mergeLora?: boolean }; result: { bytes: number } };
  memory: { params: Record<string, never>; result: { numTensors: number; numBytes: number } };
  shutdown: { params: Record<string, never>; result: null };
}

export type Method = keyof Requests;

export interface RequestMessage<M extends Method = Method> {
  id: number;
  method: M;
  params: Requests[M]['params'];
}

export interface ErrorInfo {
  name: string;
  message: string;
  /** ConfigError: the offending field. */
  field?: string;
  /** NonFiniteLossError: where training stopped. */
  step?: number;
  lastGoodCheckpoint?: string | null;
}

export type ResponseMessage =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: ErrorInfo };
