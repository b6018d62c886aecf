// Synthetic clusters at scale for the planner's benchmark (bench/scheduler.ts, plan_round_ms) and
// the test that the API answers while a large round is planned: workers of 8 devices, 90% of them
// busy, a queue of sweeps submitted by the users of many teams, and a draining queue (`drainStep`)
// that applies a plan and lets time pass, as the scheduler loop and the workers would.
import type { DeviceKind, Plan, PlanInput, PlanQueuedJob, PlanRunningJob, PlanWorker } from '../scheduler/types';

const GiB = 2 ** 30;
const START = Date.UTC(2026, 0, 1, 9, 0, 0);

export interface ClusterSize {
  workers: number;
  queued: number;
  /** 'equal': every job priority 0; 'mixed': each sweep (and running job) a priority from 0 to 4. */
  priorities: 'equal' | 'mixed';
  teams?: number;
  users?: number;
  /** Fraction of devices held by running jobs. */
  busy?: number;
  seed?: number;
}

/** A small deterministic PRNG (mulberry32), so that every run plans the same clusters. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Sweep {
  teamId: string;
  ownerId: string;
  priority: number;
  deviceCount: number;
  deviceKind: DeviceKind | null;
  memoryBytes: number;
  timeLimitSeconds: number | null;
}

/** A cluster and its queue, with what the drain needs to requeue preempted jobs. */
export interface SyntheticCluster {
  input: PlanInput;
  /** The request of every job (queued or running), to requeue a preempted one. */
  requests: Map<string, Omit<PlanQueuedJob, 'id' | 'queuedAt' | 'notBefore'>>;
  rng: () => number;
}

/**
 * A cluster of `workers` workers of 8 CUDA devices (three in four with 80 GiB, the rest 24 GiB;
 * one in twenty a team's own), `busy` of the devices held by running gangs of 1, 2, 4 or 8, and
 * `queued` jobs: each of `users` users (spread over `teams` teams) submits one to three sweeps of
 * identical jobs (a gang size, memory, time limit and priority), as sweeps, evaluations and
 * tournaments are submitted.
 */
