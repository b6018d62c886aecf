import type { RunSummary } from '../../../server/runs/list-runs';
import { formatDateTime } from '../format';

export type JobState = RunSummary['state'];

export const JOB_STATES: JobState[] = ['QUEUED', 'ASSIGNED', 'RUNNING', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED'];

/** States in which a job may still change by itself: lists refetch while one is shown. */
const ACTIVE_STATES: JobState[] = ['QUEUED', 'ASSIGNED', 'RUNNING', 'PREEMPTED'];

export const isActive = (state: string): boolean => (ACTIVE_STATES as string[]).includes(state);

/** How often a list or run page asks again while something in it is active (no live socket on these pages yet). */
export const LIVE_REFETCH_MS = 3_000;

function sentence(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * The scheduler's reason in words for a reader ("Team quota of 2 devices reached (…)"), from
 * the planner's text (server/scheduler/reasons.ts: "waiting: …", "retrying after: …").
 */
function waitingWords(reason: string | null): string {
  if (!reason) return 'Waiting for the scheduler’s next round';
  return sentence(readableTimes(reason.replace(/^waiting:\s*/, '')));
}

/** The planner writes times as ISO 8601 (the CLI's and logs' form); a page shows them in the reader's time. */
export function readableTimes(text: string): string {
  return text.replace(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\b/g, (iso) => formatDateTime(iso));
}

/** One line on where a job stands, for the run header and the lists' tooltips. */
export function stateLine(run: Pick<RunSummary, 'state' | 'waitingReason' | 'failureReason' | 'worker' | 'cancelRequested'>): string {
  switch (run.state) {
    case 'QUEUED':
      return waitingWords(run.waitingReason);
    case 'PREEMPTED':
      return 'Preempted: it checkpoints, then waits in the queue to resume';
    case 'ASSIGNED':
      return run.worker ? `Starting on worker ${run.worker.name}` : 'Starting on a worker';
    case 'RUNNING':
      return `${run.cancelRequested ? 'Stopping (cancel requested) on' : 'Running on'} worker ${run.worker?.name ?? 'unknown'}`;
    case 'SUCCEEDED':
      return 'Finished';
    case 'FAILED':
      return run.failureReason ? sentence(run.failureReason) : 'Failed (no reason recorded)';
    case 'CANCELLED':
      return 'Cancelled';
  }
}

/** Seconds a job ran (or has run so far): from its start to its end, or now. */
export function runSeconds(run: Pick<RunSummary, 'startedAt' | 'finishedAt'>, now = Date.now()): number | null {
  if (!run.startedAt) return null;
  const end = run.finishedAt ? new Date(run.finishedAt).getTime() : now;
  return Math.max(0, Math.round((end - new Date(run.startedAt).getTime()) / 1000));
}

/** "GRPO", "SFT", "Eval": what kind of run, in the words the launcher uses. */
export function runKindLabel(run: Pick<RunSummary, 'kind' | 'algorithm'>): string {
  if (run.algorithm) return run.algorithm.toUpperCase();
  return run.kind === 'EVAL' ? 'Eval' : run.kind === 'INFERENCE' ? 'Inference' : run.kind.charAt(0) + run.kind.slice(1).toLowerCase();
}
