// The leader's planner from one round to the next (issue 20, incremental rounds): the queue's
// grouping kept by job id, the planner's indexes kept by plan.ts (Kept), and when to start again
// from nothing. The round thread (round-worker.ts) keeps one for its life.
import { type Kept, newKept, sameWorkers } from './kept';
import { type KindsPlan, planKindsWith } from './plan';
import { sortOldestFirst } from './plan-round';
import { kindOf } from './queue-window';
import type { PlanInput, PlanQueuedJob } from './types';

/**
 * How often a Planner starts again from nothing, whatever it kept: the other safety net of
 * incremental rounds, beside the rolling refresh (plan.ts, refreshChanged). A full round costs what the
 * first does (README: the scheduler at cluster scale).
 */
const FULL_ROUND_EVERY_MS = 10 * 60_000;

/**
 * The leader's planner across rounds (issue 20, incremental rounds): each round's plan is
 * planKinds' plan of that round's input, exactly (planner.test.ts runs both on the same
 * rounds), but a round reuses what the last one built: the queue's kinds by job id, and the
 * workers' indexes (Kept), refreshed only where the cluster or the last round changed them. So a
 * round after a few jobs started or ended costs about those jobs and what it decides, not the
 * cluster's size. It starts again from nothing when a worker or device changes, the clock goes
 * back, or `fullEveryMs` has passed since it last did.
 */
export class Planner {
  private kept: Kept | null = null;
  private keptSince = 0;
  private lastNow = Number.NEGATIVE_INFINITY;
  private byId = new Map<string, QueuedEntry>();
  private lastQueue: QueuedEntry[] = [];
  private spareQueue: QueuedEntry[] = [];
  private kinds = new Map<string, KindGroup>();
  private rounds = 0;

  /** `rollingRounds`: Infinity turns the rolling refresh off (tests of what the bookkeeping alone keeps right). */
  constructor(private readonly options: { fullEveryMs?: number; rollingRounds?: number } = {}) {}

  round(input: PlanInput): KindsPlan {
    const { queued, ...rest } = input;
    const { kinds, keys } = this.group(queued, input.now);
    if (!this.kept || input.now < this.lastNow || input.now - this.keptSince >= (this.options.fullEveryMs ?? FULL_ROUND_EVERY_MS) || !sameWorkers(this.kept.cluster, input.workers)) {
      this.kept = newKept(input, this.options.rollingRounds);
      this.keptSince = input.now;
    }
    this.lastNow = input.now;
    return planKindsWith(this.kept, rest, kinds, keys);
  }

  /**
   * plan-round.ts's byKind, with each job's kind kept by id while its request is the same (a job
   * in backoff is looked at again: `now` decides), and each kind's array reused: a round's
   * grouping is a lookup and a push per queued job. Jobs and kinds gone from the queue are swept
   * when they outnumber it.
   */
  private group(queued: PlanQueuedJob[], now: number): { kinds: PlanQueuedJob[][]; keys: string[] } {
    const round = (this.rounds += 1);
    const groups: KindGroup[] = [];
    const last = this.lastQueue;
    // Two buffers, this round's and the last's, reused: a round's grouping allocates little.
    const entries = this.spareQueue;
    entries.length = 0;
    // The queue comes in much the same order each round (the loop reads it oldest first): the last
    // round's entries are walked beside it and found by position, by id only when out of step.
    let at = 0;
    for (let i = 0; i < queued.length; i += 1) {
      const job = queued[i];
      let entry: QueuedEntry | undefined;
      if (at < last.length && last[at].job.id === job.id) entry = last[at++];
      else if (at + 1 < last.length && last[at + 1].job.id === job.id) {
        entry = last[at + 1];
        at += 2;
      } else {
        entry = this.byId.get(job.id);
        if (entry && entry.round === round - 1) at = entry.at + 1;
      }
      if (!entry || job.notBefore !== null || (entry.job !== job && !sameRequest(entry.job, job))) {
        const key = kindOf(job, now);
        let kind = this.kinds.get(key);
        if (!kind) this.kinds.set(key, (kind = { key, jobs: [], round: 0 }));
        this.byId.set(job.id, (entry = { job, kind, round, at: i }));
      }
      entry.job = job;
      entry.round = round;
      entry.at = i;
      entries.push(entry);
      const { kind } = entry;
      if (kind.round !== round) {
        kind.round = round;
        kind.jobs.length = 0;
        groups.push(kind);
      }
      kind.jobs.push(job);
    }
    this.spareQueue = last;
    this.lastQueue = entries;
    if (this.byId.size > 2 * queued.length + 1_024) {
      for (const [id, entry] of this.byId) if (entry.round !== round) this.byId.delete(id);
      for (const [key, kind] of this.kinds) if (kind.round !== round) this.kinds.delete(key);
    }
    for (const kind of groups) sortOldestFirst(kind.jobs);
    return { kinds: groups.map((kind) => kind.jobs), keys: groups.map((kind) => kind.key) };
  }
}

/** A queued job as a Planner last saw it: its kind, the round, and its place in that round's queue. */
interface QueuedEntry {
  job: PlanQueuedJob;
  kind: KindGroup;
  round: number;
  at: number;
}

/** The queued jobs of one kind in a Planner's round (`round`: the last round that had any). */
interface KindGroup {
  key: string;
  jobs: PlanQueuedJob[];
  round: number;
}

/** Whether two queued jobs are of one kind for sure (kindOf's fields; neither in backoff). */
function sameRequest(a: PlanQueuedJob, b: PlanQueuedJob): boolean {
  return (
    a.teamId === b.teamId &&
    a.ownerId === b.ownerId &&
    a.priority === b.priority &&
    a.deviceCount === b.deviceCount &&
    a.deviceKind === b.deviceKind &&
    a.memoryBytes === b.memoryBytes &&
    a.timeLimitSeconds === b.timeLimitSeconds &&
    a.notBefore === null &&
    b.notBefore === null
  );
}
