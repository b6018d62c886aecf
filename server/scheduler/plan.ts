/**
 * The planner: a pure function from the cluster as it is (queued jobs, running jobs, workers and
 * their devices, team quotas, the time) to decisions (place, preempt, wait), each explained in
 * words the UI shows. It reads no clock and does no I/O; the loop around it applies the plan.
 * Beside it: the words of the reasons (reasons.ts), rule 5's arithmetic on a pool of devices or
 * quota (pool.ts), and the same quota checked at submit time (admission.ts).
 *
 * The rules, in the order they apply:
 *
 * 1. Order. Jobs are considered one at a time, highest priority first. Among equal priorities, the
 *    team with the smaller fair share goes first, then, within a team, the user with the smaller
 *    share, then the oldest job, then the job id. Shares are recomputed after every placement, so
 *    equal teams take turns within one plan.
 *
 * 2. Fair share is dominant-resource share with equal weights (DRF). The resources are device
 *    kinds. A team's share is, over the kinds, the largest fraction of the shared pool's devices of
 *    that kind (workers with teamId null, ONLINE or DRAINING) that the team holds; teams compete
 *    only for the shared pool, so their private workers do not count. A user's share is the same
 *    measure within the team: the largest fraction of the devices of the team's pools (its own
 *    workers and the shared pool) that the user's jobs hold. Holding 1 of 2 GPUs is a share of
 *    0.5; holding 4 of 64 CPUs is 0.0625.
 *
 * 3. Eligibility. A job in backoff (notBefore after now) waits. A job asking for more devices than
 *    its team's quota waits (it cannot ever run; the submit check refuses it too). Placement needs
 *    the team's held devices (running, stopping, placed or held for preemptors in this plan) plus
 *    the request to be within maxConcurrentDevices.
 *
 * 4. Gang placement. All of a job's devices are on one ONLINE worker of its pools (its team's
 *    workers or the shared pool), are all of one kind (the requested one, or any one kind when
 *    none is requested), and each has at least the requested memory. Among workers that fit: the
 *    team's own workers first, then the tightest fit (fewest free matching devices left, to keep
 *    large holes for large gangs), then CUDA, WEBGPU, CPU, WASM, then the worker id.
 *
 * 5. Reservations and backfill. A job that cannot be placed for lack of devices (and cannot
 *    preempt) reserves one worker: the soonest expected start, then the fewest devices held by
 *    jobs without a limit, then rule 4's order. A job blocked by its team's quota reserves the
 *    quota. The expected start (estimatedStartAt, shown in the UI) comes from declared time
 *    limits: free devices and those of stopping jobs are available now, a running job's at
 *    startedAt + timeLimitSeconds, and a job without a limit is taken to run on.
 *    A job later in the order (lower priority, or equal priority but behind in fair share) may
 *    take devices or quota that a reservation counts on only if that cannot make the reserved job
 *    start later, however the jobs without a limit end (see `delays`). Either its own declared end
 *    is at or before T0, the earliest start the reserved job could possibly have (every job
 *    without a limit ending now); or what it takes is spare at the reserved job's start: the most
 *    the other holders could still hold then (the largest sum of holdings that may outlive T0, up
 *    to capacity - need) + what it takes + the reserved job's need fit in the pool (the worker's
 *    matching devices, or the team quota). A job without a limit counts as never ending. When
 *    every job declares a limit this is exactly "the start computed from the limits does not
 *    move". Preemptors' held devices are checked the same way. Jobs waiting only because they
 *    are behind another (BEHIND) reserve nothing. Jobs of one kind (team, owner, priority,
 *    request, time limit, in backoff or not: queue-window.ts) are interchangeable but for their
 *    order, and one that cannot start or preempt leaves none of its kind after it able to; so
 *    once one has waited here (reserving, or behind a reservation), the later ones of its kind
 *    wait as it does (its code, reason, expected start and target) and reserve nothing. Else
 *    each would reserve again for the same start, and one considered after another job's
 *    placement would reserve something new (the team's quota, where the first had reserved
 *    devices), so that how many identical jobs wait would change what other jobs may do, and
 *    the round, which plans only a window of each kind (queue-window.ts), would plan
 *    differently from the whole queue.
 *
 * 6. Preemption, when a job cannot be placed (no free devices, or team quota): it may stop
 *    running jobs of strictly lower priority, never of equal or higher. Candidates are taken in
 *    Kueue's order: jobs of teams borrowing (holding more than their quota, or more than an equal
 *    share 1/n of the shared pool among the n teams with work) first, then lowest priority, then
 *    most recently started, then id. Per worker, candidates are added in that order until the job
 *    would fit on that worker (and within its quota), then, as Kueue does, each is dropped again,
 *    last added first, if the job still fits without it. Devices of jobs already stopping count
 *    as free at no cost. Among workers the plan with fewest non-borrowing victims, then the lowest
 *    highest victim priority, then fewest victims, then fewest preempted devices, then fewest
 *    currently free devices taken (they stay free for others) wins. The job then waits
 *    (PREEMPTING) with its devices held for it: no later job may take them, and a later plan,
 *    seeing the victims stopping, holds them again without preempting more.
 *
 * How a plan keeps its cost to what it can place or preempt (issue 20; the planner it replaced is
 * kept as the tests' reference, test-support/plan-reference.ts, and decides exactly as this one):
 * the queue's order is a heap of the users' queues, re-sorted only for the team whose shares a
 * placement changed; a team's held devices are counters; the workers a request can use are
 * indexed once per request (the shared pool's index is every team's), by how many matching
 * devices each has free (placement looks at the tightest fits first and stops at the first that
 * delays no reservation) and by when its devices free up (the reservation is the index's top);
 * both are updated for the one worker a placement or preemption changes. Free devices only ever
 * get taken within a plan, so a worker with too few is dropped from the placement index for good.
 * The leader's rounds keep these indexes from one round to the next (kept.ts's Kept; planner.ts's
 * `Planner`): a round refreshes only what the cluster or the last round changed, and plans as a
 * fresh planner.
 */
import type { DeviceKind, Placement, Plan, PlanInput, PlanQueuedJob, Preemption, Waiting, WaitCode } from './types';
import { DEFAULT_QUOTA } from './admission';
import { Heap } from './heap';
import { bump, cmp, endOf, forgetEnded, type Holding, type Kept, type KindCount, newKept, type PreemptionPlan, type ReservationChoice, type ReservationEntry, runningHolding, type Shape, type ShapeIndex, type ShapeIndexes, type Slot, type VictimsEntry, type WorkerSlots, zero } from './kept';
import { kindOf } from './queue-window';
import { delays, earliestStart, NEVER, type Pool, startOf } from './pool';
import {
  backoffReason,
  behindReason,
  exceedsQuotaReason,
  noCapacityReason,
  noWorkerReason,
  placedReason,
  preemptingReason,
  preemptionReason,
  quotaReachedReason,
} from './reasons';

const NONE: ReadonlySet<never> = new Set();
const KIND_ORDER: readonly DeviceKind[] = ['CUDA', 'WEBGPU', 'CPU', 'WASM'];
const KIND_INDEX: Record<DeviceKind, number> = { CUDA: 0, WEBGPU: 1, CPU: 2, WASM: 3 };

// ───────────────────────────── working state ─────────────────────────────

// What is kept from one round to the next (the cluster, its holders, the shape indexes and their
// entries) is typed in kept.ts; what follows lives for one plan.

interface DeviceReservation {
  job: PlanQueuedJob;
  workerId: string;
  kind: DeviceKind;
  startAt: number;
}

interface QuotaReservation {
  job: PlanQueuedJob;
  startAt: number;
}

type Reservation = ({ type: 'devices' } & DeviceReservation) | ({ type: 'quota' } & QuotaReservation);

interface State {
  now: number;
  workers: WorkerSlots[];
  workerById: Map<string, WorkerSlots>;
  /** The ONLINE workers of each pool (a team's id, or null for the shared pool), in id order: the shapes an index is built from. */
  onlineByPool: Map<string | null, WorkerSlots[]>;
  quotas: Map<string, number>;
  /** Per team: everything counted against its quota. */
  ledger: Map<string, Holding[]>;
  /** Per team: the devices of its ledger; of its holdings other than preemptors' holds; of those not stopping. */
  held: Map<string, { all: number; notHeld: number; notStopping: number }>;
  sharedTotal: KindCount;
  teamPoolTotal: Map<string, KindCount>;
  sharedUse: Map<string, KindCount>;
  /** Per team, per user (owner): the devices the user's jobs hold, and its share (dropped when its use changes). */
  users: Map<string, Map<string, UserUse>>;
  /** Shares by team, dropped when its use changes: ordering compares them often (users' are on their records: `users`). */
  teamShares: Map<string, number>;
  activeTeams: number;
  deviceReservations: Map<string, DeviceReservation[]>;
  quotaReservations: Map<string, QuotaReservation[]>;
  /** Per team: quotaConflict's answers without released jobs, by units and end; dropped when the team's quota pool or reservations change. */
  quotaAnswers: Map<string, Map<string, QuotaReservation | null>>;
  /** By kind (queue-window.ts): how the first job of the kind that waited for devices or quota waits (rule 5). */
  waitedKinds: Map<string, Waiting>;
  /** The shapes a request can take, indexed (ShapeIndexes): the Kept's, so a Planner's rounds share them. */
  indexes: ShapeIndexes;
  /** Whether any holding is stopping; the lowest priority of a running job (anythingToFree). */
  stoppingCount: number;
  lowestRunning: number;
  /** The workers whose index entries this round changed, and the teams whose victims it refreshed: the next round (Kept) refreshes them again. */
  touched: Set<WorkerSlots>;
  refreshedTeams: Set<string>;
  /** The kind (queue-window.ts's kindOf) of the job being decided, when the caller knows it: rule 5 looks it up. */
  decidingKind: string | null;
}

