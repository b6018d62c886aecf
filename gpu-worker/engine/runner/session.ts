/**
 * One engine session: a model, its tokenizer, optional LoRA and a trainer, driven by protocol
 * requests. The child process wraps it; tests can drive it directly.
 */
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../backend';
import { loadCheckpoint, saveAdapterCheckpoint, saveSamplerCheckpoint, saveTrainingCheckpoint } from '../checkpoint';
import { ConfigError, NonFiniteLossError } from '../errors';
import { GRPOTrainer } from '../grpo';
import { type LoraConfig, attachLora } from '../lora';
import { GPT } from '../model';
import { PPOTrainer } from '../ppo';
import { sample } from '../sampler';
import { SFTTrainer } from '../sft';
import { type Tokenizer, tokenizerFromJSON } from '../tokenizer';
import { type TrainerState } from '../trainer-core';
import { type ErrorInfo, type InitResult, type Method, type Requests, type TrainerSpec } from './protocol';

type Trainer = SFTTrainer | GRPOTrainer | PPOTrainer;

export class EngineSession {
  private model: GPT | null = null;
  private tokenizer: Tokenizer | null = null;
  private lora: LoraConfig | null = null;
  private trainer: Trainer | null = null;
  /** A KL reference restored from a training checkpoint, handed to the next GRPO/PPO trainer. */
  private reference: GPT | null = null;

  async handle<M extends Method>(method: M, params: Requests[M]['params']): Promise<Requests[M]['result']> {
    switch (method) {
      case 'backend':
        return (await initBackend((params as Requests['backend']['params']).backend)) as Requests[M]['result'];
      case 'init':
        return (await this.init(params as Requests['init']['params'])) as Requests[M]['result'];
      case 'setTrainer':
        return this.setTrainer(params as TrainerSpec, null) as Requests[M]['result'];
      case 'sample': {
        const p = params as Requests['sample']['params'];
        return sample(this.need(), this.tokenizer!, p.prompts, p.options) as Requests[M]['result'];
      }
      case 'train': {
        if (!this.trainer) throw new ConfigError('trainer', 'no trainer: send init with a trainer, or setTrainer');
        return this.trainer.step((params as Requests['train']['params']).batch) as Requests[M]['result'];
      }
      case 'save':
        return (await this.save(params as Requests['save']['params'])) as Requests[M]['result'];
      case 'memory': {
        const m = tf.memory();
        return { numTensors: m.numTensors, numBytes: m.numBytes } as Requests[M]['result'];
      }
      case 'shutdown':
        this.dispose();
        return null as Requests[M]['result'];
      default:
        throw new ConfigError('method', `unknown method "${String(method)}"`);
    }
  }

  private need(): GPT {
    if (!this.model || !this.tokenizer) throw new ConfigError('init', 'the session has no model yet: send init first');
    return this.model;
  }

  private async init(p: Requests['init']['params']): Promise<InitResult> {
    const backend = await initBackend(p.backend);
    this.dispose();
    let state: TrainerState | null = null;
    if (p.checkpoint) {
      const loaded = await loadCheckpoint(p.checkpoint);
      this.model = loaded.model;
      this.tokenizer = loaded.tokenizer;
      this.lora = loaded.lora;
      state = loaded.trainerState;
      this.reference = loaded.reference;
    } else if (p.model) {
      this.tokenizer = tokenizerFromJSON(p.model.tokenizer);
      this.model = new GPT({ ...p.model.config, vocabSize: this.tokenizer.vocabSize });
    } else {
      throw new ConfigError('init', 'needs either model or checkpoint');
    }
    if (p.lora && !this.lora) this.lora = attachLora(this.model, p.lora);
    let step = 0;
    if (p.trainer) step = this.setTrainer(p.trainer, state).step;
    return { backend, numParameters: this.model.numParameters, vocabSize: this.tokenizer.vocabSize, step };
  }

  private setTrainer(spec: TrainerSpec, state: TrainerState | null): { step: number } {
    const model = this.need();
    let next: Trainer;
    // Build the new trainer first so that a bad config leaves the current one in place.
    if (spec.algorithm === 'sft') next = new SFTTrainer(model, spec.config);
    else if (spec.algorithm === 'grpo') next = new GRPOTrainer(model, spec.config, this.reference ?? undefined);
    else if (spec.algorithm === 'ppo') next = new PPOTrainer(model, spec.config, this.reference ?? undefined);
    else throw new ConfigError('trainer.algorithm', `must be sft, grpo or ppo, got "${(spec as { algorithm: string }).algorithm}"`);
    if (state && state.algorithm === spec.algorithm) next.importState(state);
    this.trainer?.dispose();
    this.trainer = next;
    return { step: next.core.step };
  }

  private async save(p: Requests['save']['params']): Promise<{ bytes: number }> {
    const model = this.need();
    if (p.kind === 'sampler') return { bytes: await saveSamplerCheckpoint(p.path, model, this.tokenizer!, this.lora, { mergeLora: p.mergeLora }) };
    if (p.kind === 'adapter') {
      if (!this.lora) throw new ConfigError('save.kind', 'adapter checkpoints need a LoRA session');
      return { bytes: await saveAdapterCheckpoint(p.path, model, this.tokenizer!, this.lora) };
    }
    if (!this.trainer) throw new ConfigError('save.kind', 'training checkpoints need a trainer');
    return { bytes: await saveTrainingCheckpoint(p.path, model, this.tokenizer!, this.trainer, this.lora) };
  }

  dispose(): void {
    this.trainer?.dispose();
    this.model?.dispose();
    this.reference?.dispose();
    this.trainer = null;
    this.model = null;
    this.reference = null;
    this.tokenizer = null;
    this.lora = null;
  }
}

export function errorInfo(err: unknown): ErrorInfo {
  const e = err instanceof Error ? err : new Error(String(err));
  const info: ErrorInfo = { name: e.name, message: e.message };
  if (e instanceof ConfigError) info.field = e.field;
  if (e instanceof NonFiniteLossError) {
    info.step = e.step;
    info.lastGoodCheckpoint = e.lastGoodCheckpoint;
  }
  return info;
}