export function syntheticCluster(size: ClusterSize): SyntheticCluster {
  const rng = random(size.seed ?? 20_260_101);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)];
  const teams = size.teams ?? 50;
  const users = size.users ?? 500;
  const busy = size.busy ?? 0.9;
  const priority = () => (size.priorities === 'mixed' ? Math.floor(rng() * 5) : 0);
  const teamIds = Array.from({ length: teams }, (_, i) => `team-${String(i).padStart(3, '0')}`);
  const userTeam = (u: number) => teamIds[u % teams];
  const limits = [null, 1800, 3600, 4 * 3600, 12 * 3600] as const;
  const now = START;
  const requests: SyntheticCluster['requests'] = new Map();

  const workers: PlanWorker[] = Array.from({ length: size.workers }, (_, i) => {
    const memoryBytes = rng() < 0.75 ? 80 * GiB : 24 * GiB;
    return {
      id: `worker-${String(i).padStart(6, '0')}`,
      name: `node-${i}`,
      teamId: rng() < 0.05 ? pick(teamIds) : null,
      state: 'ONLINE',
      devices: Array.from({ length: 8 }, (_, index) => ({ index, kind: 'CUDA' as const, memoryBytes })),
    };
  });

  // Running gangs fill each worker from device 0 until the worker's share of `busy` is reached.
  const running: PlanRunningJob[] = [];
  let runningId = 0;
  for (const w of workers) {
    let used = 0;
    const target = Math.round(8 * busy + (rng() - 0.5) * 2);
    while (used < Math.min(8, target)) {
      const gang = Math.min(pick([1, 1, 2, 4, 8]), Math.min(8, target) - used);
      const user = Math.floor(rng() * users);
      const id = `run-${String(runningId++).padStart(7, '0')}`;
      const job: PlanRunningJob = {
        id,
        teamId: w.teamId ?? userTeam(user),
        ownerId: `user-${user}`,
        priority: priority(),
        workerId: w.id,
        deviceIndexes: Array.from({ length: gang }, (_, k) => used + k),
        startedAt: now - Math.floor(rng() * 2 * 3600_000),
        timeLimitSeconds: pick(limits),
        stopping: false,
      };
      running.push(job);
      requests.set(id, { teamId: job.teamId, ownerId: job.ownerId, priority: job.priority, deviceCount: gang, deviceKind: 'CUDA', memoryBytes: 0, timeLimitSeconds: job.timeLimitSeconds });
      used += gang;
    }
  }

  const sweeps: Sweep[][] = Array.from({ length: users }, (_, u) =>
    Array.from({ length: 1 + Math.floor(rng() * 3) }, () => ({
      teamId: userTeam(u),
      ownerId: `user-${u}`,
      priority: priority(),
      deviceCount: pick([1, 1, 1, 2, 2, 4, 8]),
      deviceKind: rng() < 0.5 ? null : 'CUDA',
      memoryBytes: pick([0, 0, 16 * GiB, 40 * GiB]),
      timeLimitSeconds: pick(limits),
    })),
  );
  const queued: PlanQueuedJob[] = Array.from({ length: size.queued }, (_, i) => {
    const sweep = pick(pick(sweeps));
    const id = `job-${String(i).padStart(7, '0')}`;
    requests.set(id, { ...sweep });
    return { id, ...sweep, queuedAt: now - (size.queued - i) * 100, notBefore: rng() < 0.01 ? now + 600_000 : null };
  });

  // Quotas: together twice the pool, so some teams reach theirs.
  const quota = Math.max(8, Math.ceil((2 * 8 * size.workers) / teams));
  const quotas = teamIds.map((teamId) => ({ teamId, maxConcurrentDevices: quota, maxQueuedJobs: 1_000_000, maxPriority: 100 }));
  return { input: { now, queued, running, workers, quotas }, requests, rng };
}

/**
 * One step of a draining queue: `plan`'s placements start, its victims stop and go back to the
 * queue, `seconds` pass, and jobs finish (those past their time limit, and `finishing` of the
 * rest, as work ends). Nothing new is submitted. Returns the next round's input.
 */
export function drainStep(cluster: SyntheticCluster, decisions: Plan, seconds = 5, finishing = 0.01): PlanInput {
  const { input, requests, rng } = cluster;
  const now = input.now + seconds * 1000;
  const placedIds = new Set(decisions.placements.map((p) => p.jobId));
  const queuedById = new Map(input.queued.map((j) => [j.id, j]));
  const victims = new Set(decisions.preemptions.map((p) => p.jobId));
  const running: PlanRunningJob[] = [];
  const requeued: PlanQueuedJob[] = [];
  for (const job of input.running) {
    const overtime = job.timeLimitSeconds !== null && job.startedAt + job.timeLimitSeconds * 1000 <= now;
    if (job.stopping) {
      // Asked to stop last round (preempted): it has stopped and waits in the queue again.
      const request = requests.get(job.id);
      if (request && !overtime) requeued.push({ id: job.id, ...request, queuedAt: now, notBefore: null });
      continue;
    }
    if (overtime || rng() < finishing) continue;
    running.push(victims.has(job.id) ? { ...job, stopping: true } : job);
  }
  for (const p of decisions.placements) {
    const job = queuedById.get(p.jobId) as PlanQueuedJob;
    running.push({
      id: job.id,
      teamId: job.teamId,
      ownerId: job.ownerId,
      priority: job.priority,
      workerId: p.workerId,
      deviceIndexes: p.deviceIndexes,
      startedAt: input.now,
      timeLimitSeconds: job.timeLimitSeconds,
      stopping: false,
    });
  }
  const queued = input.queued.filter((j) => !placedIds.has(j.id)).concat(requeued);
  cluster.input = { ...input, now, queued, running };
  return cluster.input;
}
