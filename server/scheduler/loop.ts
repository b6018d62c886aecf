import pg from 'pg';
import type { Db } from '../db/client';
import { plan } from './plan';
import type { Plan, PlanInput } from './types';
import { LEASE_SECONDS, PREEMPT_GRACE_SECONDS, TICK_MS } from './timing';
import type { JobState } from '../db/generated/prisma/enums';
import { endAttemptAndRequeue, recordEvent, TIME_LIMIT_REASON } from './transitions';
import { WORKER_ONLINE_WINDOW_MS } from '../health';

// The loop around the pure planner: one leader among server replicas (a PostgreSQL advisory
// lock held on a dedicated connection, released by PostgreSQL if this process dies), woken by
// LISTEN/NOTIFY on submit, finish and heartbeat changes, with a tick as fallback.

export const SCHEDULER_CHANNEL = 'whetstone_scheduler';
const LEADER_LOCK_KEY = 7_424_002;

export interface SchedulerEvents {
  /** A job was placed on a worker: push the assignment (the worker also polls). */
  assigned(workerId: string, attemptId: string): void;
  /** Ask a worker to stop an attempt: preempt (checkpoint first) or cancel. */
  signal(workerId: string, payload: { attemptId: string; preempt?: boolean; cancel?: boolean }): void;
  /** A job changed state: for live job lists. */
  jobChanged(teamId: string, jobId: string): void;
}

export async function loadPlanInput(db: Db, now: Date): Promise<PlanInput> {
  const [queued, running, workers, quotas] = await Promise.all([
    db.job.findMany({ where: { state: 'QUEUED' } }),
    db.job.findMany({
      where: { state: { in: ['ASSIGNED', 'RUNNING'] } },
      include: { jobAttempts: { where: { state: 'ACTIVE' }, take: 1 } },
    }),
    db.worker.findMany({ where: { state: { in: ['ONLINE', 'DRAINING'] } }, include: { devices: true } }),
    db.teamQuota.findMany(),
  ]);
  return {
    now: now.getTime(),
    queued: queued.map((j) => ({
      id: j.id, teamId: j.teamId, ownerId: j.ownerId, priority: j.priority, deviceCount: j.deviceCount,
      deviceKind: j.deviceKind, memoryBytes: Number(j.memoryBytes), timeLimitSeconds: j.timeLimitSeconds,
      queuedAt: j.queuedAt.getTime(), notBefore: j.notBefore?.getTime() ?? null,
    })),
    running: running.map((j) => {
      const attempt = j.jobAttempts[0];
      return {
        id: j.id, teamId: j.teamId, ownerId: j.ownerId, priority: j.priority,
        workerId: attempt?.workerId ?? null, deviceIndexes: attempt?.deviceIndexes ?? [],
        startedAt: (attempt?.startedAt ?? j.updatedAt).getTime(), timeLimitSeconds: j.timeLimitSeconds,
        stopping: Boolean(j.cancelRequestedAt || attempt?.preemptRequestedAt),
      };
    }),
    workers: workers.map((w) => ({
      id: w.id, teamId: w.teamId, state: w.state,
      devices: w.devices.map((d) => ({ index: d.index, kind: d.kind, memoryBytes: Number(d.memoryBytes) })),
    })),
    quotas: quotas.map((q) => ({ teamId: q.teamId, maxConcurrentDevices: q.maxConcurrentDevices, maxQueuedJobs: q.maxQueuedJobs, maxPriority: q.maxPriority })),
  };
}

