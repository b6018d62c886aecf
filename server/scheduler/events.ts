import type { Db } from '../db/client';
import type { RealtimeHub } from '../realtime/gateway';
import { buildAssignments } from '../workers/api';
import { coalesceJobChanges } from './job-changes';
import type { SchedulerEvents } from './loop';

/** The scheduler's decisions, pushed live: assignments and stop signals to workers, changes to browsers. */
export function schedulerEvents(db: Db, realtime: RealtimeHub): SchedulerEvents {
  // A round places many jobs at once: their assignments are built together, in a few queries.
  let pending: Array<{ workerId: string; attemptId: string }> = [];
  const push = async (batch: typeof pending) => {
    const workerOf = new Map(batch.map((p) => [p.attemptId, p.workerId]));
    for (const a of await buildAssignments(db, batch.map((p) => p.attemptId))) realtime.pushAssignment(workerOf.get(a.attemptId)!, a);
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
