/**
 * Checkpoints as the job runner uses them: written by the engine to a temporary file, uploaded as
 * bytes through the sink, and fetched back by storage key to resume or to start from a base.
 * A training checkpoint's note records the runner's step (its count of completed steps), which
 * can differ from the trainer's own step count (a step whose batch was empty trains nothing).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BaseModelLoader, loadCheckpoint, saveSamplerCheckpoint, saveTrainingCheckpoint, type LoadedCheckpoint } from '../engine/checkpoint';
import { type LanguageModel } from '../engine/model';
import { type Tokenizer } from '../engine/tokenizer';
import { type TrainerCore, type TrainerState } from '../engine/trainer-core';
import { type TrainingConfig } from '../../sdk/training-config';
import { type JobSink, type UploadedCheckpoint } from './sink';

export interface RunnerNote {
  /** Steps the runner had completed when the checkpoint was written. */
  step: number;
  jobId: string;
  attempt: number;
  /** The run's resolved training config (sdk/training-config.ts), as nanoGPT saves its config in every checkpoint. */
  training?: TrainingConfig;
  /**
   * Written while the warm start (training.warmStart) was under way: its SFT steps completed, with
   * the SFT trainer's state in the checkpoint (and `step` 0). Absent once the warm start is done.
   */
  warmStartStep?: number;
  /** The learner whose policy it is, in a run whose learners learn independently (training.independentLearners). */
  agent?: string;
}

interface Savable {
  exportState(): TrainerState;
  core: Pick<TrainerCore, 'lastCheckpoint' | 'momentTensors'>;
}

export class CheckpointStore {
  readonly dir: string;
  private counter = 0;

  /** `loadBase`: the job's imported model, for checkpoints of one (model-cache.ts). */
  constructor(
    private readonly sink: JobSink,
    private readonly loadBase?: BaseModelLoader,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'whetstone-job-'));
  }

  /** A training checkpoint; the note's `agent`, if any, is also the checkpoint's (one per learner). */
  async uploadTraining(model: LanguageModel, tok: Tokenizer, trainer: Savable, note: RunnerNote): Promise<UploadedCheckpoint> {
    const file = join(this.dir, `training-${note.step}-${this.counter++}.safetensors`);
    await saveTrainingCheckpoint(file, model, tok, trainer, null, { note: JSON.stringify({ runner: note }) });
    return this.upload('TRAINING', note.step, file, note.agent);
  }

  async uploadSampler(model: LanguageModel, tok: Tokenizer, step: number, agent?: string): Promise<UploadedCheckpoint> {
    const file = join(this.dir, `sampler-${step}-${this.counter++}.safetensors`);
    await saveSamplerCheckpoint(file, model, tok);
    return this.upload('SAMPLER', step, file, agent);
  }

  /** Fetches a checkpoint by storage key and loads it (model, tokenizer, trainer state, note). */
  async load(storageKey: string): Promise<LoadedCheckpoint & { note: RunnerNote | null }> {
    const bytes = await this.sink.fetchBlob(storageKey);
    const file = join(this.dir, `fetched-${this.counter++}.safetensors`);
    writeFileSync(file, bytes);
    try {
      const loaded = await loadCheckpoint(file, { loadBase: this.loadBase });
      return { ...loaded, note: parseNote(loaded.metadata['whetstone.note']) };
    } finally {
      rmSync(file, { force: true });
    }
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async upload(kind: 'TRAINING' | 'SAMPLER', step: number, file: string, agent: string | undefined): Promise<UploadedCheckpoint> {
    try {
      return await this.sink.uploadCheckpoint(kind, step, readFileSync(file), agent);
    } finally {
      rmSync(file, { force: true });
    }
  }
}

function parseNote(raw: string | undefined): RunnerNote | null {
  if (!raw) return null;
  try {
    const parsed = JSON.parse(raw) as { runner?: RunnerNote };
    return parsed.runner && Number.isInteger(parsed.runner.step) ? parsed.runner : null;
  } catch {
    return null;
  }
}