/** Housekeeping before planning: lost leases, preemptions past their grace, silent workers. */
export async function expireStale(db: Db, now: Date, events: SchedulerEvents): Promise<void> {
  const expired = await db.jobAttempt.findMany({
    where: { state: 'ACTIVE', leaseExpiresAt: { lt: now } },
    select: { id: true, jobId: true, number: true, job: { select: { teamId: true } } },
  });
  const overdue = await db.jobAttempt.findMany({
    where: { state: 'ACTIVE', preemptRequestedAt: { lt: new Date(now.getTime() - PREEMPT_GRACE_SECONDS * 1000) } },
    select: { id: true, jobId: true, number: true, job: { select: { teamId: true } } },
  });
  for (const [list, reason] of [
    [expired, 'lease expired (worker lost or partitioned)'],
    [overdue, 'preempted: did not stop within the grace period'],
  ] as const) {
    for (const attempt of list) {
      await db.$transaction((tx) => endAttemptAndRequeue(tx, attempt, reason, { type: 'SCHEDULER' }, now));
      events.jobChanged(attempt.job.teamId, attempt.jobId);
    }
  }
  // A job past its declared time limit is stopped (the planner's backfill counts on the limit).
  const overtime = await db.$queryRaw<Array<{ id: string; jobId: string; workerId: string | null; teamId: string; state: string; limit: number }>>`
    SELECT a.id, a."jobId", a."workerId", j."teamId", j.state::text AS state, j."timeLimitSeconds" AS limit
      FROM "JobAttempt" a JOIN "Job" j ON j.id = a."jobId"
     WHERE a.state = 'ACTIVE' AND j."timeLimitSeconds" IS NOT NULL AND j."cancelRequestedAt" IS NULL
       AND a."startedAt" + make_interval(secs => j."timeLimitSeconds") < ${now}`;
  for (const a of overtime) {
    const reason = `${TIME_LIMIT_REASON} of ${a.limit} s reached`;
    await db.$transaction(async (tx) => {
      await tx.job.update({ where: { id: a.jobId }, data: { cancelRequestedAt: now, failureReason: reason } });
      await recordEvent(tx, a.jobId, a.state as JobState, a.state as JobState, { type: 'SCHEDULER' }, `${reason}: stopping`);
    });
    if (a.workerId) events.signal(a.workerId, { attemptId: a.id, cancel: true });
    events.jobChanged(a.teamId, a.jobId);
  }
  await db.worker.updateMany({
    where: { state: 'ONLINE', lastHeartbeatAt: { lt: new Date(now.getTime() - WORKER_ONLINE_WINDOW_MS) } },
    data: { state: 'OFFLINE' },
  });
}

/** Applies a plan, each placement in its own transaction so one lost race costs only that job. */
export async function applyPlan(db: Db, decisions: Plan, now: Date, events: SchedulerEvents): Promise<{ placed: number; preempted: number }> {
  let placed = 0;
  for (const p of decisions.placements) {
    const result = await db.$transaction(async (tx) => {
      // The job may be being cancelled right now: skip it this round rather than wait.
      const locked = await tx.$queryRaw<Array<{ id: string; teamId: string; attempts: number }>>`
        SELECT id, "teamId", attempts FROM "Job" WHERE id = ${p.jobId} AND state = 'QUEUED' FOR UPDATE SKIP LOCKED`;
      if (locked.length === 0) return null;
      const job = locked[0];
      const resumeFrom = await tx.checkpoint.findFirst({ where: { jobId: job.id, kind: 'TRAINING' }, orderBy: { step: 'desc' } });
      const attempt = await tx.jobAttempt.create({
        data: {
          jobId: job.id, number: job.attempts + 1, workerId: p.workerId, deviceIndexes: p.deviceIndexes,
          leaseExpiresAt: new Date(now.getTime() + LEASE_SECONDS * 1000), resumedFromId: resumeFrom?.id ?? null,
        },
      });
      await tx.job.update({ where: { id: job.id }, data: { state: 'ASSIGNED', attempts: job.attempts + 1, waitingReason: null, notBefore: null } });
      await recordEvent(tx, job.id, 'QUEUED', 'ASSIGNED', { type: 'SCHEDULER' }, p.reason);
      return { attemptId: attempt.id, teamId: job.teamId };
    });
    if (result) {
      placed++;
      events.assigned(p.workerId, result.attemptId);
      events.jobChanged(result.teamId, p.jobId);
    }
  }
  let preempted = 0;
  for (const p of decisions.preemptions) {
    const attempt = await db.jobAttempt.findFirst({ where: { jobId: p.jobId, state: 'ACTIVE', preemptRequestedAt: null }, include: { job: true } });
    if (!attempt) continue;
    await db.$transaction(async (tx) => {
      await tx.jobAttempt.update({ where: { id: attempt.id }, data: { preemptRequestedAt: now } });
      await recordEvent(tx, p.jobId, attempt.job.state, attempt.job.state, { type: 'SCHEDULER' }, p.reason);
    });
    preempted++;
    if (attempt.workerId) events.signal(attempt.workerId, { attemptId: attempt.id, preempt: true });
  }
  // Waiting reasons change rarely: write only those that did, one statement per reason (with a
  // thousand queued jobs, one statement per job made a round take seconds).
  const byReason = new Map<string, string[]>();
  for (const w of decisions.waiting) byReason.set(w.reason, [...(byReason.get(w.reason) ?? []), w.jobId]);
  for (const [reason, ids] of byReason) {
    await db.job.updateMany({ where: { id: { in: ids }, state: 'QUEUED', OR: [{ waitingReason: null }, { waitingReason: { not: reason } }] }, data: { waitingReason: reason } });
  }
  return { placed, preempted };
}

