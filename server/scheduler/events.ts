import type { RealtimeHub } from '../realtime/gateway';
import { coalesceJobChanges } from './job-changes';
import type { SchedulerEvents } from './loop';

/** The scheduler's decisions, pushed live: assignments and stop signals to workers, changes to browsers. */
export function schedulerEvents(realtime: RealtimeHub): SchedulerEvents {
  return {
    // The placement statement returned the assignment: it goes out as it is.
    assigned: (workerId, assignment) => realtime.pushAssignment(workerId, assignment),
    signal: (workerId, payload) => realtime.signalWorker(workerId, payload),
    jobChanged: coalesceJobChanges(realtime.jobsChanged),
  };
}