const userKey = (teamId: string, ownerId: string): string => `${teamId}\u0000${ownerId}`;

/** `queued`: the queued jobs whose teams have work (every team with a queued job has one there). `kept`: what the planner keeps (newKept for a first round). */
function buildState(input: Omit<PlanInput, 'queued'>, queued: PlanQueuedJob[], kept: Kept): State {
  const { now } = input;
  const { cluster } = kept;
  const teams = new Set<string>();
  for (const j of queued) teams.add(j.teamId);
  for (const j of input.running) teams.add(j.teamId);
  const s: State = {
    now,
    workers: cluster.workers,
    workerById: cluster.workerById,
    onlineByPool: cluster.onlineByPool,
    quotas: new Map(input.quotas.map((q) => [q.teamId, q.maxConcurrentDevices])),
    ledger: new Map(),
    held: new Map(),
    sharedTotal: cluster.sharedTotal,
    teamPoolTotal: cluster.teamPoolTotal,
    sharedUse: new Map(),
    users: new Map(),
    teamShares: new Map(),
    activeTeams: teams.size,
    deviceReservations: new Map(),
    quotaReservations: new Map(),
    quotaAnswers: new Map(),
    waitedKinds: new Map(),
    indexes: kept.indexes,
    stoppingCount: 0,
    lowestRunning: Number.POSITIVE_INFINITY,
    touched: new Set(),
    refreshedTeams: new Set(),
    decidingKind: null,
  };

  for (const w of cluster.workers) for (const slot of w.slots) slot.holder = null;
  for (const job of input.running) {
    const holding = runningHolding(kept, job, now);
    if (kept.holdings.get(job.id) !== holding) kept.holdings.set(job.id, holding);
    addToLedger(s, holding);
    if (job.stopping) s.stoppingCount += 1;
    s.lowestRunning = Math.min(s.lowestRunning, job.priority);
    const worker = job.workerId === null ? undefined : cluster.lastById.get(job.workerId);
    if (!worker) continue;
    // Use is counted once per run of devices of one kind (a job's devices are nearly always one kind).
    let kind: DeviceKind | null = null;
    let count = 0;
    for (const index of job.deviceIndexes) {
      const slot = worker.slots.find((d) => d.index === index);
      if (!slot) continue;
      // Two jobs on one device (never in a consistent database): the one with the larger id holds it,
      // as when they were taken in id order; both count as used.
      if (slot.holder === null || cmp(slot.holder.jobId, holding.jobId) <= 0) slot.holder = holding;
      if (slot.kind !== kind && kind !== null) {
        countUse(s, worker, kind, holding, count);
        count = 0;
      }
      kind = slot.kind;
      count += 1;
    }
    if (kind !== null) countUse(s, worker, kind, holding, count);
  }
  kept.borrowing = refreshChanged(s, kept);
  for (const w of cluster.workers) for (let i = 0; i < w.slots.length; i += 1) w.startHolders[i] = w.slots[i].holder;
  forgetEnded(kept, input.running);
  kept.touched = s.touched;
  kept.refreshedTeams = s.refreshedTeams;
  return s;
}

/** Which teams holding devices borrow (rule 6's order reads it). */
function borrowingTeams(s: State): Map<string, boolean> {
  const borrowing = new Map<string, boolean>();
  for (const teamId of s.ledger.keys()) borrowing.set(teamId, isBorrowing(s, teamId) !== null);
  return borrowing;
}

/**
 * The kept indexes brought up to this round: the workers whose holders differ from the last
 * round's start, or that the last round touched, are touched (their entries computed again); the
 * teams whose borrowing differs, or whose victims the last round refreshed, have their workers'
 * victims refreshed. Heaps grown with stale entries are rebuilt when next asked.
 */
function refreshChanged(s: State, kept: Kept): Map<string, boolean> {
  for (const index of kept.indexes.all()) compact(index);
  // The rolling safety net: a slice of the workers is refreshed each round whether or not it
  // changed, so every kept entry is computed again within `rollingRounds` rounds.
  const slice = Math.ceil(s.workers.length / kept.rollingRounds);
  const from = kept.sweep % Math.max(1, s.workers.length);
  kept.sweep = from + slice;
  for (let i = 0; i < s.workers.length; i += 1) {
    const w = s.workers[i];
    let changed = kept.touched.has(w) || (i >= from && i < from + slice);
    for (let i = 0; i < w.slots.length && !changed; i += 1) changed = w.slots[i].holder !== w.startHolders[i];
    if (changed && w.entries.length > 0) touch(s, w);
  }
  const borrowing = borrowingTeams(s);
  const teams = new Set(kept.refreshedTeams);
  for (const [teamId, borrows] of borrowing) if ((kept.borrowing.get(teamId) ?? false) !== borrows) teams.add(teamId);
  for (const [teamId, borrowed] of kept.borrowing) if (borrowed && !borrowing.has(teamId)) teams.add(teamId);
  for (const teamId of teams) refreshTeamVictims(s, teamId);
  s.touched = new Set();
  s.refreshedTeams = new Set();
  return borrowing;
}

/**
 * An index's heaps hold stale entries (of older versions of their shapes) until they come up;
 * between rounds those that hold more than twice their shapes are filtered, and the shapes every
 * priority has taken in are dropped from `changed`. A priority's heap far behind `changed` (its
 * preemptors were not seen for many rounds) is dropped, built again when next asked.
 */
function compact(index: ShapeIndex): void {
  const limit = 2 * index.shapes.length + 16;
  if (index.reservations && index.reservations.size > limit) index.reservations.retain((e) => e.version === e.shape.version);
  let entries = 0;
  for (const heap of index.byFree) entries += heap.size;
  if (entries > limit) {
    for (const heap of index.byFree) {
      const kept = new Set<Shape>();
      heap.retain((e) => e.free === e.shape.free && !kept.has(e.shape) && kept.add(e.shape) !== undefined);
    }
  }
  for (const [priority, entry] of index.victims) {
    if (index.changed.length - entry.seen > limit) index.victims.delete(priority);
    // An entry stays while its shape's record names it: valid, or to be found the same again (pushVictims).
    else if (entry.heap.size > limit) entry.heap.retain((e) => e.plan.shape.devicePlans.get(priority)?.entry === e);
  }
  let trim = index.changed.length;
  for (const entry of index.victims.values()) trim = Math.min(trim, entry.seen);
  if (trim > 0) {
    index.changed.splice(0, trim);
    for (const entry of index.victims.values()) entry.seen -= trim;
    index.seenMax = Math.max(0, index.seenMax - trim);
    for (const shape of index.shapes) shape.changedAt = Math.max(-1, shape.changedAt - trim);
  }
}

function ledgerOf(s: State, teamId: string): Holding[] {
  let list = s.ledger.get(teamId);
  if (!list) s.ledger.set(teamId, (list = []));
  return list;
}

function heldOf(s: State, teamId: string): { all: number; notHeld: number; notStopping: number } {
  let held = s.held.get(teamId);
  if (!held) s.held.set(teamId, (held = { all: 0, notHeld: 0, notStopping: 0 }));
  return held;
}

function addToLedger(s: State, h: Holding): void {
  ledgerOf(s, h.teamId).push(h);
  s.quotaAnswers.delete(h.teamId);
  const held = heldOf(s, h.teamId);
  held.all += h.devices;
  if (h.source !== 'held') held.notHeld += h.devices;
  if (!h.stopping) held.notStopping += h.devices;
}

interface UserUse {
  use: KindCount;
  share: number | undefined;
}

/** A user's use, looked up by team then owner: ordering asks for it often, and a joined key would be built and hashed each time. */
function userOf(s: State, teamId: string, ownerId: string): UserUse {
  let team = s.users.get(teamId);
  if (!team) s.users.set(teamId, (team = new Map()));
  let user = team.get(ownerId);
  if (!user) team.set(ownerId, (user = { use: zero(), share: undefined }));
  return user;
}

function countUse(s: State, worker: WorkerSlots, kind: DeviceKind, h: Holding, by: number): void {
  if (worker.state !== 'ONLINE' && worker.state !== 'DRAINING') return;
  if (worker.teamId === null) bump(s.sharedUse, h.teamId, kind, by);
  const user = userOf(s, h.teamId, h.ownerId);
  user.use[kind] += by;
  user.share = undefined;
  s.teamShares.delete(h.teamId);
}

