/**
 * An SFT job: supervised training on a dataset version's rows as demonstrations (their shapes and
 * the batches of each step: sft-batches.ts).
 */
import { SFTTrainer } from '../engine/sft';
import { stepNumber } from '../../sdk/live';
import { resolveJobTraining, sftJobConfigSchema } from '../../sdk/job-config';
import { pickOptions, sftOptionsSchema } from '../../sdk/training-config';
import { type Assignment } from '../../sdk/worker-protocol';
import { CheckpointStore } from './checkpoints';
import { baseModelLoader } from './model-cache';
import { Emitter } from './emit';
import { type JobControl, type JobSink } from './sink';
import { failed, finishTraining, stopBeforeStep } from './lifecycle';
import { loadPolicy } from './load-policy';
import { batchIndexes, datasetDemonstrations } from './sft-batches';
import { trainerMetrics } from './step-metrics';
import { fetchRows } from './dataset-rows';
import { JobFailure, type JobResult, type RunOptions } from './types';

export async function runSft(assignment: Assignment, sink: JobSink, control: JobControl, options: RunOptions = {}): Promise<JobResult> {
  const emit = new Emitter(sink);
  const store = new CheckpointStore(sink, baseModelLoader(assignment, sink));
  const disposables: { dispose(): void }[] = [];
  try {
    const config = sftJobConfigSchema.parse(assignment.config);
    const resolved = resolveJobTraining('SFT', config);
    if (!resolved.ok || resolved.config.algorithm !== 'sft') throw new JobFailure(`invalid training config: ${resolved.ok ? 'not sft' : resolved.problems.join('; ')}`);
    const training = resolved.config;
    const rows = await fetchRows(assignment, sink, config.datasetVersionId);

    const policy = await loadPolicy(assignment, store, emit, { baseCheckpointId: config.baseCheckpointId, model: training.model, valueHead: false, seed: training.seed, sink, lora: training.lora });
    const { model, tokenizer: tok, startStep } = policy;
    disposables.push(model);
    const trainer = new SFTTrainer(model, pickOptions(sftOptionsSchema, training));
    disposables.push(trainer);
    if (policy.trainerState) {
      if (policy.trainerState.algorithm !== 'sft') throw new JobFailure(`checkpoint was trained with ${policy.trainerState.algorithm}, this job is SFT`);
      trainer.importState(policy.trainerState);
    }

    const sequences = datasetDemonstrations(tok, rows, model.contextLength, emit);
    emit.log('info', `SFT on ${sequences.length} demonstrations, ${training.steps} steps of ${training.batchSize}`);

    const note = (step: number) => ({ step, jobId: assignment.jobId, attempt: assignment.attempt, training });
    let lastCheckpoint = policy.source === 'resume' ? startStep : -1;
    const checkpoint = async (step: number) => {
      if (lastCheckpoint === step) return;
      const up = await store.uploadTraining(model, tok, trainer, note(step));
      lastCheckpoint = step;
      emit.log('info', `training checkpoint after step ${step}: ${up.checkpointId}`);
    };

    for (let step = startStep; step < training.steps; step++) {
      const interrupted = await stopBeforeStep(emit, control, step, checkpoint);
      if (interrupted) return interrupted;
      const batch = batchIndexes(sequences.length, training.batchSize, training.seed, step).map((i) => sequences[i]);
      const metrics = await trainer.stepAsync(batch);
      const number = stepNumber(step);
      await emit.metrics(number, { ...trainerMetrics(metrics), 'data/epoch': Math.floor((step * training.batchSize) / sequences.length) });
      if (number === 1 || number % 10 === 0 || number === training.steps) emit.log('info', `step ${number} of ${training.steps}: loss ${metrics.loss.toFixed(4)}`);
      await emit.flushLogs();
      if (number % training.checkpointEvery === 0 && number < training.steps) await checkpoint(number);
      options.onStep?.(number);
    }
    return await finishTraining(emit, store, checkpoint, [{ model }], tok, training.steps);
  } catch (e) {
    return await failed(emit, e);
  } finally {
    for (const d of disposables.reverse()) d.dispose();
    store.dispose();
  }
}
