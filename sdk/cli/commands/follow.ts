import type { Connection } from '../client';
import { EXIT, type ExitCode } from '../errors';
import { bytes, duration, metricValue, table } from '../format';
import { LiveView, type LiveViewOptions } from '../live-view';
import { watchJob, type JobDetail } from '../watch';
import { call, type CommandContext } from './context';

// Watching a submitted job to its end and reporting how it ended: shared by run --watch and eval.

export interface JobOutcome {
  job: JobDetail;
  metrics: Record<string, number>;
  lastStep: number;
  /** `agent`: whose policy, in a run of independent learners; "" for a run's one policy. */
  checkpoints: Array<{ id: string; kind: string; step: number; agent: string; bytes: bigint; createdAt: Date }>;
  exitCode: ExitCode;
}

export async function followToEnd(ctx: CommandContext, conn: Connection, jobId: string, view: LiveViewOptions): Promise<JobOutcome> {
  // With --json the view only keeps the last metrics; stdout carries the one document.
  const silent = { write: () => true };
  const live = new LiveView(ctx.out.json ? { ...ctx.io, stdout: silent, isTTY: false } : ctx.io, view);
  let job: JobDetail;
  try {
    job = await watchJob({
      conn,
      jobId,
      signal: ctx.io.signal,
      onMetrics: (items) => live.metrics(items),
      onLogs: (items) => live.logs(items),
      onJob: (j) => live.job(j),
      onConnection: (up) => live.connection(up),
    });
  } finally {
    live.finish();
  }
  const checkpoints = await call(conn, () => conn.api.runs.checkpoints.query({ teamId: conn.teamId, jobId }));
  return {
    job,
    metrics: live.lastMetrics,
    lastStep: live.lastStep,
    checkpoints: checkpoints.map((c) => ({ id: c.id, kind: c.kind, step: c.step, agent: c.agent, bytes: c.bytes, createdAt: c.createdAt })),
    exitCode: job.state === 'SUCCEEDED' ? EXIT.OK : EXIT.JOB_FAILED,
  };
}

/** The end of a job for people: its state and why, its last metrics, its checkpoints. */
export function printOutcome(ctx: CommandContext, outcome: JobOutcome, metricKeys: string[]): void {
  const { job } = outcome;
  const took = job.startedAt && job.finishedAt ? ` in ${duration(job.finishedAt.getTime() - job.startedAt.getTime())}` : '';
  const reason = job.state === 'FAILED' && job.failureReason ? `: ${job.failureReason}` : '';
  ctx.out.line(`job ${job.id} ${job.state}${took}${reason}`);
  const shown = metricKeys.filter((k) => k in outcome.metrics);
  if (shown.length > 0) ctx.out.line(`  ${shown.map((k) => `${k} ${metricValue(outcome.metrics[k])}`).join('  ')}${outcome.lastStep > 0 ? `  (step ${outcome.lastStep})` : ''}`);
  if (outcome.checkpoints.length > 0) {
    ctx.out.line('checkpoints:');
    // An AGENT column only for a run of independent learners (a checkpoint per learner).
    const agents = outcome.checkpoints.some((c) => c.agent !== '');
    const header = agents ? ['ID', 'KIND', 'STEP', 'AGENT', 'SIZE'] : ['ID', 'KIND', 'STEP', 'SIZE'];
    const rows = outcome.checkpoints.map((c) => [c.id, c.kind.toLowerCase(), String(c.step), ...(agents ? [c.agent || '-'] : []), bytes(c.bytes)]);
    ctx.out.line(table(header, rows).replace(/^/gm, '  '));
  } else if (job.kind !== 'EVAL') {
    ctx.out.line('no checkpoints');
  }
}

export function outcomeJson(outcome: JobOutcome) {
  const { job } = outcome;
  return {
    state: job.state,
    failureReason: job.failureReason,
    attempts: job.attempts,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
    metrics: outcome.metrics,
    checkpoints: outcome.checkpoints,
  };
}
