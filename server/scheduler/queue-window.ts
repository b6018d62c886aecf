// The part of the queue a round needs to read. A pool draining a long queue plans hundreds of
// rounds a minute, and reading and planning the whole queue each time made a round's cost grow
// with the queue, not with what it can place.
//
// Jobs of one kind (same team, owner, priority, request, time limit, and in backoff or not) are
// interchangeable to the planner except for their order, which is oldest first (plan.ts, rule 1).
// Once one of them can neither start nor preempt, no later one can: the plan only takes devices,
// quota and reservations as it goes, never gives them back. A plan starts or holds devices for at
// most as many jobs as there are devices. And once one of a kind has waited, the later ones of
// its kind wait as it does and reserve nothing (plan.ts, rule 5): before that rule they reserved
// too, and one planned after another job had taken devices or quota reserved something new (the
// team's quota, where the first ones had reserved devices), which held back jobs that the window,
// not reading it, placed. So the first (devices + 1) jobs of each kind decide the same plan as
// the whole queue; the property tests in queue-window.test.ts check it against the planner on
// random clusters. Jobs past the window keep the waiting reason they have until they come into it.
import type { PlanInput, PlanQueuedJob } from './types';

/** The jobs of each kind a round reads: one more than the pool's devices (`input.workers`'). */
export function windowSize(input: Pick<PlanInput, 'workers'>): number {
  return input.workers.reduce((n, w) => n + w.devices.length, 0) + 1;
}

/** Jobs of one kind share this key (see above); `now` decides which are in backoff. */
export function kindOf(job: PlanQueuedJob, now: number): string {
  const backoff = job.notBefore !== null && job.notBefore > now;
  return [job.teamId, job.ownerId, job.priority, job.deviceCount, job.deviceKind, job.memoryBytes, job.timeLimitSeconds, backoff].join('\u0000');
}

/** The planner's input with only the first `windowSize` queued jobs of each kind (oldest first, then id). */
export function queueWindow(input: PlanInput): PlanInput {
  const size = windowSize(input);
  const taken = new Map<string, number>();
  const ordered = [...input.queued].sort((a, b) => a.queuedAt - b.queuedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const queued = ordered.filter((job) => {
    const kind = kindOf(job, input.now);
    const n = taken.get(kind) ?? 0;
    taken.set(kind, n + 1);
    return n < size;
  });
  return { ...input, queued };
}
