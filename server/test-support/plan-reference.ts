// The planner as it was before its rework for clusters at scale (issue 20), kept unchanged as the
// reference that the fast planner (server/scheduler/plan.ts) must agree with decision for decision:
// plan.reference.test.ts compares the two on thousands of random clusters. Its rules are those of
// plan.ts's header; its data structures scan every worker and job for each decision.
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
 */
import type {
  DeviceKind,
  Placement,
  Plan,
  PlanInput,
  PlanQueuedJob,
  Preemption,
  Waiting,
  WaitCode,
  WorkerState,
} from '../scheduler/types';
import { DEFAULT_QUOTA } from '../scheduler/admission';
import { kindOf } from '../scheduler/queue-window';
import { delays, earliestStart, NEVER, type Pool, startOf } from '../scheduler/pool';
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
} from '../scheduler/reasons';

const NONE: ReadonlySet<never> = new Set();
const KIND_ORDER: readonly DeviceKind[] = ['CUDA', 'WEBGPU', 'CPU', 'WASM'];

// ───────────────────────────── working state ─────────────────────────────

/** Who holds devices (and quota): a running job, a job placed by this plan, or a preemptor's hold. */
interface Holding {
  source: 'running' | 'placed' | 'held';
  jobId: string;
  teamId: string;
  ownerId: string;
  priority: number;
  workerId: string | null;
  startedAt: number;
  devices: number;
  /** When its devices are expected back (NEVER: unknown). */
  release: number;
  stopping: boolean;
}

interface Slot {
  index: number;
  kind: DeviceKind;
  memoryBytes: number;
  holder: Holding | null;
}

interface WorkerSlots {
  id: string;
  name?: string;
  teamId: string | null;
  state: WorkerState;
  slots: Slot[];
}

type KindCount = Record<DeviceKind, number>;

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
  quotas: Map<string, number>;
  /** Per team: everything counted against its quota. */
  ledger: Map<string, Holding[]>;
  sharedTotal: KindCount;
  teamPoolTotal: Map<string, KindCount>;
  sharedUse: Map<string, KindCount>;
  userUse: Map<string, KindCount>;
  /** Shares by team and by user, dropped when their use changes: ordering compares them often. */
  shares: Map<string, number>;
  activeTeams: number;
  deviceReservations: Map<string, DeviceReservation[]>;
  quotaReservations: Map<string, QuotaReservation[]>;
  /** By kind (queue-window.ts): how the first job of the kind that waited for devices or quota waits (rule 5). */
  waitedKinds: Map<string, Waiting>;
  /**
   * Memos for the thousand jobs a busy queue asks about with the same few requests: the shapes a
   * request can take (workers and devices do not change within a plan), and the best device
   * reservation for a set of shapes, valid while `holders` (bumped whenever a slot's holder or a
   * holder's stopping changes) stays the same.
   */
  shapes: Map<string, Shape[]>;
  bestReservation: Map<Shape[], { holders: number; best: ReservationChoice }>;
  /** anythingToFree's answers, by `holders` and priority. */
  toFree: Map<string, boolean>;
  holders: number;
}

const zero = (): KindCount => ({ CUDA: 0, WEBGPU: 0, CPU: 0, WASM: 0 });
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const userKey = (teamId: string, ownerId: string): string => `${teamId}\u0000${ownerId}`;

function bump(map: Map<string, KindCount>, key: string, kind: DeviceKind, by: number): void {
  const counts = map.get(key) ?? zero();
  counts[kind] += by;
  map.set(key, counts);
}

function endOf(startedAt: number, timeLimitSeconds: number | null): number {
  return timeLimitSeconds === null ? NEVER : startedAt + timeLimitSeconds * 1000;
}

