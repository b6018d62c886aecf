/**
 * An SFT job: supervised training on a dataset version's rows as demonstrations. A row is either
 *
 *   { "prompt": "...", "completion": "...", "system"?: "..." }     (loss on the completion), or
 *   { "messages": [{ "role": "system"|"user"|"assistant"|"tool", "content": "..." }, ...] }
 *                                                                  (loss on every assistant turn),
 *
 * laid out in the engine's chat format (BOS, role separator, content, EOS), the same the rollout
 * runtime prompts with. Batches are a function of (seed, step) — epoch-wise shuffles — so a resumed
 * job sees the same batches the uninterrupted one would have.
 */
import { type Sequence } from '../engine/batch';
import { Rng } from '../engine/rng';
import { SFTTrainer } from '../engine/sft';
import { ROLES, type Role, type Tokenizer } from '../engine/tokenizer';
import { type Json } from '../../sdk/environment/schema';
import { stepNumber } from '../../sdk/live';
import { resolveJobTraining, sftJobConfigSchema } from '../../sdk/job-config';
import { pickOptions, sftOptionsSchema } from '../../sdk/training-config';
import { type Assignment } from '../../sdk/worker-protocol';
import { CheckpointStore } from './checkpoints';
import { Emitter } from './emit';
import { type JobControl, type JobSink } from './sink';
import { failed, finishTraining, stopBeforeStep } from './lifecycle';
import { blobKey, loadPolicy } from './load-policy';
import { trainerMetrics } from './step-metrics';
import { parseJsonl } from './train';
import { JobFailure, type JobResult, type RunOptions } from './types';

export async function runSft(assignment: Assignment, sink: JobSink, control: JobControl, options: RunOptions = {}): Promise<JobResult> {
  const emit = new Emitter(sink);
  const store = new CheckpointStore(sink);
  const disposables: { dispose(): void }[] = [];
  try {
    const config = sftJobConfigSchema.parse(assignment.config);
    const resolved = resolveJobTraining('SFT', config);
    if (!resolved.ok || resolved.config.algorithm !== 'sft') throw new JobFailure(`invalid training config: ${resolved.ok ? 'not sft' : resolved.problems.join('; ')}`);
    const training = resolved.config;
    const rows = parseJsonl(new TextDecoder().decode(await sink.fetchBlob(blobKey(assignment, config.datasetVersionId, 'dataset version'))));

    const policy = await loadPolicy(assignment, store, emit, { baseCheckpointId: config.baseCheckpointId, model: training.model, valueHead: false, seed: training.seed });
    const { model, tokenizer: tok, startStep } = policy;
    disposables.push(model);
    const trainer = new SFTTrainer(model, pickOptions(sftOptionsSchema, training));
    disposables.push(trainer);
    if (policy.trainerState) {
      if (policy.trainerState.algorithm !== 'sft') throw new JobFailure(`checkpoint was trained with ${policy.trainerState.algorithm}, this job is SFT`);
      trainer.importState(policy.trainerState);
    }

    const sequences: Sequence[] = [];
    let tooLong = 0;
    rows.forEach((row, i) => {
      const seq = demonstration(tok, row, i);
      if (seq.tokens.length > model.config.contextLength) tooLong++;
      else sequences.push(seq);
    });
    if (tooLong > 0) emit.log('warn', `${tooLong} of ${rows.length} rows are longer than the context (${model.config.contextLength} tokens) and are left out`);
    if (sequences.length === 0) throw new JobFailure('no row fits the model context');
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
      const metrics = trainer.step(batch);
      const number = stepNumber(step);
      await emit.metrics(number, { ...trainerMetrics(metrics), 'data/epoch': Math.floor((step * training.batchSize) / sequences.length) });
      if (number === 1 || number % 10 === 0 || number === training.steps) emit.log('info', `step ${number} of ${training.steps}: loss ${metrics.loss.toFixed(4)}`);
      await emit.flushLogs();
      if (number % training.checkpointEvery === 0 && number < training.steps) await checkpoint(number);
      options.onStep?.(number);
    }
    return await finishTraining(emit, store, checkpoint, model, tok, training.steps);
  } catch (e) {
    return await failed(emit, e);
  } finally {
    for (const d of disposables.reverse()) d.dispose();
    store.dispose();
  }
}

/** The rows of step `step`: consecutive slices of per-epoch shuffles of 0..n-1. */
function batchIndexes(n: number, batchSize: number, seed: number, step: number): number[] {
  const out: number[] = [];
  let position = step * batchSize;
  let epoch = -1;
  let order: number[] = [];
  while (out.length < batchSize) {
    const e = Math.floor(position / n);
    if (e !== epoch) {
      epoch = e;
      order = new Rng(seed * 1_000_003 + e).shuffle(Array.from({ length: n }, (_, i) => i));
    }
    out.push(order[position % n]);
    position++;
  }
  return out;
}

/** One demonstration row as a training sequence (see the file comment for the two shapes). */
function demonstration(tok: Tokenizer, row: Json, index: number): Sequence {
  const where = `dataset row ${index + 1}`;
  if (!row || typeof row !== 'object' || Array.isArray(row)) throw new JobFailure(`${where}: not an object`);
  const tokens = [tok.bos];
  const lossMask = [0];
  const add = (ids: number[], trainable: boolean) => {
    tokens.push(...ids);
    lossMask.push(...ids.map(() => (trainable ? 1 : 0)));
  };
  if (Array.isArray(row.messages)) {
    for (const [i, m] of row.messages.entries()) {
      if (!m || typeof m !== 'object' || Array.isArray(m) || typeof m.content !== 'string' || !ROLES.includes(m.role as Role)) {
        throw new JobFailure(`${where}: messages[${i}] needs a role (${ROLES.join(', ')}) and a string content`);
      }
      const role = m.role as Role;
      add([tok.roleToken(role)], false);
      add([...tok.encode(m.content), tok.eos], role === 'assistant');
    }
  } else if (typeof row.prompt === 'string' && typeof row.completion === 'string') {
    if (typeof row.system === 'string' && row.system !== '') add([tok.roleToken('system'), ...tok.encode(row.system), tok.eos], false);
    add([tok.roleToken('user'), ...tok.encode(row.prompt), tok.eos, tok.roleToken('assistant')], false);
    add([...tok.encode(row.completion), tok.eos], true);
  } else {
    throw new JobFailure(`${where}: needs "prompt" and "completion" strings, or "messages"`);
  }
  if (!lossMask.includes(1)) throw new JobFailure(`${where}: nothing to learn (no assistant text)`);
  return { tokens, lossMask };
}
