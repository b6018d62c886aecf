/**
 * What the planner (plan.ts) keeps from one round to the next (issue 20, incremental rounds), and
 * the structures it keeps: the cluster (the workers, their slots and who holds them), the shape
 * indexes and their entries, and the running jobs' holdings. plan.ts builds a round's state over
 * a Kept and updates it (placing, preempting, refreshing what changed: refreshChanged, which
 * needs plan.ts's round state, stays there). The types of what is kept live here, not in plan.ts,
 * because Kept is made of them and the lint's no-circular rule counts type-only imports: plan.ts
 * imports this module, never the other way round.
 */
import type { DeviceKind, PlanInput, PlanRunningJob, WorkerState } from './types';
import type { Heap } from './heap';
import { NEVER } from './pool';

// ───────────────────────────── the cluster and its holders ─────────────────────────────

/** Who holds devices (and quota): a running job, a job placed by this plan, or a preemptor's hold. */
export interface Holding {
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

export interface Slot {
  index: number;
  kind: DeviceKind;
  memoryBytes: number;
  holder: Holding | null;
}

export interface WorkerSlots {
  id: string;
  name?: string;
  teamId: string | null;
  state: WorkerState;
  slots: Slot[];
  /** Its place in worker id order. */
  order: number;
  /** The indexes' entries for this worker's shapes, updated when its slots change (`touch`). */
  entries: { index: ShapeIndex; shape: Shape }[];
  /** Its slots' holders when the round began (a Planner's next round compares them: Kept). */
  startHolders: (Holding | null)[];
  /** Bumped when its slots change (`touch`): what `shared` is of. */
  slotsVersion: number;
  /** By matching devices and gang size: what its shapes of that sort share. */
  shared: Map<string, SharedPlans>;
}

/**
 * What a worker's shapes with the same matching devices and gang size share, whatever request
 * they index (a kind or any, a memory at or below the devices'): their reservation and their
 * victims for each preemptor priority are the same, only the shape they name differs. So each is
 * computed once per change of the worker, not once per index.
 */
interface SharedPlans {
  reservationAt: number;
  reservation: ReservationChoice | null;
  /** The worker's slotsVersion the plans are of. */
  victimsAt: number;
  /** By the highest priority of a holder the preemptor may stop (-1: none) and which of those borrow (pushVictims). */
  plans: Map<number | string, PreemptionPlan | null>;
}

export type KindCount = Record<DeviceKind, number>;

export const zero = (): KindCount => ({ CUDA: 0, WEBGPU: 0, CPU: 0, WASM: 0 });
export const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export function bump(map: Map<string, KindCount>, key: string, kind: DeviceKind, by: number): void {
  const counts = map.get(key) ?? zero();
  counts[kind] += by;
  map.set(key, counts);
}

export function endOf(startedAt: number, timeLimitSeconds: number | null): number {
  return timeLimitSeconds === null ? NEVER : startedAt + timeLimitSeconds * 1000;
}

/** The workers as the planner indexes them: rebuilt when a worker, its state or its devices change, else kept between a Planner's rounds. */
interface Cluster {
  workers: WorkerSlots[];
  workerById: Map<string, WorkerSlots>;
  /** Where a running job's devices are looked up: of workers sharing an id (never in a consistent database), the last in id order. */
  lastById: Map<string, WorkerSlots>;
  onlineByPool: Map<string | null, WorkerSlots[]>;
  sharedTotal: KindCount;
  teamPoolTotal: Map<string, KindCount>;
}

function buildCluster(input: Pick<PlanInput, 'workers'>): Cluster {
  const workers: WorkerSlots[] = [...input.workers]
    .sort((a, b) => cmp(a.id, b.id))
    .map((w, order) => ({
      id: w.id,
      name: w.name,
      teamId: w.teamId,
      state: w.state,
      order,
      entries: [],
      startHolders: [],
      slotsVersion: 0,
      shared: new Map(),
      slots: [...w.devices]
        .sort((a, b) => a.index - b.index)
        .map((d) => ({ index: d.index, kind: d.kind, memoryBytes: d.memoryBytes, holder: null })),
    }));
  // Ids are unique in the database; were two workers to share one, a running job's devices would
  // be found on the last of them in id order and a reservation's on the first, as before.
  const lastById = new Map(workers.map((w) => [w.id, w]));
  const workerById = new Map<string, WorkerSlots>();
  for (let i = workers.length - 1; i >= 0; i -= 1) workerById.set(workers[i].id, workers[i]);
  const cluster: Cluster = { workers, workerById, lastById, onlineByPool: new Map(), sharedTotal: zero(), teamPoolTotal: new Map() };
  for (const w of workers) {
    if (w.state !== 'ONLINE') continue;
    const pool = cluster.onlineByPool.get(w.teamId);
    if (pool) pool.push(w);
    else cluster.onlineByPool.set(w.teamId, [w]);
  }
  // Capacity for shares: workers that exist and hold or take work.
  for (const w of workers) {
    if (w.state !== 'ONLINE' && w.state !== 'DRAINING') continue;
    for (const slot of w.slots) {
      if (w.teamId === null) cluster.sharedTotal[slot.kind] += 1;
      else bump(cluster.teamPoolTotal, w.teamId, slot.kind, 1);
    }
  }
  return cluster;
}

/** Whether the input's workers are the cluster's: the same ids, names, pools, states and devices, in any order. */
export function sameWorkers(cluster: Cluster, workers: PlanInput['workers']): boolean {
  if (workers.length !== cluster.workers.length) return false;
  for (const w of workers) {
    const kept = cluster.workerById.get(w.id);
    if (!kept || kept.name !== w.name || kept.teamId !== w.teamId || kept.state !== w.state || kept.slots.length !== w.devices.length) return false;
    for (let i = 0; i < w.devices.length; i++) {
      const d = w.devices[i];
      // Slots are sorted by index and devices usually arrive so: one look, not a search per device.
      const slot = kept.slots[i].index === d.index ? kept.slots[i] : kept.slots.find((x) => x.index === d.index);
      if (!slot || slot.kind !== d.kind || slot.memoryBytes !== d.memoryBytes) return false;
    }
  }
  return cluster.lastById.size === workers.length;
}

// ───────────────────────────── what a Planner keeps ─────────────────────────────

/**
 * What a Planner keeps from one round to the next (issue 20, incremental rounds): the workers'
 * index structures (the shapes of each request, by free devices, by reservation order, and each
 * priority's victims), whose entries are versioned and dropped when stale, and the running jobs'
 * holdings. A round's own changes (placements, holds, preemptions) are undone at the next round's
 * start by refreshing what they touched; so are the input's changes (a job started, stopped or
 * ended on a worker: its slots' holders differ from the last round's start; a team that started
 * or stopped borrowing: its workers' victims). A worker or device that changes rebuilds all.
 */
export interface Kept {
  cluster: Cluster;
  indexes: ShapeIndexes;
  /** The running jobs' holdings by job id, as the last round built them: reused while the job's fields are the same. */
  holdings: Map<string, Holding>;
  touched: Set<WorkerSlots>;
  refreshedTeams: Set<string>;
  /** Which teams borrowed when the last round began. */
  borrowing: Map<string, boolean>;
  /** Where the rolling refresh goes on, and in how many rounds it goes round (refreshChanged). */
  sweep: number;
  rollingRounds: number;
}

/** Every kept entry is computed again at least once in this many rounds (refreshChanged). */
const ROLLING_ROUNDS = 64;

/** A running job's holding, the kept one when nothing of it changed (its devices are compared by the slots). */
export function runningHolding(kept: Kept, job: PlanRunningJob, now: number): Holding {
  const release = Math.max(now, endOf(job.startedAt, job.timeLimitSeconds));
  const old = kept.holdings.get(job.id);
  // A release at `now` moves with the clock, and reservationOn's keys treat it as now: never kept.
  if (
    old &&
    old.source === 'running' &&
    old.release === release &&
    (release > now || job.stopping) &&
    old.stopping === job.stopping &&
    old.teamId === job.teamId &&
    old.ownerId === job.ownerId &&
    old.priority === job.priority &&
    old.workerId === job.workerId &&
    old.startedAt === job.startedAt &&
    old.devices === job.deviceIndexes.length
  ) {
    return old;
  }
  return {
    source: 'running',
    jobId: job.id,
    teamId: job.teamId,
    ownerId: job.ownerId,
    priority: job.priority,
    workerId: job.workerId,
    startedAt: job.startedAt,
    devices: job.deviceIndexes.length,
    release,
    stopping: job.stopping,
  };
}

/**
 * The holdings of jobs that ended stay in `kept.holdings` until they outnumber the running ones (a
 * stale one is only reused by a job of its id with the same fields, which it then describes).
 */
export function forgetEnded(kept: Kept, running: PlanRunningJob[]): void {
  if (kept.holdings.size > 2 * running.length + 1_024) {
    const ids = new Set(running.map((job) => job.id));
    for (const id of kept.holdings.keys()) if (!ids.has(id)) kept.holdings.delete(id);
  }
}

/** A Kept with nothing in it yet: a planner's first round, or one that starts again. */
export function newKept(input: Pick<PlanInput, 'workers'>, rollingRounds = ROLLING_ROUNDS): Kept {
  return { cluster: buildCluster(input), indexes: new ShapeIndexes(), holdings: new Map(), touched: new Set(), refreshedTeams: new Set(), borrowing: new Map(), sweep: 0, rollingRounds };
}

// ───────────────────────────── the shape indexes and their entries ─────────────────────────────

/** A worker and device kind that could ever hold the job's gang. */
export interface Shape {
  worker: WorkerSlots;
  kind: DeviceKind;
  matching: Slot[];
  /** Matching devices free now (only ever fewer within a plan). */
  free: number;
  /** Bumped when its worker's slots change: index entries of older versions are stale. */
  version: number;
  /** Bumped when its victims (rule 6) may have changed: victims entries of older versions are stale. */
  victimsVersion: number;
  /** Per preemptor priority with an index heap: its victims for devices alone (victimsOn without quota), and the victimsVersion they are of. */
  devicePlans: Map<number, { version: number; plan: PreemptionPlan | null; heap: Heap<VictimsEntry>; entry: VictimsEntry | null }>;
  /** Where it was last put in its index's `changed` (-1: not there). */
  changedAt: number;
  /** The victimsVersion of its last change of slots, and the borrowing changes since, with the priorities above which each matters (refreshVictims). */
  generalAt: number;
  flips: { version: number; from: number }[];
  /** Its entry in its index's reservation heap (pushReservation). */
  reservationEntry: { heap: Heap<ReservationEntry>; entry: ReservationEntry } | null;
  shared: SharedPlans;
}

/** `startKey`: the expected start as releaseKey gives it (-Infinity: now). */
export type ReservationChoice = { shape: Shape; startKey: number; unknown: number; slots: Slot[] };

/**
 * The shapes of one request (device kind or any, memory, gang size) in one pool (the shared pool,
 * or a team's own workers): all of them in shape order (worker id, then kind order), those with
 * enough free devices by how many (placement's tightest fit first), and by reservation order.
 */
export interface ShapeIndex {
  deviceCount: number;
  shapes: Shape[];
  /** By free count: heaps of { shape, free } in kind order then worker id; entries whose free is no longer the shape's are stale. */
  byFree: Heap<{ shape: Shape; free: number }>[];
  /** Built when a job of the request first reserves (most indexes only place). */
  reservations: Heap<ReservationEntry> | null;
  /** Per preemptor priority, once a preemptor of that priority looked: its shapes by rule 6's cost (tryPreempt), and how much of `changed` it has taken in. */
  victims: Map<number, { heap: Heap<VictimsEntry>; seen: number }>;
  /** The shapes whose victims may have changed, in order (a shape may appear again): what the victims heaps take in before they answer. */
  changed: Shape[];
  /** How much of `changed` the priority that has taken in most has taken in: a shape already after it need not be put there again. */
  seenMax: number;
}

/**
 * Every ShapeIndex of a plan (or of a Planner's rounds, kept in Kept), found three ways. The map by
 * signature is the source of truth: an index is added there once, under its shapes and gang size
 * (indexOf), and only there does one live. The other two are shortcuts derived from it, each
 * holding only indexes it holds: a request in a pool (its key, `team\0kind\0memory\0count`, no
 * team for the shared pool) to its index, which skips listing the pool's matching workers and
 * building the signature; and a job's kind (queue-window.ts's kindOf) to its two indexes, the
 * shared pool's and its team's, which skips the two request keys. They are kept because they
 * measure faster: without them (every lookup by signature) bench/scheduler.ts's plan_round_ms at
 * 2,000 workers had steady rounds 20 to 60 times as long (p50 about 0.8 s and 3 to 5 s against 45
 * and 100 ms, equal and mixed priorities). They never go stale: an index is never replaced or
 * removed while its ShapeIndexes lives (a change of workers builds a new Kept, and new indexes).
 */
export class ShapeIndexes {
  private readonly bySignature = new Map<string, ShapeIndex>();
  private readonly byRequest = new Map<string, ShapeIndex>();
  private readonly byKind = new Map<string, ShapeIndex[]>();