function buildState(input: PlanInput): State {
  const { now } = input;
  const workers: WorkerSlots[] = [...input.workers]
    .sort((a, b) => cmp(a.id, b.id))
    .map((w) => ({
      id: w.id,
      name: w.name,
      teamId: w.teamId,
      state: w.state,
      slots: [...w.devices]
        .sort((a, b) => a.index - b.index)
        .map((d) => ({ index: d.index, kind: d.kind, memoryBytes: d.memoryBytes, holder: null })),
    }));
  const byId = new Map(workers.map((w) => [w.id, w]));

  const s: State = {
    now,
    workers,
    quotas: new Map(input.quotas.map((q) => [q.teamId, q.maxConcurrentDevices])),
    ledger: new Map(),
    sharedTotal: zero(),
    teamPoolTotal: new Map(),
    sharedUse: new Map(),
    userUse: new Map(),
    shares: new Map(),
    activeTeams: new Set([...input.queued, ...input.running].map((j) => j.teamId)).size,
    deviceReservations: new Map(),
    quotaReservations: new Map(),
    waitedKinds: new Map(),
    shapes: new Map(),
    bestReservation: new Map(),
    toFree: new Map(),
    holders: 0,
  };

  // Capacity for shares: workers that exist and hold or take work.
  for (const w of workers) {
    if (w.state !== 'ONLINE' && w.state !== 'DRAINING') continue;
    for (const slot of w.slots) {
      if (w.teamId === null) s.sharedTotal[slot.kind] += 1;
      else bump(s.teamPoolTotal, w.teamId, slot.kind, 1);
    }
  }

  for (const job of [...input.running].sort((a, b) => cmp(a.id, b.id))) {
    const holding: Holding = {
      source: 'running',
      jobId: job.id,
      teamId: job.teamId,
      ownerId: job.ownerId,
      priority: job.priority,
      workerId: job.workerId,
      startedAt: job.startedAt,
      devices: job.deviceIndexes.length,
      release: Math.max(now, endOf(job.startedAt, job.timeLimitSeconds)),
      stopping: job.stopping,
    };
    ledgerOf(s, job.teamId).push(holding);
    const worker = job.workerId === null ? undefined : byId.get(job.workerId);
    for (const index of job.deviceIndexes) {
      const slot = worker?.slots.find((d) => d.index === index);
      if (!worker || !slot) continue;
      slot.holder = holding;
      countUse(s, worker, slot.kind, holding, 1);
    }
  }
  return s;
}

function ledgerOf(s: State, teamId: string): Holding[] {
  let list = s.ledger.get(teamId);
  if (!list) s.ledger.set(teamId, (list = []));
  return list;
}

function countUse(s: State, worker: WorkerSlots, kind: DeviceKind, h: Holding, by: number): void {
  if (worker.state !== 'ONLINE' && worker.state !== 'DRAINING') return;
  if (worker.teamId === null) bump(s.sharedUse, h.teamId, kind, by);
  bump(s.userUse, userKey(h.teamId, h.ownerId), kind, by);
  s.shares.delete(`team:${h.teamId}`);
  s.shares.delete(`user:${userKey(h.teamId, h.ownerId)}`);
}

const workerOf = (s: State, id: string): WorkerSlots => s.workers.find((w) => w.id === id) as WorkerSlots;
const quotaOf = (s: State, teamId: string): number => s.quotas.get(teamId) ?? DEFAULT_QUOTA.maxConcurrentDevices;
const heldBy = (s: State, teamId: string): number => ledgerOf(s, teamId).reduce((n, h) => n + h.devices, 0);

// ───────────────────────────── fair share ─────────────────────────────

function dominantShare(use: KindCount | undefined, total: KindCount): number {
  if (!use) return 0;
  let share = 0;
  for (const kind of KIND_ORDER) if (total[kind] > 0) share = Math.max(share, use[kind] / total[kind]);
  return share;
}

function cachedShare(s: State, key: string, compute: () => number): number {
  let share = s.shares.get(key);
  if (share === undefined) s.shares.set(key, (share = compute()));
  return share;
}

function teamShare(s: State, teamId: string): number {
  return cachedShare(s, `team:${teamId}`, () => dominantShare(s.sharedUse.get(teamId), s.sharedTotal));
}

function userShare(s: State, teamId: string, ownerId: string): number {
  const key = userKey(teamId, ownerId);
  return cachedShare(s, `user:${key}`, () => {
    const own = s.teamPoolTotal.get(teamId) ?? zero();
    const total = zero();
    for (const kind of KIND_ORDER) total[kind] = own[kind] + s.sharedTotal[kind];
    return dominantShare(s.userUse.get(key), total);
  });
}