const workerOf = (s: State, id: string): WorkerSlots => s.workerById.get(id) as WorkerSlots;
const quotaOf = (s: State, teamId: string): number => s.quotas.get(teamId) ?? DEFAULT_QUOTA.maxConcurrentDevices;
const heldBy = (s: State, teamId: string): number => heldOf(s, teamId).all;

// ───────────────────────────── fair share ─────────────────────────────

function dominantShare(use: KindCount | undefined, total: KindCount): number {
  if (!use) return 0;
  let share = 0;
  for (const kind of KIND_ORDER) if (total[kind] > 0) share = Math.max(share, use[kind] / total[kind]);
  return share;
}

function teamShare(s: State, teamId: string): number {
  let share = s.teamShares.get(teamId);
  if (share === undefined) s.teamShares.set(teamId, (share = dominantShare(s.sharedUse.get(teamId), s.sharedTotal)));
  return share;
}

/** A user's share of its team's pools (rule 2), kept on its use record until the use changes. */
function shareOf(s: State, teamId: string, user: UserUse): number {
  if (user.share === undefined) {
    const own = s.teamPoolTotal.get(teamId) ?? zero();
    const total = zero();
    for (const kind of KIND_ORDER) total[kind] = own[kind] + s.sharedTotal[kind];
    user.share = dominantShare(user.use, total);
  }
  return user.share;
}

/** Jobs in their order within one user's queue; a user's queue is a heap of runs by their heads. */
interface Run {
  jobs: PlanQueuedJob[];
  next: number;
  /** The run's kind (kindOf), when it is one kind's jobs and the caller knows its key. */
  kind: string | null;
}

interface UserQueue {
  teamId: string;
  use: UserUse;
  runs: Heap<Run>;
  /** The head of its best run: its next job. */
  head: PlanQueuedJob;
}

interface TeamQueue {
  teamId: string;
  users: Heap<UserQueue>;
}

/** Within one user (one team and owner), rule 1 is priority, then age, then id. */
function compareWithinUser(a: PlanQueuedJob, b: PlanQueuedJob): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.queuedAt !== b.queuedAt) return a.queuedAt - b.queuedAt;
  return cmp(a.id, b.id);
}

/**
 * The queue in rule 1's order, as shares change, as runs of jobs already in their order within
 * their user: a user's whole queue (plan), or the jobs of one kind (planKinds). A user's own jobs
 * keep a fixed order (their shares are the same), so only the heads of the users' queues are
 * compared: in a heap per team (a team's share orders none of its own users before another), and
 * the teams' best heads in a heap of teams. A decision changes the shares of the job's own user
 * and team only, so only that user moves in its team's heap and that team in the heap of teams.
 * `next(job)` answers whether the job's run goes on after the job was decided.
 */
function* inOrder(s: State, runs: PlanQueuedJob[][], keys?: string[]): Generator<PlanQueuedJob, void, boolean> {
  const runHead = (r: Run) => r.jobs[r.next];
  const byRun = (a: Run, b: Run) => compareWithinUser(runHead(a), runHead(b)) < 0;
  // Users of one team compare by rule 1 without the team's share (the same for both); heads and
  // shares are kept on the queues and use records, not looked up per comparison.
  const byUser = (a: UserQueue, b: UserQueue) => {
    const x = a.head;
    const y = b.head;
    if (x.priority !== y.priority) return x.priority > y.priority;
    const users = shareOf(s, a.teamId, a.use) - shareOf(s, b.teamId, b.use);
    if (users !== 0) return users < 0;
    if (x.queuedAt !== y.queuedAt) return x.queuedAt < y.queuedAt;
    return x.id < y.id;
  };
  const byTeam = (a: TeamQueue, b: TeamQueue) => {
    const u = a.users.peek() as UserQueue;
    const v = b.users.peek() as UserQueue;
    const x = u.head;
    const y = v.head;
    if (x.priority !== y.priority) return x.priority > y.priority;
    const teams = teamShare(s, a.teamId) - teamShare(s, b.teamId);
    if (teams !== 0) return teams < 0;
    const users = shareOf(s, u.teamId, u.use) - shareOf(s, v.teamId, v.use);
    if (users !== 0) return users < 0;
    if (x.queuedAt !== y.queuedAt) return x.queuedAt < y.queuedAt;
    return x.id < y.id;
  };
  const users = new Map<string, Map<string, UserQueue>>();
  for (let r = 0; r < runs.length; r += 1) {
    const jobs = runs[r];
    if (jobs.length === 0) continue;
    const { teamId, ownerId } = jobs[0];
    let team = users.get(teamId);
    if (!team) users.set(teamId, (team = new Map()));
    let user = team.get(ownerId);
    if (!user) team.set(ownerId, (user = { teamId, use: userOf(s, teamId, ownerId), runs: new Heap(byRun), head: jobs[0] }));
    user.runs.push({ jobs, next: 0, kind: keys?.[r] ?? null });
  }
  const teams = new Heap<TeamQueue>(byTeam);
  for (const [teamId, team] of users) {
    const queue: TeamQueue = { teamId, users: new Heap(byUser) };
    for (const user of team.values()) {
      user.head = runHead(user.runs.peek() as Run);
      queue.users.push(user);
    }
    teams.push(queue);
  }
  for (;;) {
    const team = teams.peek();
    if (!team) return;
    const user = team.users.peek() as UserQueue;
    const run = user.runs.peek() as Run;
    s.decidingKind = run.kind;
    const goesOn = yield runHead(run);
    run.next += 1;
    if (!goesOn || run.next === run.jobs.length) user.runs.pop();
    else user.runs.update(0);
    if (user.runs.size === 0) team.users.pop();
    else {
      user.head = runHead(user.runs.peek() as Run);
      team.users.update(0);
    }
    if (team.users.size === 0) teams.pop();
    else teams.update(0);
  }
}

/** Holding more than its quota, or more than an equal share of the shared pool. */
function isBorrowing(s: State, teamId: string): 'quota' | 'share' | null {
  if (heldOf(s, teamId).notHeld > quotaOf(s, teamId)) return 'quota';
  if (s.activeTeams > 0 && teamShare(s, teamId) > 1 / s.activeTeams) return 'share';
  return null;
}

// ───────────────────────────── devices and estimates ─────────────────────────────

function fits(slot: Slot, kind: DeviceKind, memoryBytes: number): boolean {
  return slot.kind === kind && slot.memoryBytes >= memoryBytes;
}

/** Shape order: worker id, then kind order. */
const shapeOrder = (a: Shape, b: Shape): number => a.worker.order - b.worker.order || KIND_INDEX[a.kind] - KIND_INDEX[b.kind];
const kindThenWorker = (a: Shape, b: Shape): boolean =>
  KIND_INDEX[a.kind] !== KIND_INDEX[b.kind] ? KIND_INDEX[a.kind] < KIND_INDEX[b.kind] : a.worker.order < b.worker.order;

/** Rule 5's order of reservations: soonest start, fewest devices held by jobs without a limit, then rule 4's order. */
function betterReservation(a: ReservationChoice, b: ReservationChoice): boolean {
  if (a.startKey !== b.startKey) return a.startKey < b.startKey;
  if (a.unknown !== b.unknown) return a.unknown < b.unknown;
  return comparePlaces({ shape: a.shape, left: 0 }, { shape: b.shape, left: 0 }) < 0;
}

/**
 * When a slot is free for a reservation, as a key that does not move with the clock: free, stopping
 * or due by now is -Infinity (now, in every round), so a Planner's kept reservation entries compare
 * with new ones as they would had they been computed now. A holding's release never falls below
 * now while it is kept (runningHolding), so the keys of kept entries stay right.
 */
function releaseKey(s: State, slot: Slot): number {
  const h = slot.holder;
  if (h === null || h.stopping || h.release <= s.now) return Number.NEGATIVE_INFINITY;
  return h.release;
}

function reservationOn(s: State, shape: Shape, deviceCount: number): ReservationChoice {
  const slots = [...shape.matching].sort((a, b) => releaseKey(s, a) - releaseKey(s, b) || a.index - b.index).slice(0, deviceCount);
  const startKey = releaseKey(s, slots[slots.length - 1]);
  let unknown = 0;
  for (const slot of slots) if (releaseKey(s, slot) === NEVER) unknown += 1;
  return { shape, startKey, unknown, slots };
}

/** reservationOn, computed once for the shapes that share it (SharedPlans) while the worker's slots stay as they are. */
function sharedReservation(s: State, shape: Shape, deviceCount: number): ReservationChoice {
  const shared = shape.shared;
  if (shared.reservation === null || shared.reservationAt !== shape.worker.slotsVersion) {
    shared.reservation = reservationOn(s, shape, deviceCount);
    shared.reservationAt = shape.worker.slotsVersion;
  }
  return shared.reservation.shape === shape ? shared.reservation : { ...shared.reservation, shape };
}

