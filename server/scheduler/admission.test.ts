import { describe, expect, it } from 'vitest';
import { admitJob, DEFAULT_QUOTA } from './admission';
import type { PlanTeamQuota } from './types';

function quota(teamId: string, maxConcurrentDevices: number, over: Partial<PlanTeamQuota> = {}): PlanTeamQuota {
  return { teamId, maxConcurrentDevices, maxQueuedJobs: 100, maxPriority: 100, ...over };
}

describe('admitJob', () => {
  const base = { deviceCount: 1, priority: 0, queuedJobs: 0, quota: quota('t1', 4), mayExceedMaxPriority: false };

  it('admits a job within the limits, up to one below the queue limit', () => {
    expect(admitJob(base)).toEqual({ ok: true });
    expect(admitJob({ ...base, queuedJobs: 99 })).toEqual({ ok: true });
  });

  it('refuses a submit over the team maximum of queued jobs', () => {
    expect(admitJob({ ...base, queuedJobs: 100 })).toEqual({
      ok: false,
      reason: 'team queue is full: 100 jobs queued (limit 100)',
    });
    expect(admitJob({ ...base, queuedJobs: 2, quota: quota('t1', 4, { maxQueuedJobs: 2 }) }).ok).toBe(false);
  });

  it('refuses a job larger than the team may ever hold, and an empty one', () => {
    expect(admitJob({ ...base, deviceCount: 5 })).toEqual({
      ok: false,
      reason: 'needs 5 devices, more than the team quota of 4',
    });
    expect(admitJob({ ...base, deviceCount: 4 }).ok).toBe(true);
    expect(admitJob({ ...base, deviceCount: 0 }).ok).toBe(false);
    expect(admitJob({ ...base, deviceCount: 1.5 }).ok).toBe(false);
  });

  it('holds members to maxPriority and admins to 1000', () => {
    expect(admitJob({ ...base, priority: 100 }).ok).toBe(true);
    expect(admitJob({ ...base, priority: 101 })).toEqual({
      ok: false,
      reason: 'priority must be a whole number from -1000 to 100',
    });
    expect(admitJob({ ...base, priority: 1000, mayExceedMaxPriority: true }).ok).toBe(true);
    expect(admitJob({ ...base, priority: 1001, mayExceedMaxPriority: true }).ok).toBe(false);
  });

  it('uses the schema defaults when the team has no quota row', () => {
    expect(admitJob({ ...base, quota: null, deviceCount: DEFAULT_QUOTA.maxConcurrentDevices }).ok).toBe(true);
    expect(admitJob({ ...base, quota: null, deviceCount: 5 }).ok).toBe(false);
    expect(admitJob({ ...base, quota: null, queuedJobs: DEFAULT_QUOTA.maxQueuedJobs }).ok).toBe(false);
  });

  it('refuses a runaway sweep once the team queue is full, saying so', () => {
    const quota = { teamId: 't', maxConcurrentDevices: 8, maxQueuedJobs: 100_000, maxPriority: 100 };
    expect(admitJob({ ...base, quota, queuedJobs: 99_999 }).ok).toBe(true);
    for (const queuedJobs of [100_000, 1_000_000]) {
      expect(admitJob({ ...base, quota, queuedJobs })).toEqual({ ok: false, reason: `team queue is full: ${queuedJobs} jobs queued (limit 100000)` });
    }
  });
});