/** Rule 1: priority, then team share, then user share, then age, then id. */
function compareJobs(s: State, a: PlanQueuedJob, b: PlanQueuedJob): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  const teams = teamShare(s, a.teamId) - teamShare(s, b.teamId);
  if (teams !== 0) return teams;
  const users = userShare(s, a.teamId, a.ownerId) - userShare(s, b.teamId, b.ownerId);
  if (users !== 0) return users;
  if (a.queuedAt !== b.queuedAt) return a.queuedAt - b.queuedAt;
  return cmp(a.id, b.id);
}

/**
 * The queue in rule 1's order, as shares change. A user's own jobs keep a fixed order (their
 * shares are the same), so only the heads of the users' queues need comparing at each step.
 */
function* inOrder(s: State, queued: PlanQueuedJob[]): Generator<PlanQueuedJob> {
  const byUser = new Map<string, PlanQueuedJob[]>();
  for (const job of queued) {
    const key = userKey(job.teamId, job.ownerId);
    const jobs = byUser.get(key);
    if (jobs) jobs.push(job);
    else byUser.set(key, [job]);
  }
  const queues = [...byUser.values()].map((jobs) => ({ jobs: jobs.sort((a, b) => compareJobs(s, a, b)), next: 0 }));
  for (;;) {
    let best: (typeof queues)[number] | null = null;
    for (const q of queues) {
      if (q.next === q.jobs.length) continue;
      if (!best || compareJobs(s, q.jobs[q.next], best.jobs[best.next]) < 0) best = q;
    }
    if (!best) return;
    best.next += 1;
    yield best.jobs[best.next - 1];
  }
}

/** Holding more than its quota, or more than an equal share of the shared pool. */
function isBorrowing(s: State, teamId: string): 'quota' | 'share' | null {
  const held = ledgerOf(s, teamId)
    .filter((h) => h.source !== 'held')
    .reduce((n, h) => n + h.devices, 0);
  if (held > quotaOf(s, teamId)) return 'quota';
  if (s.activeTeams > 0 && teamShare(s, teamId) > 1 / s.activeTeams) return 'share';
  return null;
}

// ───────────────────────────── devices and estimates ─────────────────────────────

function fits(slot: Slot, kind: DeviceKind, memoryBytes: number): boolean {
  return slot.kind === kind && slot.memoryBytes >= memoryBytes;
}

function releaseOf(s: State, slot: Slot): number {
  if (slot.holder === null || slot.holder.stopping) return s.now;
  return slot.holder.release;
}

/** A worker and device kind that could ever hold the job's gang. */
interface Shape {
  worker: WorkerSlots;
  kind: DeviceKind;
  matching: Slot[];
}

function shapesFor(s: State, job: PlanQueuedJob): Shape[] {
  const key = `${job.teamId}\u0000${job.deviceKind}\u0000${job.memoryBytes}\u0000${job.deviceCount}`;
  let shapes = s.shapes.get(key);
  if (!shapes) s.shapes.set(key, (shapes = computeShapes(s, job)));
  return shapes;
}

function computeShapes(s: State, job: PlanQueuedJob, state: WorkerState = 'ONLINE'): Shape[] {
  const shapes: Shape[] = [];
  for (const worker of s.workers) {
    if (worker.state !== state) continue;
    if (worker.teamId !== null && worker.teamId !== job.teamId) continue;
    for (const kind of job.deviceKind ? [job.deviceKind] : KIND_ORDER) {
      const matching = worker.slots.filter((slot) => fits(slot, kind, job.memoryBytes));
      if (matching.length >= job.deviceCount) shapes.push({ worker, kind, matching });
    }
  }
  return shapes;
}

