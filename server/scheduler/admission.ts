// Admission: the check at submit time (server/jobs/submit.handler.ts) that keeps jobs the team's
// quota could never run out of the queue. The planner (plan.ts) applies the same quota to the
// jobs already queued, so both read DEFAULT_QUOTA from here.
import type { PlanTeamQuota } from './types';

/** The schema's TeamQuota defaults, for teams without a row. */
export const DEFAULT_QUOTA: Omit<PlanTeamQuota, 'teamId'> = {
  maxConcurrentDevices: 4,
  maxQueuedJobs: 100,
  maxPriority: 100,
};

/** The highest priority anyone may ask for (admins; members are held to maxPriority). */
export const PRIORITY_CAP = 1000;

export interface AdmitInput {
  deviceCount: number;
  priority: number;
  /** The team's jobs in state QUEUED now. */
  queuedJobs: number;
  quota: PlanTeamQuota | null;
  /** Admins and owners may go above maxPriority, up to PRIORITY_CAP. */
  mayExceedMaxPriority: boolean;
}

export type Admission = { ok: true } | { ok: false; reason: string };

/** Whether a job may be submitted: refused jobs never enter the queue. */
export function admitJob(input: AdmitInput): Admission {
  const quota = input.quota ?? DEFAULT_QUOTA;
  if (!Number.isInteger(input.deviceCount) || input.deviceCount < 1) {
    return { ok: false, reason: 'a job needs at least 1 device' };
  }
  if (input.deviceCount > quota.maxConcurrentDevices) {
    return {
      ok: false,
      reason: `needs ${input.deviceCount} devices, more than the team quota of ${quota.maxConcurrentDevices}`,
    };
  }
  const limit = input.mayExceedMaxPriority ? PRIORITY_CAP : Math.min(quota.maxPriority, PRIORITY_CAP);
  if (!Number.isInteger(input.priority) || input.priority > limit || input.priority < -PRIORITY_CAP) {
    return { ok: false, reason: `priority must be a whole number from ${-PRIORITY_CAP} to ${limit}` };
  }
  if (input.queuedJobs >= quota.maxQueuedJobs) {
    return {
      ok: false,
      reason: `team queue is full: ${input.queuedJobs} jobs queued (limit ${quota.maxQueuedJobs})`,
    };
  }
  return { ok: true };
}
