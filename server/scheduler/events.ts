import type { Db } from '../db/client';
import type { RealtimeHub } from '../realtime/gateway';
import type { Assignment } from '../../sdk/worker-protocol';
import { buildAssignments } from '../workers/api';
import { coalesceJobChanges } from './job-changes';
import type { SchedulerEvents } from './loop';

/** The scheduler's decisions, pushed live: assignments and stop signals to workers, changes to browsers. */
export function schedulerEvents(db: Db, realtime: RealtimeHub): SchedulerEvents {
  // A round places many jobs at once: their assignments are built together, in one query.
  let pending: Array<{ workerId: string; attemptId: string }> = [];
  const push = async (batch: typeof pending) => {
    const workerOf = new Map(batch.map((p) => [p.attemptId, p.workerId]));
    for (const a of await buildAssignments(db, batch.map((p) => p.attemptId))) pushAssignment(realtime, workerOf.get(a.attemptId)!, a);
  };
  return {
    assigned(workerId, attemptId) {
      if (pending.length === 0) {
        queueMicrotask(() => {
          const batch = pending;
          pending = [];
          push(batch).catch(() => {});
        });
      }
      pending.push({ workerId, attemptId });
    },
    signal: (workerId, payload) => realtime.signalWorker(workerId, payload),
    jobChanged: coalesceJobChanges(realtime.jobChanged),
  };
}

/**
 * A worker connected to this process gets its assignment straight from it. Only one connected to
 * another replica needs the adapter, whose every emit is first a NOTIFY through a small pool:
 * under load those queued up, and assignments waited behind them. (The room is the gateway's,
 * `worker:<id>`; polling by heartbeat remains the fallback either way.)
 */
function pushAssignment(realtime: RealtimeHub, workerId: string, assignment: Assignment): void {
  const workers = realtime.io.of('/workers');
  const room = `worker:${workerId}`;
  if (workers.adapter.rooms.has(room)) workers.local.to(room).emit('assignment', assignment);
  else realtime.pushAssignment(workerId, assignment);
}