/** The draining workers that would take a job no online one can, by name: the reason names them (an admin may resume one). */
function drainingThatFit(s: State, job: PlanQueuedJob): string[] {
  return [...new Set(computeShapes(s, job, 'DRAINING').map((shape) => shape.worker.name ?? shape.worker.id))];
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

/** The first quota reservation of the team that taking `units` until `end` would delay. */
function quotaConflict(s: State, teamId: string, units: number, end: number, released?: ReadonlySet<string>): QuotaReservation | null {
  for (const r of s.quotaReservations.get(teamId) ?? []) {
    if (delays(s.now, quotaPool(s, teamId, released), r.job.deviceCount, { units, release: end })) return r;
  }
  return null;
}

/** The wait behind reservation `r`, with the earliest its job could start (the reason's hint). */
function behindWords(s: State, job: PlanQueuedJob, r: Reservation): string {
  const pool = r.type === 'devices' ? devicePool(s, workerOf(s, r.workerId), r, NONE) : quotaPool(s, r.job.teamId);
  return behindReason(job, r, earliestStart(s.now, pool, r.job.deviceCount), s.now);
}

// ───────────────────────────── the plan ─────────────────────────────

export function referencePlan(input: PlanInput): Plan {
  const s = buildState(input);
  const out: Plan = { placements: [], preemptions: [], waiting: [] };
  for (const job of inOrder(s, input.queued)) decide(s, job, out);
  return out;
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
  if (shapes.length === 0) return wait(out, job, 'NO_WORKER', noWorkerReason(job, drainingThatFit(s, job)));
  // Rule 5: as an earlier job of its kind that could not start either waits.
  const kind = kindOf(job, s.now);
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
function placeWithinQuota(s: State, job: PlanQueuedJob, shapes: Shape[], end: number): PlaceAttempt {
  const quotaBlocker = quotaConflict(s, job.teamId, job.deviceCount, end);
  if (quotaBlocker) return { blocker: { type: 'quota', ...quotaBlocker } };
  return tryPlace(s, job, shapes, end);
}

/** Rule 4 and 5: the best worker with enough free matching devices that delays no reservation. */
function tryPlace(s: State, job: PlanQueuedJob, shapes: Shape[], end: number): PlaceAttempt {
  let blocker: Reservation | null = null;
  let best: { shape: Shape; chosen: Slot[]; left: number; backfill: DeviceReservation | null } | null = null;
  for (const shape of shapes) {
    // Counted before anything is allocated: on a busy pool most workers have nothing free.
    let freeCount = 0;
    for (const slot of shape.matching) if (slot.holder === null) freeCount += 1;
    if (freeCount < job.deviceCount) continue;
    const free = shape.matching.filter((slot) => slot.holder === null);
    // Devices no reservation could use go first, so a backfill disturbs as little as possible.
    const reservations = s.deviceReservations.get(shape.worker.id) ?? [];
    const contested = (slot: Slot) => reservations.some((r) => fits(slot, r.kind, r.job.memoryBytes));
    const chosen = [...free]
      .sort((a, b) => Number(contested(a)) - Number(contested(b)) || a.index - b.index)
      .slice(0, job.deviceCount);
    const conflict = deviceConflict(s, shape.worker, chosen, end);
    if (conflict) {
      blocker ??= { type: 'devices', ...conflict };
      continue;
    }
    const candidate = {
      shape,
      chosen,
      left: free.length - job.deviceCount,
      backfill: reservations.find((r) => chosen.some((slot) => fits(slot, r.kind, r.job.memoryBytes))) ?? null,
    };
    if (!best || comparePlaces(candidate, best) < 0) best = candidate;
  }
  if (!best) return { blocker };

  const { shape, chosen } = best;
  const holding = hold(s, job, shape.worker.id, 'placed', chosen.length, end);
  for (const slot of chosen) {
    slot.holder = holding;
    countUse(s, shape.worker, slot.kind, holding, 1);
  }
  s.holders += 1;
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
  const kinds = KIND_ORDER.indexOf(a.shape.kind) - KIND_ORDER.indexOf(b.shape.kind);
  if (kinds !== 0) return kinds;
  return cmp(a.shape.worker.id, b.shape.worker.id);
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
  ledgerOf(s, job.teamId).push(holding);
  return holding;
}

// ── reserving ──

/** Rule 5: the job reserves its team's quota from when it frees up; answers that time. */
function reserveQuota(s: State, job: PlanQueuedJob): number {
  const startAt = startOf(s.now, quotaPool(s, job.teamId), job.deviceCount);
  const list = s.quotaReservations.get(job.teamId) ?? [];
  list.push({ job, startAt });
  s.quotaReservations.set(job.teamId, list);
  return startAt;
}

type ReservationChoice = { shape: Shape; startAt: number; unknown: number; slots: Slot[] };

function reserveDevices(s: State, job: PlanQueuedJob, shapes: Shape[]): DeviceReservation & { deviceIndexes: number[] } {
  // The choice reads only the slots' holders, so it holds for every job with these shapes until one changes.
  const memo = s.bestReservation.get(shapes);
  const best = memo?.holders === s.holders ? memo.best : bestReservation(s, job, shapes);
  s.bestReservation.set(shapes, { holders: s.holders, best });
  const { shape, startAt, slots } = best;
  const reservation: DeviceReservation = { job, workerId: shape.worker.id, kind: shape.kind, startAt };
  const list = s.deviceReservations.get(shape.worker.id) ?? [];
  list.push(reservation);
  s.deviceReservations.set(shape.worker.id, list);
  return { ...reservation, deviceIndexes: slots.map((slot) => slot.index).sort((a, b) => a - b) };
}

function bestReservation(s: State, job: PlanQueuedJob, shapes: Shape[]): ReservationChoice {
  let best: ReservationChoice | null = null;
  for (const shape of shapes) {
    const slots = [...shape.matching]
      .sort((a, b) => releaseOf(s, a) - releaseOf(s, b) || a.index - b.index)
      .slice(0, job.deviceCount);
    const startAt = releaseOf(s, slots[slots.length - 1]);
    const unknown = slots.filter((slot) => releaseOf(s, slot) === NEVER).length;
    const better =
      !best ||
      startAt < best.startAt ||
      (startAt === best.startAt && (unknown < best.unknown || (unknown === best.unknown && comparePlaces({ shape, left: 0 }, { shape: best.shape, left: 0 }) < 0)));
    if (better) best = { shape, startAt, unknown, slots };
  }
  // shapesFor returned at least one shape, so best is set.
  return best as ReservationChoice;
}

// ── preempting ──

interface PreemptionPlan {
  shape: Shape;
  victims: Holding[];
  chosen: Slot[];
  cost: number[];
}

/** Kueue's candidate order: borrowers, then lowest priority, then most recently started. */
function victimOrder(s: State): (a: Holding, b: Holding) => number {
  const borrowing = new Map<string, boolean>();
  const borrows = (teamId: string) => {
    if (!borrowing.has(teamId)) borrowing.set(teamId, isBorrowing(s, teamId) !== null);
    return borrowing.get(teamId) as boolean;
  };
  return (a, b) =>
    Number(borrows(b.teamId)) - Number(borrows(a.teamId)) ||
    a.priority - b.priority ||
    b.startedAt - a.startedAt ||
    cmp(a.jobId, b.jobId);
}

/** Rule 6: the cheapest way to free room for the job on one worker, or null. */
function tryPreempt(s: State, job: PlanQueuedJob, shapes: Shape[], end: number, quotaOk: boolean): PreemptionPlan | null {
  const preemptible = (h: Holding | null): h is Holding =>
    h !== null && h.source === 'running' && !h.stopping && h.priority < job.priority;
  // Nothing to preempt and nothing stopping: skip the search (most waiting jobs, on a busy day).
  if (!anythingToFree(s, job.priority)) return null;
  const quotaDeficit =
    ledgerOf(s, job.teamId).reduce((n, h) => (h.stopping ? n : n + h.devices), 0) + job.deviceCount - quotaOf(s, job.teamId);
  const order = victimOrder(s);

  let best: PreemptionPlan | null = null;
  for (const shape of shapes) {
    const available = shape.matching.filter((slot) => slot.holder === null || (slot.holder.source === 'running' && slot.holder.stopping));
    const deviceDeficit = job.deviceCount - available.length;
    const candidates = new Set<Holding>();
    if (deviceDeficit > 0) for (const slot of shape.matching) if (preemptible(slot.holder)) candidates.add(slot.holder);
    if (quotaDeficit > 0) for (const h of ledgerOf(s, job.teamId)) if (preemptible(h)) candidates.add(h);

    const onWorker = (h: Holding) => shape.matching.filter((slot) => slot.holder === h).length;
    const ofTeam = (h: Holding) => (h.teamId === job.teamId ? h.devices : 0);
    const enough = (set: Holding[]) =>
      set.reduce((n, h) => n + onWorker(h), 0) >= deviceDeficit && set.reduce((n, h) => n + ofTeam(h), 0) >= quotaDeficit;

    // Add in Kueue's order, skipping candidates that help with nothing still missing.
    const victims: Holding[] = [];
    for (const h of [...candidates].sort(order)) {
      if (enough(victims)) break;
      const devicesShort = deviceDeficit - victims.reduce((n, v) => n + onWorker(v), 0) > 0;
      const quotaShort = quotaDeficit - victims.reduce((n, v) => n + ofTeam(v), 0) > 0;
      if ((devicesShort && onWorker(h) > 0) || (quotaShort && ofTeam(h) > 0)) victims.push(h);
    }
    if (!enough(victims)) continue;
    // Then drop, last added first, every victim the job fits without.
    for (let i = victims.length - 1; i >= 0; i -= 1) {
      const without = victims.filter((_, j) => j !== i);
      if (enough(without)) victims.splice(i, 1);
    }

    const rank = (slot: Slot) => (slot.holder === null ? 0 : slot.holder.stopping ? 1 : 2);
    const chosen = shape.matching
      .filter((slot) => available.includes(slot) || victims.includes(slot.holder as Holding))
      .sort((a, b) => rank(a) - rank(b) || a.index - b.index)
      .slice(0, job.deviceCount);
    // All free, no victims and room in the quota: that was a placement, refused for a reservation.
    if (victims.length === 0 && quotaOk && chosen.every((slot) => slot.holder === null)) continue;
    if (deviceConflict(s, shape.worker, chosen, end, new Set(victims))) continue;
    const released = new Set(victims.filter((v) => v.teamId === job.teamId).map((v) => v.jobId));
    if (quotaConflict(s, job.teamId, job.deviceCount, end, released)) continue;

    const candidate: PreemptionPlan = {
      shape,
      victims,
      chosen,
      cost: [
        victims.filter((v) => isBorrowing(s, v.teamId) === null).length,
        Math.max(Number.NEGATIVE_INFINITY, ...victims.map((v) => v.priority)),
        victims.length,
        victims.reduce((n, v) => n + v.devices, 0),
        // Free devices stay free for others when the victims' own devices suffice.
        chosen.filter((slot) => slot.holder === null).length,
      ],
    };
    if (!best || comparePreemptions(candidate, best) < 0) best = candidate;
  }
  return best;
}

/**
 * Whether any holding is stopping or running below `priority`. It changes only with stopping
 * (`holders` is bumped then; placed and held holdings never count), so it is kept per priority.
 */
function anythingToFree(s: State, priority: number): boolean {
  const key = `${s.holders}:${priority}`;
  let answer = s.toFree.get(key);
  if (answer === undefined) {
    answer = [...s.ledger.values()].some((list) => list.some((h) => h.stopping || (h.source === 'running' && h.priority < priority)));
    s.toFree.set(key, answer);
  }
  return answer;
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
    s.holders += 1;
    const team = { id: victim.teamId, borrowing: isBorrowing(s, victim.teamId) };
    const preemption: Preemption = {
      jobId: victim.jobId,
      forJobId: job.id,
      workerId: victim.workerId,
      reason: preemptionReason({ id: victim.jobId, priority: victim.priority }, job, team),
    };
    out.preemptions.push(preemption);
  }
  const holding = hold(s, job, p.shape.worker.id, 'held', job.deviceCount, endOf(s.now, job.timeLimitSeconds));
  for (const slot of p.chosen) slot.holder = holding;
  s.holders += 1;

  const victims = p.victims.map((v) => ({ id: v.jobId, priority: v.priority }));
  wait(out, job, 'PREEMPTING', preemptingReason(p.shape.worker.id, victims, stoppingBefore), {
    target: { workerId: p.shape.worker.id, kind: p.shape.kind, deviceIndexes: p.chosen.map((slot) => slot.index) },
  });
}
