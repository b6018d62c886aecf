import type { Db } from '../db/client';
import type { RealtimeHub } from '../realtime/gateway';
import { buildAssignment } from '../workers/api';
import type { SchedulerEvents } from './loop';

/** The scheduler's decisions, pushed live: assignments and stop signals to workers, changes to browsers. */
export function schedulerEvents(db: Db, realtime: RealtimeHub): SchedulerEvents {
  return {
    assigned(workerId, attemptId) {
      void buildAssignment(db, attemptId).then((a) => a && realtime.pushAssignment(workerId, a)).catch(() => {});
    },
    signal: (workerId, payload) => realtime.signalWorker(workerId, payload),
    jobChanged: (teamId, jobId) => realtime.jobChanged(teamId, jobId),
  };
}
