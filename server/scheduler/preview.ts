// What the scheduler would do with a job not yet submitted (the launcher's "starts now on worker
// local" or "waits: team quota of 2 devices reached; 3 jobs ahead"): the round's own read of the
// cluster (loadRound) and the planner (plan) with the job added as the newest in the queue. Reads
// only; nothing is placed, reserved or preempted.
import { type Db, rawQuery } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import { loadRound } from './loop';
import { plan } from './plan';
import type { DeviceKind, PlanQueuedJob } from './types';

/** The job's id in the plan: no real job's id has spaces. */
const THIS_JOB = 'this job';

export interface PreviewRequest {
  teamId: string;
  ownerId: string;
  priority: number;
  deviceCount: number;
  deviceKind: DeviceKind | null;
  memoryBytes: number;
  timeLimitSeconds: number;
}

export interface PlacementPreview {
  /** The planner would place it in the round after submitting. */
  startsNow: boolean;
  /** Where it would start, or the worker it would wait for (devices reserved or being freed for it). */
  worker?: { id: string; name: string };
  /** The planner's words, as the job would show them ("starts now on worker local (WASM device 0)", "waits: …; 3 jobs ahead"). */
  reason: string;
  /** Queued jobs the planner considers before this one that would still wait (it would wait behind them). */
  ahead: number;
  /** When it is expected to start if it waits, from declared time limits (ISO time); null when unknown or starting now. */
  estimatedStartAt: string | null;
}

export async function previewPlacement(db: Db, job: PreviewRequest, now = new Date()): Promise<PlacementPreview> {
  const read = await loadRound(db, now);
  const queued: PlanQueuedJob = { id: THIS_JOB, ...job, queuedAt: now.getTime(), notBefore: null };
  const decisions = plan({ ...read.input, queued: [...read.input.queued, queued] });
  const names = await workerNames(db, read.input.workers.map((w) => w.id));
  // Reasons name workers by id; people know them by name.
  const named = (text: string) => text.replace(/worker (\S+?)(?=[ ,;)]|$)/g, (all, id: string) => (names.has(id) ? `worker ${names.get(id)}` : all));
  const worker = (id: string) => ({ id, name: names.get(id) ?? id });

  const placed = decisions.placements.find((p) => p.jobId === THIS_JOB);
  if (placed) {
    return { startsNow: true, worker: worker(placed.workerId), reason: named(placed.reason.replace(/^placed on/, 'starts now on')), ahead: 0, estimatedStartAt: null };
  }
  const index = decisions.waiting.findIndex((w) => w.jobId === THIS_JOB);
  const waiting = decisions.waiting[index];
  // Jobs waiting before it in the plan's order that compete for its devices or quota: its team's,
  // and any team's when there is a shared pool (every team's jobs may use it).
  const shared = read.input.workers.some((w) => w.teamId === null && w.state === 'ONLINE');
  const teamOf = new Map(read.input.queued.map((q) => [q.id, q.teamId]));
  const competing = decisions.waiting.slice(0, index).filter((w) => shared || teamOf.get(w.jobId) === job.teamId).length;
  const ahead = competing + (read.beyondWindow ? await beyondWindowAhead(db, job, read.input.queued.map((q) => q.id), shared) : 0);
  const reason = `${named(waiting.reason.replace(/^waiting:/, 'waits:'))}${ahead > 0 ? `; ${ahead} ${ahead === 1 ? 'job' : 'jobs'} ahead` : ''}`;
  return {
    startsNow: false,
    ...(waiting.target ? { worker: worker(waiting.target.workerId) } : {}),
    reason,
    ahead,
    estimatedStartAt: waiting.estimatedStartAt === null ? null : new Date(waiting.estimatedStartAt).toISOString(),
  };
}

async function workerNames(db: Db, ids: string[]): Promise<Map<string, string>> {
  const rows = await db.worker.findMany({ where: { id: { in: ids } }, select: { id: true, name: true } });
  return new Map(rows.map((w) => [w.id, w.name]));
}

/**
 * The round reads only the queue window (queue-window.ts); jobs past it are older jobs of the same
 * kind as one in it, so those of at least this job's priority are ahead of it.
 */
async function beyondWindowAhead(db: Db, job: PreviewRequest, inWindow: string[], shared: boolean): Promise<number> {
  const [row] = await rawQuery<{ n: number }>(db, Prisma.sql`
    SELECT count(*)::int AS n FROM "Job"
     WHERE state = 'QUEUED' AND priority >= ${job.priority} AND id <> ALL(${inWindow}::text[]) AND (${shared} OR "teamId" = ${job.teamId})`);
  return row.n;
}
