/**
 * What every kind of job does the same way around its own work: how a failure is worded and
 * reported, how a cancel or preemption stops a step loop, and how a training run ends.
 */
import type { LanguageModel } from '../engine/model';
import type { Tokenizer } from '../engine/tokenizer';
import type { CheckpointStore } from './checkpoints';
import type { Emitter } from './emit';
import type { JobControl } from './sink';
import { JobFailure, type JobResult } from './types';
import { stepNumber } from '../../sdk/live';
import { DeviceFaultError } from '../engine/webgpu';

/** The reason a thrown error gives the user: a JobFailure's or a config issue's own words. */
export function failureReason(e: unknown): string {
  if (e instanceof JobFailure) return e.message;
  if (e && typeof e === 'object' && 'issues' in e && Array.isArray((e as { issues: unknown[] }).issues)) {
    const issues = (e as { issues: { path: (string | number)[]; message: string }[] }).issues;
    return `invalid config: ${issues.map((i) => `${i.path.join('.') || '(config)'}: ${i.message}`).join('; ')}`;
  }
  const err = e instanceof Error ? e : new Error(String(e));
  return `${err.name}: ${err.message}`;
}

/** A job that threw: the reason goes to its log (best effort: the server may be what failed) and to its result. */
export async function failed(emit: Emitter, e: unknown): Promise<JobResult> {
  const reason = failureReason(e);
  emit.log('error', reason);
  await emit.flushLogs().catch(() => undefined);
  // A lost GPU is the machine's fault: requeued. Out of memory is the job's size: it fails.
  if (e instanceof DeviceFaultError && e.requeue) return { outcome: 'lost', reason };
  return { outcome: 'failed', reason };
}

/** Lets IPC messages (preempt, cancel) in between steps: a step itself may never yield to the event loop. */
export function yieldToEvents(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Called before each step: a cancel stops at once, a preemption checkpoints this step first so the
 * next attempt resumes here. Null: carry on. `what` names the step in the reason ("warm-start step").
 */
export async function stopBeforeStep(emit: Emitter, control: JobControl, step: number, checkpoint: (step: number) => Promise<void>, what = 'step'): Promise<JobResult | null> {
  await yieldToEvents();
  let result: JobResult | null = null;
  // `step` is the index of the step about to run, so also the count of steps done (sdk/live.ts,
  // stepNumber); a warm start's steps are its own.
  const named = what === 'step' ? `step ${stepNumber(step)}` : `${what} ${step}`;
  if (control.cancelled) result = { outcome: 'cancelled', reason: `cancelled before ${named}` };
  else if (control.preempted) {
    await checkpoint(step);
    result = { outcome: 'preempted', reason: `preempted before ${named}; checkpointed` };
  }
  if (result) {
    emit.log('info', result.reason);
    await emit.flushLogs();
  }
  return result;
}

/**
 * A training run's end: its last training checkpoint, and the sampler checkpoint the playground
 * opens, one per policy (`agent` names each where the learners learn independently). Uploaded last
 * to first, so that the first policy's is the newest: the one "the run's checkpoint" means
 * wherever one is picked (newest first: a base saved from the run, the runs list).
 */
export async function finishTraining(
  emit: Emitter, store: CheckpointStore, checkpoint: (step: number) => Promise<void>, policies: readonly { model: LanguageModel; agent?: string }[], tok: Tokenizer, steps: number,
): Promise<JobResult> {
  await checkpoint(steps);
  const ids: string[] = [];
  for (const p of [...policies].reverse()) {
    const sampler = await store.uploadSampler(p.model, tok, steps, p.agent);
    ids.unshift(p.agent === undefined ? sampler.checkpointId : `${p.agent} ${sampler.checkpointId}`);
  }
  emit.log('info', `finished ${steps} steps; sampler checkpoint${ids.length > 1 ? 's' : ''} ${ids.join(', ')}`);
  await emit.flushLogs();
  return { outcome: 'succeeded', reason: '' };
}
