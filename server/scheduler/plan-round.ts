// A round's plan on as few queued jobs as decide it. The queue window (queue-window.ts) keeps
// devices + 1 jobs of each kind, which with many users and sweeps is the whole queue; yet once a
// job of a kind waits, every later job of its kind waits as it does and changes nothing (plan.ts,
// rule 5). So a round groups the queue by kind and the planner (planKinds) takes the next job of
// a kind only while the previous one started or preempted: its plan is the plan of the whole
// queue for the jobs it read (the property tests in plan-round.test.ts check it), and a round
// costs what it can place or preempt and one job per kind, not the queue's length.
import { type KindsPlan, planKinds } from './plan';
import { kindOf } from './queue-window';
import type { PlanInput, PlanQueuedJob } from './types';

/** The queue grouped by kind (queue-window.ts), each kind oldest first, then by id. */
export function byKind(input: Pick<PlanInput, 'queued' | 'now'>): PlanQueuedJob[][] {
  const kinds = new Map<string, PlanQueuedJob[]>();
  for (const job of input.queued) {
    const kind = kindOf(job, input.now);
    const jobs = kinds.get(kind);
    if (jobs) jobs.push(job);
    else kinds.set(kind, [job]);
  }
  const groups = [...kinds.values()];
  for (const jobs of groups) sortOldestFirst(jobs);
  return groups;
}

/** The round's plan of the whole queue, for the jobs that decide it (`read`). */
export function planRound(input: PlanInput): KindsPlan {
  const { queued, ...rest } = input;
  return planKinds(rest, byKind({ queued, now: input.now }));
}

const oldestFirst = (a: PlanQueuedJob, b: PlanQueuedJob): number => a.queuedAt - b.queuedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** A kind's jobs oldest first, then by id; most arrive in that order already. */
export function sortOldestFirst(jobs: PlanQueuedJob[]): void {
  for (let i = 1; i < jobs.length; i += 1) {
    if (oldestFirst(jobs[i - 1], jobs[i]) > 0) {
      jobs.sort(oldestFirst);
      return;
    }
  }
}