function freeOf(shape: Shape): number {
  let free = 0;
  for (const slot of shape.matching) if (slot.holder === null) free += 1;
  return free;
}

/** The job's pools' indexes: the shared pool's and its team's own workers' (kept by kind, when the caller knows the job's). */
function shapesFor(s: State, job: PlanQueuedJob): ShapeIndex[] {
  const known = s.decidingKind === null ? undefined : s.indexes.ofKind(s.decidingKind);
  if (known) return known;
  const request = `${job.deviceKind}\u0000${job.memoryBytes}\u0000${job.deviceCount}`;
  const indexes = [indexOf(s, `\u0000${request}`, null, job), indexOf(s, `${job.teamId}\u0000${request}`, job.teamId, job)];
  if (s.decidingKind !== null) s.indexes.rememberKind(s.decidingKind, indexes);
  return indexes;
}

/**
 * The index of a request in a pool. Requests whose shapes are the same (a kind or any on workers
 * of that kind, memories the same devices meet) share one index: what it keeps depends only on
 * the shapes and the gang size, and each change of a worker then updates it once.
 */
function indexOf(s: State, key: string, pool: string | null, job: PlanQueuedJob): ShapeIndex {
  let index = s.indexes.ofRequest(key);
  if (index) return index;
  const found: { worker: WorkerSlots; kind: DeviceKind; matching: Slot[] }[] = [];
  for (const worker of s.onlineByPool.get(pool) ?? []) {
    for (const kind of job.deviceKind ? [job.deviceKind] : KIND_ORDER) {
      const matching = worker.slots.filter((slot) => fits(slot, kind, job.memoryBytes));
      if (matching.length >= job.deviceCount) found.push({ worker, kind, matching });
    }
  }
  const signature = `${job.deviceCount}|${found.map(({ worker, kind, matching }) => `${worker.order}:${kind}:${matching.map((slot) => slot.index).join(',')}`).join('|')}`;
  index = s.indexes.ofSignature(signature, key);
  if (index) return index;
  const shapes: Shape[] = [];
  for (const { worker, kind, matching } of found) {
    const sort = `${kind}:${matching.map((slot) => slot.index).join(',')}:${job.deviceCount}`;
    let shared = worker.shared.get(sort);
    if (!shared) worker.shared.set(sort, (shared = { reservationAt: -1, reservation: null, victimsAt: -1, plans: new Map() }));
    shapes.push({ worker, kind, matching, free: 0, version: 0, victimsVersion: 0, devicePlans: new Map(), changedAt: -1, generalAt: 0, flips: [], reservationEntry: null, shared });
  }
  index = {
    deviceCount: job.deviceCount,
    shapes,
    byFree: [],
    reservations: null,
    victims: new Map(),
    changed: [],
    seenMax: 0,
  };
  for (const shape of shapes) {
    shape.worker.entries.push({ index, shape });
    shape.free = freeOf(shape);
    if (shape.free >= job.deviceCount) byFreeOf(index, shape.free).push({ shape, free: shape.free });
  }
  s.indexes.add(signature, key, index);
  return index;
}

function byFreeOf(index: ShapeIndex, free: number): Heap<{ shape: Shape; free: number }> {
  while (index.byFree.length <= free) index.byFree.push(new Heap((a, b) => kindThenWorker(a.shape, b.shape)));
  return index.byFree[free];
}

/** A worker's slots changed (a holder, or a holder's stopping): its shapes' entries move in every index. */
function touch(s: State, worker: WorkerSlots): void {
  worker.slotsVersion += 1;
  for (const { index, shape } of worker.entries) {
    shape.version += 1;
    if (index.reservations) pushReservation(index.reservations, shape, sharedReservation(s, shape, index.deviceCount));
    const free = freeOf(shape);
    if (free !== shape.free) {
      shape.free = free;
      if (free >= index.deviceCount) byFreeOf(index, free).push({ shape, free });
    }
  }
  s.touched.add(worker);
  refreshVictims(worker);
}

/** The draining workers that would take a job no online one can, by name: the reason names them (an admin may resume one). */
function drainingThatFit(s: State, job: PlanQueuedJob): string[] {
  const names: string[] = [];
  for (const worker of s.workers) {
    if (worker.state !== 'DRAINING') continue;
    if (worker.teamId !== null && worker.teamId !== job.teamId) continue;
    for (const kind of job.deviceKind ? [job.deviceKind] : KIND_ORDER) {
      if (worker.slots.filter((slot) => fits(slot, kind, job.memoryBytes)).length >= job.deviceCount) names.push(worker.name ?? worker.id);
    }
  }
  return [...new Set(names)];
}

/** A reservation's devices on its worker, as a pool; `freed` holders count as gone. */
function devicePool(s: State, worker: WorkerSlots, r: DeviceReservation, freed: ReadonlySet<Holding>): Pool {
  const matching = worker.slots.filter((slot) => fits(slot, r.kind, r.job.memoryBytes));
  const byHolder = new Map<Holding, number>();
  for (const slot of matching) {
    if (slot.holder === null || freed.has(slot.holder)) continue;
    byHolder.set(slot.holder, (byHolder.get(slot.holder) ?? 0) + 1);
  }
  const held = [...byHolder].map(([h, units]) => ({ units, release: h.stopping ? s.now : h.release }));
  return { capacity: matching.length, held };
}

/** The first reservation on this worker that taking `chosen` until `end` would delay. */
function deviceConflict(
  s: State,
  worker: WorkerSlots,
  chosen: Slot[],
  end: number,
  freed: ReadonlySet<Holding> = NONE,
): DeviceReservation | null {
  for (const r of s.deviceReservations.get(worker.id) ?? []) {
    const units = chosen.filter((slot) => fits(slot, r.kind, r.job.memoryBytes)).length;
    if (delays(s.now, devicePool(s, worker, r, freed), r.job.deviceCount, { units, release: end })) return r;
  }
  return null;
}

/** A team's quota as a pool; `released` jobs (being preempted) count as gone. */
function quotaPool(s: State, teamId: string, released: ReadonlySet<string> = NONE): Pool {
  const held = ledgerOf(s, teamId)
    .filter((h) => !released.has(h.jobId))
    .map((h) => ({ units: h.devices, release: h.stopping ? s.now : h.release }));
  return { capacity: quotaOf(s, teamId), held };
}

/**
 * The first quota reservation of the team that taking `units` until `end` would delay. Without
 * `released` jobs, the answer is kept until the team's ledger, a holding's stopping or its quota
 * reservations change: a team's jobs of one kind ask the same question many times in a plan.
 */
function quotaConflict(s: State, teamId: string, units: number, end: number, released?: ReadonlySet<string>): QuotaReservation | null {
  const reservations = s.quotaReservations.get(teamId);
  if (!reservations) return null;
  const remembered = released === undefined || released.size === 0;
  const key = `${units}\u0000${end}`;
  let answers = s.quotaAnswers.get(teamId);
  if (remembered && answers?.has(key)) return answers.get(key) as QuotaReservation | null;
  const pool = quotaPool(s, teamId, released);
  let answer: QuotaReservation | null = null;
  for (const r of reservations) {
    if (delays(s.now, pool, r.job.deviceCount, { units, release: end })) {
      answer = r;
      break;
    }
  }
  if (remembered) {
    if (!answers) s.quotaAnswers.set(teamId, (answers = new Map()));
    answers.set(key, answer);
  }
  return answer;
}

/** The wait behind reservation `r`, with the earliest its job could start (the reason's hint). */
function behindWords(s: State, job: PlanQueuedJob, r: Reservation): string {
  const pool = r.type === 'devices' ? devicePool(s, workerOf(s, r.workerId), r, NONE) : quotaPool(s, r.job.teamId);
  return behindReason(job, r, earliestStart(s.now, pool, r.job.deviceCount), s.now);
}

// ───────────────────────────── the plan ─────────────────────────────

export function plan(input: PlanInput): Plan {
  const s = buildState(input, input.queued, newKept(input));
  const out: Plan = { placements: [], preemptions: [], waiting: [] };
  const byUser = new Map<string, PlanQueuedJob[]>();
  for (const job of input.queued) {
    const key = userKey(job.teamId, job.ownerId);
    const jobs = byUser.get(key);
    if (jobs) jobs.push(job);
    else byUser.set(key, [job]);
  }
  const runs = [...byUser.values()];
  for (const jobs of runs) jobs.sort(compareWithinUser);
  const order = inOrder(s, runs);
  for (let next = order.next(true); !next.done; next = order.next(true)) decide(s, next.value, out);
  return out;
}

/** A plan of the queue that reads of each kind only the jobs up to its first that waits. */
export interface KindsPlan {
  plan: Plan;
  /** The jobs it decided; the others wait behind an earlier job of their kind. */
  read: PlanQueuedJob[];
}

/**
 * The plan of the whole queue, given by kind (plan-round.ts's byKind: each kind's jobs oldest
 * first, then by id), for the jobs up to the first of each kind that waits (rule 5: the later ones
 * wait as it does and change nothing), which are all it decides. The queue's other jobs are not
 * looked at, so a round costs what it places or preempts and one job per kind.
 */