/** One round: housekeeping, plan, apply. */
export async function scheduleOnce(db: Db, events: SchedulerEvents, now = new Date()) {
  await expireStale(db, now, events);
  const input = await loadPlanInput(db, now);
  const decisions = plan(input);
  return applyPlan(db, decisions, now, events);
}

export class SchedulerLoop {
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private stopped = false;
  isLeader = false;

  constructor(
    private readonly db: Db,
    private readonly databaseUrl: string,
    private readonly events: SchedulerEvents,
    private readonly log: (line: string) => void = () => {},
    private readonly tickMs = TICK_MS,
  ) {}

  async start(): Promise<void> {
    this.timer = setInterval(() => void this.tick(), this.tickMs);
    await this.tick();
  }

  /** Run a round soon (coalesces: a round in progress is followed by exactly one more). */
  wake(): void {
    if (this.running) this.again = true;
    else void this.round();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    if (!this.isLeader) await this.tryLead();
    if (this.isLeader) this.wake();
  }

  private trying: Promise<void> | null = null;

  /** One attempt at a time; a loop stopped meanwhile lets go of whatever it got. */
  private tryLead(): Promise<void> {
    this.trying ??= this.attemptLead().finally(() => (this.trying = null));
    return this.trying;
  }

  private async attemptLead(): Promise<void> {
    try {
      if (!this.client) {
        const client = new pg.Client({ connectionString: this.databaseUrl });
        client.on('error', () => this.loseLeadership('connection error'));
        client.on('end', () => this.loseLeadership('connection closed'));
        await client.connect();
        if (this.stopped) return void (await client.end().catch(() => {}));
        this.client = client;
      }
      const { rows } = await this.client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [LEADER_LOCK_KEY]);
      if (!rows[0].ok || this.stopped) return;
      await this.client.query(`LISTEN ${SCHEDULER_CHANNEL}`);
      this.client.on('notification', () => this.wake());
      this.isLeader = true;
      this.log('scheduler: this server is the leader');
    } catch {
      this.loseLeadership('could not reach the database');
    }
  }

  private loseLeadership(why: string): void {
    if (this.isLeader) this.log(`scheduler: lost leadership (${why})`);
    this.isLeader = false;
    const client = this.client;
    this.client = null;
    client?.end().catch(() => {});
  }

  private async round(): Promise<void> {
    if (!this.isLeader || this.stopped) return;
    this.running = true;
    try {
      do {
        this.again = false;
        await scheduleOnce(this.db, this.events);
      } while (this.again && this.isLeader && !this.stopped);
    } catch (error) {
      this.log(`scheduler: round failed: ${(error as Error).message}`);
    } finally {
      this.running = false;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.trying;
    const client = this.client;
    this.client = null;
    this.isLeader = false;
    await client?.end().catch(() => {});
  }
}

/** Wakes the leader, wherever it runs (submit, cancel, finish, worker changes). */
export async function notifyScheduler(db: Db, reason: string): Promise<void> {
  await db.$executeRaw`SELECT pg_notify(${SCHEDULER_CHANNEL}, ${reason})`;
}
