// Plain data in and out of the planner (plan.ts). The loop around it reads these from Prisma rows
// and applies the decisions; nothing here imports Prisma at runtime, so the planner stays a pure
// function that tests can feed by hand. Times are milliseconds since the epoch; memory is in
// bytes as a number (Prisma's BigInt converted with Number(), exact below 8 PiB).

/** Mirrors Prisma's `DeviceKind`. */
export type DeviceKind = 'CUDA' | 'WEBGPU' | 'CPU' | 'WASM';

/** Mirrors Prisma's `WorkerState`. Only ONLINE workers take new work. */
export type WorkerState = 'ONLINE' | 'DRAINING' | 'OFFLINE' | 'REVOKED';

export interface PlanDevice {
  index: number;
  kind: DeviceKind;
  memoryBytes: number;
}

export interface PlanWorker {
  id: string;
  /** As the worker registered (a reason names a worker by it; ids are for machines). */
  name?: string;
  /** The pool: a team's worker runs only that team's jobs; null is the shared pool. */
  teamId: string | null;
  state: WorkerState;
  devices: PlanDevice[];
}

/** A job in state QUEUED. */
export interface PlanQueuedJob {
  id: string;
  teamId: string;
  ownerId: string;
  priority: number;
  /** Gang size: all on one worker. */
  deviceCount: number;
  /** null: any kind (but one kind for the whole gang). */
  deviceKind: DeviceKind | null;
  /** Per device; 0 for no requirement. */
  memoryBytes: number;
  timeLimitSeconds: number | null;
  queuedAt: number;
  /** Backoff after a lost lease: not placed before this time. */
  notBefore: number | null;
}

/** A job that holds devices: ASSIGNED or RUNNING (its active attempt's worker and devices). */
export interface PlanRunningJob {
  id: string;
  teamId: string;
  ownerId: string;
  priority: number;
  workerId: string | null;
  deviceIndexes: number[];
  startedAt: number;
  timeLimitSeconds: number | null;
  /** Already asked to stop (preempted or cancelled): still holds its devices, frees them soon. */
  stopping: boolean;
}

/** Mirrors Prisma's `TeamQuota`. Teams without a row get DEFAULT_QUOTA (the schema's defaults). */
export interface PlanTeamQuota {
  teamId: string;
  maxConcurrentDevices: number;
  maxQueuedJobs: number;
  maxPriority: number;
}

export interface PlanInput {
  /** The current time: the planner never reads the clock. */
  now: number;
  queued: PlanQueuedJob[];
  running: PlanRunningJob[];
  workers: PlanWorker[];
  quotas: PlanTeamQuota[];
}

export interface Placement {
  jobId: string;
  workerId: string;
  deviceIndexes: number[];
  /**
   * True when it took devices or quota that a waiting job ahead of it counts on, because it does
   * not delay that job's start (plan.ts, rule 5).
   */
  backfill: boolean;
  reason: string;
}

/** Stop `jobId` (checkpoint within the grace period) and requeue it, to make room for `forJobId`. */
export interface Preemption {
  jobId: string;
  forJobId: string;
  workerId: string | null;
  reason: string;
}

export type WaitCode =
  /** notBefore is in the future. */
  | 'BACKOFF'
  /** The job asks for more devices than its team may ever hold. */
  | 'EXCEEDS_QUOTA'
  /** No online worker in the job's pools has that many matching devices at all. */
  | 'NO_WORKER'
  /** The team's concurrent-device quota is in use. */
  | 'QUOTA'
  /** Not enough free matching devices on any one worker. */
  | 'NO_CAPACITY'
  /** It could run now, but only by delaying a job ahead of it. */
  | 'BEHIND'
  /** Devices are being freed for it (preemption or a stopping job); they are held for it. */
  | 'PREEMPTING';

export interface Waiting {
  jobId: string;
  code: WaitCode;
  /** Shown in the UI and stored in Job.waitingReason. */
  reason: string;
  /**
   * QUOTA and NO_CAPACITY: the latest time it is expected to start, assuming every running job
   * ends at its declared time limit; null when unknown (a job without a limit stands in the way).
   */
  estimatedStartAt: number | null;
  /**
   * NO_CAPACITY: the worker, kind and devices it is expected to get; PREEMPTING: the devices held
   * for it while they are freed.
   */
  target: { workerId: string; kind: DeviceKind; deviceIndexes: number[] } | null;
}

export interface Plan {
  placements: Placement[];
  preemptions: Preemption[];
  waiting: Waiting[];
}