export function planKinds(input: Omit<PlanInput, 'queued'>, kinds: PlanQueuedJob[][]): KindsPlan {
  return planKindsWith(newKept(input), input, kinds);
}

/** planKinds on what a Planner kept (planner.ts); `keys`: each kind's key (kindOf), when the caller has them. */
export function planKindsWith(kept: Kept, input: Omit<PlanInput, 'queued'>, kinds: PlanQueuedJob[][], keys?: string[]): KindsPlan {
  const firsts = kinds.flatMap((jobs) => (jobs.length > 0 ? [jobs[0]] : []));
  const s = buildState(input, firsts, kept);
  const out: Plan = { placements: [], preemptions: [], waiting: [] };
  const read: PlanQueuedJob[] = [];
  const order = inOrder(s, kinds, keys);
  for (let next = order.next(true); !next.done; ) {
    const job = next.value;
    read.push(job);
    const waited = out.waiting.length;
    decide(s, job, out);
    const waits = out.waiting.length > waited && out.waiting[waited].code !== 'PREEMPTING';
    next = order.next(!waits);
  }
  return { plan: out, read };
}

function wait(
  out: Plan,
  job: PlanQueuedJob,
  code: WaitCode,
  reason: string,
  extra: Partial<Pick<Waiting, 'estimatedStartAt' | 'target'>> = {},
): void {
  out.waiting.push({ jobId: job.id, code, reason, estimatedStartAt: null, target: null, ...extra });
}

/** One job's decision: the rules of the header, in order. */
function decide(s: State, job: PlanQueuedJob, out: Plan): void {
  // Rule 3: jobs that cannot run now, whatever is free.
  if (job.notBefore !== null && job.notBefore > s.now) return wait(out, job, 'BACKOFF', backoffReason(job.notBefore));
  const quota = quotaOf(s, job.teamId);
  if (job.deviceCount > quota) return wait(out, job, 'EXCEEDS_QUOTA', exceedsQuotaReason(job.deviceCount, quota));
  const shapes = shapesFor(s, job);
  if (shapes.every((index) => index.shapes.length === 0)) return wait(out, job, 'NO_WORKER', noWorkerReason(job, drainingThatFit(s, job)));
  // Rule 5: as an earlier job of its kind that could not start either waits.
  const kind = s.decidingKind ?? kindOf(job, s.now);
  const first = s.waitedKinds.get(kind);
  if (first) return void out.waiting.push({ ...first, jobId: job.id });

  // Rules 4 and 5: placed now, if the quota has room and no reservation ahead of it is delayed.
  const end = endOf(s.now, job.timeLimitSeconds);
  const held = heldBy(s, job.teamId);
  const quotaOk = held + job.deviceCount <= quota;
  const attempt: PlaceAttempt = quotaOk ? placeWithinQuota(s, job, shapes, end) : { blocker: null };
  if ('placement' in attempt) {
    out.placements.push(attempt.placement);
    return;
  }

  // Rule 6: or room is made by preempting lower-priority jobs.
  const preemption = tryPreempt(s, job, shapes, end, quotaOk);
  if (preemption) return applyPreemption(s, job, preemption, out);

  // Rule 5: else it waits, behind a reservation of a job ahead (reserving nothing), or reserving
  // its team's quota, or reserving devices; and the later jobs of its kind wait as it does.
  if (attempt.blocker) wait(out, job, 'BEHIND', behindWords(s, job, attempt.blocker));
  else if (!quotaOk) {
    const startAt = reserveQuota(s, job);
    wait(out, job, 'QUOTA', quotaReachedReason(quota, held, job.deviceCount), { estimatedStartAt: knownTime(startAt) });
  } else {
    const r = reserveDevices(s, job, shapes);
    wait(out, job, 'NO_CAPACITY', noCapacityReason(job, r), {
      estimatedStartAt: knownTime(r.startAt),
      target: { workerId: r.workerId, kind: r.kind, deviceIndexes: r.deviceIndexes },
    });
  }
  s.waitedKinds.set(kind, out.waiting[out.waiting.length - 1]);
}

/** A time for the UI: null when it is not known (NEVER). */
const knownTime = (t: number): number | null => (t === NEVER ? null : t);

// ── placing ──

type PlaceAttempt = { placement: Placement } | { blocker: Reservation | null };

/** Within the team's quota: the team's quota reservations ahead come first, then the devices. */
function placeWithinQuota(s: State, job: PlanQueuedJob, shapes: ShapeIndex[], end: number): PlaceAttempt {
  const quotaBlocker = quotaConflict(s, job.teamId, job.deviceCount, end);
  if (quotaBlocker) return { blocker: { type: 'quota', ...quotaBlocker } };
  return tryPlace(s, job, shapes, end);
}

interface PlaceCandidate {
  shape: Shape;
  chosen: Slot[];
  backfill: DeviceReservation | null;
}

/** The devices a placement on `shape` takes, and whether that delays a reservation there. */
function candidateOn(s: State, job: PlanQueuedJob, shape: Shape, end: number): PlaceCandidate | { conflict: DeviceReservation } {
  const free = shape.matching.filter((slot) => slot.holder === null);
  // Devices no reservation could use go first, so a backfill disturbs as little as possible.
  const reservations = s.deviceReservations.get(shape.worker.id) ?? [];
  const contested = (slot: Slot) => reservations.some((r) => fits(slot, r.kind, r.job.memoryBytes));
  const chosen = [...free].sort((a, b) => Number(contested(a)) - Number(contested(b)) || a.index - b.index).slice(0, job.deviceCount);
  const conflict = deviceConflict(s, shape.worker, chosen, end);
  if (conflict) return { conflict };
  return { shape, chosen, backfill: reservations.find((r) => chosen.some((slot) => fits(slot, r.kind, r.job.memoryBytes))) ?? null };
}

/**
 * Rule 4 and 5: the best worker with enough free matching devices that delays no reservation.
 * Each index is read in rule 4's order (tightest fit, kind order, worker id), the team's own
 * workers first, up to the first shape that delays no reservation. When every one does, the job
 * waits behind the first of them in shape order, as the reference did.
 */
function tryPlace(s: State, job: PlanQueuedJob, shapes: ShapeIndex[], end: number): PlaceAttempt {
  let best: PlaceCandidate | null = null;
  const conflicts: { shape: Shape; conflict: DeviceReservation }[] = [];
  for (const index of [shapes[1], shapes[0]]) {
    for (let free = index.deviceCount; free < index.byFree.length && !best; free += 1) {
      const heap = index.byFree[free];
      const seen: { shape: Shape; free: number }[] = [];
      while (heap.size > 0) {
        const entry = heap.pop() as { shape: Shape; free: number };
        if (entry.shape.free !== entry.free) continue;
        seen.push(entry);
        const candidate = candidateOn(s, job, entry.shape, end);
        if ('conflict' in candidate) conflicts.push({ shape: entry.shape, conflict: candidate.conflict });
        else {
          best = candidate;
          break;
        }
      }
      for (const entry of seen) heap.push(entry);
    }
    if (best) break;
  }
  if (!best) {
    if (conflicts.length === 0) return { blocker: null };
    const first = conflicts.reduce((a, b) => (shapeOrder(b.shape, a.shape) < 0 ? b : a));
    return { blocker: { type: 'devices', ...first.conflict } };
  }

  const { shape, chosen } = best;
  const borrowed = isBorrowing(s, job.teamId) !== null;
  const holding = hold(s, job, shape.worker.id, 'placed', chosen.length, end);
  for (const slot of chosen) {
    slot.holder = holding;
    countUse(s, shape.worker, slot.kind, holding, 1);
  }
  touch(s, shape.worker);
  // Its team starting to borrow reorders victims (rule 6) wherever the team holds devices.
  if ((isBorrowing(s, job.teamId) !== null) !== borrowed) refreshTeamVictims(s, job.teamId);
  const deviceIndexes = chosen.map((slot) => slot.index);
  const ahead = best.backfill?.job ?? quotaReservationOf(s, job);
  const backfill = ahead !== null;
  const reason = placedReason({ workerId: shape.worker.id, kind: shape.kind, deviceIndexes }, ahead);
  return { placement: { jobId: job.id, workerId: shape.worker.id, deviceIndexes, backfill, reason } };
}

/** Own pool first, then the tightest fit, then kind order, then worker id. */
function comparePlaces(a: { shape: Shape; left: number }, b: { shape: Shape; left: number }): number {
  const own = Number(a.shape.worker.teamId === null) - Number(b.shape.worker.teamId === null);
  if (own !== 0) return own;
  if (a.left !== b.left) return a.left - b.left;
  const kinds = KIND_INDEX[a.shape.kind] - KIND_INDEX[b.shape.kind];
  if (kinds !== 0) return kinds;
  return a.shape.worker.order - b.shape.worker.order;
}