  /** Every index, once each. */
  all(): IterableIterator<ShapeIndex> {
    return this.bySignature.values();
  }

  /** The index of a request in a pool, when that request was looked up before. */
  ofRequest(key: string): ShapeIndex | undefined {
    return this.byRequest.get(key);
  }

  /** The index of these shapes, when one exists: it is then the request's (`key`) too. */
  ofSignature(signature: string, key: string): ShapeIndex | undefined {
    const index = this.bySignature.get(signature);
    if (index) this.byRequest.set(key, index);
    return index;
  }

  /** A new index, of shapes none has (ofSignature found none), for the request `key`. */
  add(signature: string, key: string, index: ShapeIndex): void {
    this.byRequest.set(key, index);
    this.bySignature.set(signature, index);
  }

  /** A kind's indexes (shared pool's, then its team's), when they were remembered. */
  ofKind(kind: string): ShapeIndex[] | undefined {
    return this.byKind.get(kind);
  }

  /** `indexes`: the kind's, as indexOf found them (so indexes of the map by signature). */
  rememberKind(kind: string, indexes: ShapeIndex[]): void {
    this.byKind.set(kind, indexes);
  }
}

export type ReservationEntry = { shape: Shape; version: number; choice: ReservationChoice };

export interface PreemptionPlan {
  shape: Shape;
  victims: Holding[];
  chosen: Slot[];
  cost: number[];
}

/** A shape's victims for a preemptor of one priority that needs no quota freed, as of the shape's victimsVersion. */
export interface VictimsEntry {
  plan: PreemptionPlan;
  version: number;
}