/** A waiting job of the same team holding a quota reservation: this placement went ahead of it. */
function quotaReservationOf(s: State, job: PlanQueuedJob): PlanQueuedJob | null {
  const quota = s.quotaReservations.get(job.teamId)?.[0];
  return quota?.job ?? null;
}

function hold(s: State, job: PlanQueuedJob, workerId: string, source: Holding['source'], devices: number, end: number): Holding {
  const holding: Holding = {
    source,
    jobId: job.id,
    teamId: job.teamId,
    ownerId: job.ownerId,
    priority: job.priority,
    workerId,
    startedAt: s.now,
    devices,
    release: end,
    stopping: false,
  };
  addToLedger(s, holding);
  return holding;
}

// ── reserving ──

/** Rule 5: the job reserves its team's quota from when it frees up; answers that time. */
function reserveQuota(s: State, job: PlanQueuedJob): number {
  const startAt = startOf(s.now, quotaPool(s, job.teamId), job.deviceCount);
  const list = s.quotaReservations.get(job.teamId) ?? [];
  list.push({ job, startAt });
  s.quotaReservations.set(job.teamId, list);
  s.quotaAnswers.delete(job.teamId);
  return startAt;
}

function reserveDevices(s: State, job: PlanQueuedJob, shapes: ShapeIndex[]): DeviceReservation & { deviceIndexes: number[] } {
  const { shape, startKey, slots } = bestReservation(s, shapes);
  const startAt = Math.max(s.now, startKey);
  const reservation: DeviceReservation = { job, workerId: shape.worker.id, kind: shape.kind, startAt };
  const list = s.deviceReservations.get(shape.worker.id) ?? [];
  list.push(reservation);
  s.deviceReservations.set(shape.worker.id, list);
  return { ...reservation, deviceIndexes: slots.map((slot) => slot.index).sort((a, b) => a - b) };
}

/**
 * A shape's reservation entry at its current version. The same choice as its entry already in
 * this heap revalidates that entry (the same place in the heap) instead of pushing a copy: most
 * changes of a worker leave its reservation as it was.
 */
function pushReservation(heap: Heap<ReservationEntry>, shape: Shape, choice: ReservationChoice): void {
  const live = shape.reservationEntry;
  if (live && live.heap === heap && live.entry.choice.startKey === choice.startKey && live.entry.choice.unknown === choice.unknown && sameSlots(live.entry.choice.slots, choice.slots)) {
    live.entry.version = shape.version;
    return;
  }
  const entry = { shape, version: shape.version, choice };
  shape.reservationEntry = { heap, entry };
  heap.push(entry);
}

function sameSlots(a: Slot[], b: Slot[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

/** The best of the indexes' tops (stale entries, of older versions of their shape, dropped). */
function bestReservation(s: State, shapes: ShapeIndex[]): ReservationChoice {
  let best: ReservationChoice | null = null;
  for (const index of shapes) {
    const heap = reservationsOf(s, index);
    let top = heap.peek();
    while (top && top.version !== top.shape.version) {
      heap.pop();
      top = heap.peek();
    }
    if (top && (!best || betterReservation(top.choice, best))) best = top.choice;
  }
  // shapesFor found at least one shape, so best is set.
  return best as ReservationChoice;
}

/** The index's shapes by reservation order, built when a job of its request first reserves. */
function reservationsOf(s: State, index: ShapeIndex): Heap<ReservationEntry> {
  if (index.reservations) return index.reservations;
  const heap = new Heap<ReservationEntry>((a, b) => betterReservation(a.choice, b.choice));
  for (const shape of index.shapes) pushReservation(heap, shape, sharedReservation(s, shape, index.deviceCount));
  return (index.reservations = heap);
}

// ── preempting ──

/** Kueue's candidate order of victims (victimOrder), with `borrows`: whether a team borrows, as the order saw it. */
type VictimOrder = ((a: Holding, b: Holding) => number) & { borrows(teamId: string): boolean };

/**
 * Kueue's candidate order: borrowers, then lowest priority, then most recently started, then id.
 * Whether a team borrows is asked of the state once per team, when the order first needs it.
 */
function victimOrder(s: State): VictimOrder {
  const borrowing = new Map<string, boolean>();
  const borrows = (teamId: string) => {
    let answer = borrowing.get(teamId);
    if (answer === undefined) borrowing.set(teamId, (answer = isBorrowing(s, teamId) !== null));
    return answer;
  };
  const order = (a: Holding, b: Holding) =>
    Number(borrows(b.teamId)) - Number(borrows(a.teamId)) ||
    a.priority - b.priority ||
    b.startedAt - a.startedAt ||
    cmp(a.jobId, b.jobId);
  return Object.assign(order, { borrows });
}

function preemptibleBelow(h: Holding | null, priority: number): h is Holding {
  return h !== null && h.source === 'running' && !h.stopping && h.priority < priority;
}

/**
 * Rule 6: the cheapest admissible way to free room for the job on one worker, or null.
 *
 * A shape's victims for devices alone, and their cost, depend only on the shape's holders, the
 * preemptor's priority and which teams borrow, not on the job: so each index keeps them per
 * preemptor priority (`devicePlansOf`), with a heap of its shapes by cost (rule 6's order of
 * plans); a worker whose holders change (`touch`), or on which a team that starts borrowing holds
 * devices (`tryPlace`), is marked, and its shapes are computed again when a preemptor of that
 * priority next asks. When the team's quota has room for the job, the search takes the
 * heap's best plans until one delays no reservation, instead of evaluating every worker the job
 * could use. When quota must be freed too, the team's own lower-priority jobs anywhere are
 * candidates on every shape; on a shape none of them holds devices of, the plan is the team's
 * victims for quota (the same for every such shape) beside the shape's victims for devices, so
 * each such shape costs a few additions; the others are evaluated in full, as the reference does.
 */
function tryPreempt(s: State, job: PlanQueuedJob, shapes: ShapeIndex[], end: number, quotaOk: boolean): PreemptionPlan | null {
  // Nothing to preempt and nothing stopping: skip the search (most waiting jobs, on a busy day).
  if (!anythingToFree(s, job.priority)) return null;
  const quotaDeficit = heldOf(s, job.teamId).notStopping + job.deviceCount - quotaOf(s, job.teamId);
  if (quotaDeficit <= 0) return bestIndexed(s, job, shapes, end, quotaOk);

  const team: Holding[] = [];
  let freeable = 0;
  for (const h of ledgerOf(s, job.teamId)) {
    if (!preemptibleBelow(h, job.priority)) continue;
    team.push(h);
    freeable += h.devices;
  }
  if (freeable < quotaDeficit) return null;
  const order = victimOrder(s);
  team.sort(order);
  const quota: QuotaToFree = { teamId: job.teamId, deficit: quotaDeficit, candidates: team };
  const forQuota = quotaVictims(s, quota);
  const teamWorkers = new Set<string | null>(team.map((h) => h.workerId));
  const quotaBlocked = quotaBlocks(s, job, end);
  let best: PreemptionPlan | null = null;
  for (const index of shapes) {
    if (index.shapes.length === 0) continue;
    devicePlansOf(s, index, job.priority);
    for (const shape of index.shapes) {
      let candidate: PreemptionPlan | null;
      if (teamWorkers.has(shape.worker.id) && holdsAny(shape, team)) candidate = victimsOn(s, job.priority, job.deviceCount, shape, order, quota);
      else {
        const forDevices = shape.devicePlans.get(job.priority)?.plan ?? null;
        if (!forDevices || (best && !combinedBeats(forQuota.cost, forDevices, best))) continue;
        candidate = combined(forQuota, forDevices, order);
      }
      if (candidate && (!best || comparePreemptions(candidate, best) < 0) && admissible(s, job, candidate, end, quotaOk, quotaBlocked)) best = candidate;
    }
  }
  return best;
}

/** Whether any of `holdings` holds a device of the shape. */
function holdsAny(shape: Shape, holdings: Holding[]): boolean {
  for (const slot of shape.matching) if (slot.holder !== null && holdings.includes(slot.holder)) return true;
  return false;
}

/** The team's victims for quota alone: Kueue's order until the deficit is covered, then dropped back as `victimsOn` does. */
function quotaVictims(s: State, quota: QuotaToFree): { victims: Holding[]; cost: number[] } {
  const victims: Holding[] = [];
  let got = 0;
  for (const h of quota.candidates) {
    if (got >= quota.deficit) break;
    victims.push(h);
    got += h.devices;
  }
  for (let k = victims.length - 1; k >= 0; k -= 1) {
    if (got - victims[k].devices >= quota.deficit) {
      got -= victims[k].devices;
      victims.splice(k, 1);
    }
  }
  return { victims, cost: victimsCost(s, victims, 0) };
}

/** The victims' part of a plan's cost: non-borrowing victims, the highest priority, how many, their devices; then free devices taken. */
function victimsCost(s: State, victims: Holding[], freeTaken: number): number[] {
  let nonBorrowing = 0;
  let highest = Number.NEGATIVE_INFINITY;
  let devices = 0;
  for (const v of victims) {
    if (isBorrowing(s, v.teamId) === null) nonBorrowing += 1;
    highest = Math.max(highest, v.priority);
    devices += v.devices;
  }
  return [nonBorrowing, highest, victims.length, devices, freeTaken];
}

function combinedCost(forQuota: { cost: number[] }, forDevices: PreemptionPlan): number[] {
  const [a, b] = [forQuota.cost, forDevices.cost];
  return [a[0] + b[0], Math.max(a[1], b[1]), a[2] + b[2], a[3] + b[3], b[4]];
}

/** The plan of both victims, in Kueue's order (as `victimsOn` adds them). */
function combined(forQuota: { victims: Holding[]; cost: number[] }, forDevices: PreemptionPlan, order: (a: Holding, b: Holding) => number): PreemptionPlan {
  const victims: Holding[] = [];
  let i = 0;
  let j = 0;
  const [a, b] = [forQuota.victims, forDevices.victims];
  while (i < a.length || j < b.length) victims.push(j >= b.length || (i < a.length && order(a[i], b[j]) < 0) ? a[i++] : b[j++]);
  return { shape: forDevices.shape, victims, chosen: forDevices.chosen, cost: combinedCost(forQuota, forDevices) };
}

/** Whether the plan of both victims would cost less than `best` (rule 6's order), without building it: most shapes lose on the first figures. */
function combinedBeats(forQuota: number[], forDevices: PreemptionPlan, best: PreemptionPlan): boolean {
  const [b, c] = [forDevices.cost, best.cost];
  const nonBorrowing = forQuota[0] + b[0];
  if (nonBorrowing !== c[0]) return nonBorrowing < c[0];
  const highest = Math.max(forQuota[1], b[1]);
  if (highest !== c[1]) return highest < c[1];
  const count = forQuota[2] + b[2];
  if (count !== c[2]) return count < c[2];
  const devices = forQuota[3] + b[3];
  if (devices !== c[3]) return devices < c[3];
  if (b[4] !== c[4]) return b[4] < c[4];
  return comparePlaces({ shape: forDevices.shape, left: 0 }, { shape: best.shape, left: 0 }) < 0;
}

/**
 * The best admissible plan of the indexes' victims heaps (stale entries dropped, inadmissible
 * ones kept). When taking the devices would delay the team's quota reservation unless some of
 * the team's own jobs are preempted, only plans with such victims can be admissible: those are
 * on the workers where the team has preemptible jobs, looked at there instead of the heaps.
 */
function bestIndexed(s: State, job: PlanQueuedJob, shapes: ShapeIndex[], end: number, quotaOk: boolean): PreemptionPlan | null {
  const quotaBlocked = quotaBlocks(s, job, end);
  let best: PreemptionPlan | null = null;
  if (quotaBlocked) {
    const workers = new Set<WorkerSlots>();
    for (const h of ledgerOf(s, job.teamId)) if (preemptibleBelow(h, job.priority) && h.workerId !== null) workers.add(workerOf(s, h.workerId));
    for (const index of shapes) {
      if (index.shapes.length === 0) continue;
      devicePlansOf(s, index, job.priority);
      for (const worker of workers) {
        for (const entry of worker.entries) {
          if (entry.index !== index) continue;
          const p = entry.shape.devicePlans.get(job.priority)?.plan ?? null;
          if (p && (!best || comparePreemptions(p, best) < 0) && admissible(s, job, p, end, quotaOk, quotaBlocked)) best = p;
        }
      }
    }
    return best;
  }
  for (const index of shapes) {
    if (index.shapes.length === 0) continue;
    const heap = devicePlansOf(s, index, job.priority);
    const passed: VictimsEntry[] = [];
    for (let top = heap.peek(); top; top = heap.peek()) {
      if (top.version !== top.plan.shape.victimsVersion) heap.pop();
      else if (best && comparePreemptions(top.plan, best) >= 0) break;
      else if (admissible(s, job, top.plan, end, quotaOk, quotaBlocked)) {
        best = top.plan;
        break;
      } else passed.push(heap.pop() as VictimsEntry);
    }
    for (const entry of passed) heap.push(entry);
  }
  return best;
}

/**
 * The index's shapes' plans for devices alone, for preemptors of `priority` (kept on each shape),
 * and their heap by cost; shapes changed since the last question are computed again first (a
 * shape changed many times in between is computed once).
 */
function devicePlansOf(s: State, index: ShapeIndex, priority: number): Heap<VictimsEntry> {
  let entry = index.victims.get(priority);
  if (!entry) {
    const heap = new Heap<VictimsEntry>((a, b) => comparePreemptions(a.plan, b.plan) < 0);
    const order = victimOrder(s);
    for (const shape of index.shapes) pushVictims(s, heap, shape, priority, index.deviceCount, order);
    index.victims.set(priority, (entry = { heap, seen: index.changed.length }));
  } else if (entry.seen < index.changed.length) {
    const order = victimOrder(s);
    for (let k = entry.seen; k < index.changed.length; k += 1) {
      const shape = index.changed[k];
      const record = shape.devicePlans.get(priority);
      if (record?.version === shape.victimsVersion) continue;
      // A team's borrowing that this priority cannot reach changed: the plan and its entry stand.
      if (record && record.heap === entry.heap && stillValid(shape, record.version, priority)) {
        record.version = shape.victimsVersion;
        if (record.entry) record.entry.version = shape.victimsVersion;
      } else pushVictims(s, entry.heap, shape, priority, index.deviceCount, order);
    }
    entry.seen = index.changed.length;
  }
  index.seenMax = Math.max(index.seenMax, entry.seen);
  return entry.heap;
}

function pushVictims(s: State, heap: Heap<VictimsEntry>, shape: Shape, priority: number, deviceCount: number, order: VictimOrder): void {
  // The plan depends on the worker's slots, on the priority only through which holders it may
  // preempt (those below it) and on whether their teams borrow; shapes that share it (SharedPlans)
  // compute it once per such state: preemptors of priorities with the same highest holder below
  // them, and the same again after a team that holds nothing it could stop starts borrowing.
  const shared = shape.shared;
  if (shared.victimsAt !== shape.worker.slotsVersion) {
    shared.plans.clear();
    shared.victimsAt = shape.worker.slotsVersion;
  }
  let reach = -1;
  let borrowers = 0;
  for (let i = 0; i < shape.matching.length; i += 1) {
    const h = shape.matching[i].holder;
    if (!preemptibleBelow(h, priority)) continue;
    reach = Math.max(reach, h.priority);
    if (order.borrows(h.teamId)) borrowers += 2 ** i;
  }
  const key = shape.matching.length <= 20 ? (reach + 1) * 2 ** 21 + borrowers : `${reach}:${borrowers}`;
  let plan = shared.plans.get(key);
  if (plan === undefined) shared.plans.set(key, (plan = victimsOn(s, priority, deviceCount, shape, order, null)));
  const last = shape.devicePlans.get(priority);
  // The same plan as the shape's entry in this heap (or none again): that entry stays, valid
  // again (its cost and so its place in the heap are the same), instead of a copy pushed beside it.
  if (last && last.heap === heap && samePlan(last.plan, plan)) {
    last.version = shape.victimsVersion;
    if (last.entry) last.entry.version = shape.victimsVersion;
    return;
  }
  if (plan && plan.shape !== shape) plan = { ...plan, shape };
  const entry = plan ? { plan, version: shape.victimsVersion } : null;
  if (last) {
    last.version = shape.victimsVersion;
    last.plan = plan;
    last.heap = heap;
    last.entry = entry;
  } else shape.devicePlans.set(priority, { version: shape.victimsVersion, plan, heap, entry });
  if (entry) heap.push(entry);
}

/** Whether two plans (of one shape, or of shapes sharing their plans) stop the same jobs and take the same devices at the same cost. */
function samePlan(a: PreemptionPlan | null, b: PreemptionPlan | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.victims.length !== b.victims.length || a.chosen.length !== b.chosen.length) return false;
  for (let i = 0; i < a.victims.length; i += 1) if (a.victims[i] !== b.victims[i]) return false;
  for (let i = 0; i < a.chosen.length; i += 1) if (a.chosen[i] !== b.chosen[i]) return false;
  for (let i = 0; i < a.cost.length; i += 1) if (a.cost[i] !== b.cost[i]) return false;
  return true;
}

/**
 * The worker's holders, or whether their teams borrow, changed: its shapes' victims are to be
 * computed again (their victimsVersion bumped; each put in its index's `changed`, when the index
 * has victims heaps and the shape is not there already past what they have taken in). `from`: the change matters only to preemptors above this
 * priority (a team's borrowing, to those that may stop its jobs there: kept as a flip, see
 * stillValid); -Infinity for any change of the slots.
 */
function refreshVictims(worker: WorkerSlots, from = Number.NEGATIVE_INFINITY): void {
  for (const { index, shape } of worker.entries) {
    shape.victimsVersion += 1;
    if (from === Number.NEGATIVE_INFINITY) {
      shape.generalAt = shape.victimsVersion;
      shape.flips.length = 0;
    } else shape.flips.push({ version: shape.victimsVersion, from });
    if (index.victims.size > 0 && shape.changedAt < index.seenMax) {
      shape.changedAt = index.changed.length;
      index.changed.push(shape);
    }
  }
}

/** Whether a shape's plan for preemptors of `priority`, valid at victimsVersion `version`, is still: only borrowing changed since, of teams it may not stop. */
function stillValid(shape: Shape, version: number, priority: number): boolean {
  if (version < shape.generalAt) return false;
  // Newest first, down to the version the plan is of: usually one or two.
  for (let i = shape.flips.length - 1; i >= 0 && shape.flips[i].version > version; i -= 1) if (shape.flips[i].from < priority) return false;
  return true;
}

/** A team that started or stopped borrowing: the victims' order and cost change wherever it has jobs that could be stopped. */
function refreshTeamVictims(s: State, teamId: string): void {
  s.refreshedTeams.add(teamId);
  // Per worker, the lowest priority of the team's jobs there that a preemptor could stop.
  const lowest = new Map<WorkerSlots, number>();
  for (const h of ledgerOf(s, teamId)) {
    if (h.source !== 'running' || h.stopping) continue;
    const worker = h.workerId === null ? undefined : s.workerById.get(h.workerId);
    if (worker) lowest.set(worker, Math.min(lowest.get(worker) ?? Number.POSITIVE_INFINITY, h.priority));
  }
  for (const [worker, priority] of lowest) refreshVictims(worker, priority);
}

/** The quota a preemptor must free besides devices: its team's deficit and its team's preemptible jobs, in Kueue's order. */
interface QuotaToFree {
  teamId: string;
  deficit: number;
  candidates: Holding[];
}

const NO_HOLDINGS: Holding[] = [];

/**
 * Rule 6 on one shape: Kueue's victims there and the plan's cost, or null when they cannot make
 * room; whether the plan delays a reservation is `admissible`'s question. Written with plain
 * loops over the worker's few devices: it runs for every shape a preemptor could use.
 */
function victimsOn(
  s: State,
  priority: number,
  deviceCount: number,
  shape: Shape,
  order: (a: Holding, b: Holding) => number,
  quota: QuotaToFree | null,
): PreemptionPlan | null {
  // Enough devices free, stopping or preemptible on this worker at all? (Most busy workers are not.)
  let available = 0;
  let reachable = 0;
  for (const slot of shape.matching) {
    const h = slot.holder;
    if (h === null || (h.source === 'running' && h.stopping)) available += 1;
    else if (preemptibleBelow(h, priority)) reachable += 1;
  }
  if (available + reachable < deviceCount) return null;

  const deviceDeficit = deviceCount - available;
  const quotaDeficit = quota?.deficit ?? 0;
  const local: Holding[] = [];
  if (deviceDeficit > 0) {
    for (const slot of shape.matching) {
      const h = slot.holder;
      if (preemptibleBelow(h, priority) && !local.includes(h)) local.push(h);
    }
    if (local.length > 1) local.sort(order);
  }
  const team = quota?.candidates ?? NO_HOLDINGS;

  // Add in Kueue's order (the worker's candidates and the team's, merged), skipping candidates
  // that help with nothing still missing.
  const victims: Holding[] = [];
  const onWorker: number[] = [];
  const ofTeam: number[] = [];
  let gotDevices = 0;
  let gotQuota = 0;
  let i = 0;
  let j = 0;
  while (gotDevices < deviceDeficit || gotQuota < quotaDeficit) {
    if (j < team.length && local.includes(team[j])) {
      j += 1;
      continue;
    }
    let h: Holding;
    if (i < local.length && (j >= team.length || order(local[i], team[j]) < 0)) h = local[i++];
    else if (j < team.length) h = team[j++];
    else break;
    const on = h.workerId === shape.worker.id ? heldOn(shape.matching, h) : 0;
    const of = quota !== null && h.teamId === quota.teamId ? h.devices : 0;
    if ((deviceDeficit - gotDevices > 0 && on > 0) || (quotaDeficit - gotQuota > 0 && of > 0)) {
      victims.push(h);
      onWorker.push(on);
      ofTeam.push(of);
      gotDevices += on;
      gotQuota += of;
    }
  }
  if (gotDevices < deviceDeficit || gotQuota < quotaDeficit) return null;
  // Then drop, last added first, every victim the job fits without.
  for (let k = victims.length - 1; k >= 0; k -= 1) {
    if (gotDevices - onWorker[k] >= deviceDeficit && gotQuota - ofTeam[k] >= quotaDeficit) {
      gotDevices -= onWorker[k];
      gotQuota -= ofTeam[k];
      victims.splice(k, 1);
      onWorker.splice(k, 1);
      ofTeam.splice(k, 1);
    }
  }

  const chosen = shape.matching
    .filter((slot) => slot.holder === null || (slot.holder.source === 'running' && slot.holder.stopping) || victims.includes(slot.holder))
    .sort((a, b) => slotRank(a) - slotRank(b) || a.index - b.index)
    .slice(0, deviceCount);
  let freeTaken = 0;
  for (const slot of chosen) if (slot.holder === null) freeTaken += 1;
  // Free devices stay free for others when the victims' own devices suffice.
  return { shape, victims, chosen, cost: victimsCost(s, victims, freeTaken) };
}

/** Free devices first, then those of jobs stopping, then the victims'. */
function slotRank(slot: Slot): number {
  return slot.holder === null ? 0 : slot.holder.stopping ? 1 : 2;
}

/** How many of `slots` `h` holds. */
function heldOn(slots: Slot[], h: Holding): number {
  let n = 0;
  for (const slot of slots) if (slot.holder === h) n += 1;
  return n;
}

/**
 * Whether the plan may be carried out for this job: it delays no reservation, and is not a
 * placement in disguise. `quotaBlocked`: whether taking the devices delays a quota reservation of
 * the team when none of its jobs is preempted (the same for every plan without the team's jobs).
 */
function admissible(s: State, job: PlanQueuedJob, p: PreemptionPlan, end: number, quotaOk: boolean, quotaBlocked: boolean): boolean {
  // All free, no victims and room in the quota: that was a placement, refused for a reservation.
  if (p.victims.length === 0 && quotaOk && p.chosen.every((slot) => slot.holder === null)) return false;
  if (s.deviceReservations.has(p.shape.worker.id) && deviceConflict(s, p.shape.worker, p.chosen, end, new Set(p.victims))) return false;
  const released = new Set<string>();
  for (const v of p.victims) if (v.teamId === job.teamId) released.add(v.jobId);
  if (released.size === 0) return !quotaBlocked;
  return quotaConflict(s, job.teamId, job.deviceCount, end, released) === null;
}

/** Whether taking the job's devices until `end` delays a quota reservation of its team, no job of it preempted. */
function quotaBlocks(s: State, job: PlanQueuedJob, end: number): boolean {
  return s.quotaReservations.has(job.teamId) && quotaConflict(s, job.teamId, job.deviceCount, end) !== null;
}

/** Whether any holding is stopping or running below `priority` (holdings only ever start stopping within a plan). */
function anythingToFree(s: State, priority: number): boolean {
  return s.stoppingCount > 0 || s.lowestRunning < priority;
}

function comparePreemptions(a: PreemptionPlan, b: PreemptionPlan): number {
  for (let i = 0; i < a.cost.length; i += 1) if (a.cost[i] !== b.cost[i]) return a.cost[i] - b.cost[i];
  return comparePlaces({ shape: a.shape, left: 0 }, { shape: b.shape, left: 0 });
}

function applyPreemption(s: State, job: PlanQueuedJob, p: PreemptionPlan, out: Plan): void {
  const stoppingBefore = [
    ...new Set(p.chosen.flatMap((slot) => (slot.holder?.stopping ? [slot.holder.jobId] : []))),
  ];
  for (const victim of p.victims) {
    victim.stopping = true;
    s.quotaAnswers.delete(victim.teamId);
    s.stoppingCount += 1;
    heldOf(s, victim.teamId).notStopping -= victim.devices;
    const team = { id: victim.teamId, borrowing: isBorrowing(s, victim.teamId) };
    const preemption: Preemption = {
      jobId: victim.jobId,
      forJobId: job.id,
      workerId: victim.workerId,
      reason: preemptionReason({ id: victim.jobId, priority: victim.priority }, job, team),
    };
    out.preemptions.push(preemption);
    const worker = victim.workerId === null ? undefined : s.workerById.get(victim.workerId);
    if (worker) touch(s, worker);
  }
  const holding = hold(s, job, p.shape.worker.id, 'held', job.deviceCount, endOf(s.now, job.timeLimitSeconds));
  for (const slot of p.chosen) slot.holder = holding;
  touch(s, p.shape.worker);

  const victims = p.victims.map((v) => ({ id: v.jobId, priority: v.priority }));
  wait(out, job, 'PREEMPTING', preemptingReason(p.shape.worker.id, victims, stoppingBefore), {
    target: { workerId: p.shape.worker.id, kind: p.shape.kind, deviceIndexes: p.chosen.map((slot) => slot.index) },
  });
}
