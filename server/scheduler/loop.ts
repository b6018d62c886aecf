import pg from 'pg';
import type { Db } from '../db/client';
import { plan } from './plan';
import { placeAll } from './place';
import type { Plan, PlanInput, PlanQueuedJob, PlanRunningJob, PlanTeamQuota, PlanWorker } from './types';
import { BUSY_ROUND_MS, HOUSEKEEPING_MS, PREEMPT_GRACE_SECONDS, TICK_MS } from './timing';
import type { JobState } from '../db/generated/prisma/enums';
import { endAttemptAndRequeue, recordEvent, TIME_LIMIT_REASON } from './transitions';
import { WORKER_ONLINE_WINDOW_MS } from '../health';

// The loop around the pure planner: one leader among server replicas (a PostgreSQL advisory
// lock held on a dedicated connection, released by PostgreSQL if this process dies), woken by
// LISTEN/NOTIFY on submit, finish and heartbeat changes, with a tick as fallback.

export const SCHEDULER_CHANNEL = 'whetstone_scheduler';
const LEADER_LOCK_KEY = 7_424_002;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

export interface SchedulerEvents {
  /** A job was placed on a worker: push the assignment (the worker also polls). */
  assigned(workerId: string, attemptId: string): void;
  /** Ask a worker to stop an attempt: preempt (checkpoint first) or cancel. */
  signal(workerId: string, payload: { attemptId: string; preempt?: boolean; cancel?: boolean }): void;
  /** A job changed state: for live job lists. */
  jobChanged(teamId: string, jobId: string): void;
}

/** What a round reads: the planner's input, and the waiting reasons the queued jobs show now. */
export interface RoundInput {
  input: PlanInput;
  waitingReasons: Map<string, string | null>;
}

// Times come out as epoch milliseconds and memory as float8, straight into the planner's plain
// numbers (columns are UTC timestamps without time zone, as Prisma writes them).
const ms = (column: string) => `(extract(epoch from ${column}) * 1000)::float8`;

/**
 * The planner's input in four queries run together, each selecting only the columns it needs:
 * every round reads the whole queue (fair share and backfill look at all of it), so this must be
 * cheap rather than skipped. (One statement building JSON cost PostgreSQL three times as much.)
 */
export async function loadRound(db: Db, now: Date): Promise<RoundInput> {
  const [queued, running, workers, quotas] = await Promise.all([
    db.$queryRawUnsafe<Array<PlanQueuedJob & { waitingReason?: string | null }>>(`
      SELECT id, "teamId", "ownerId", priority, "deviceCount", "deviceKind"::text AS "deviceKind", "memoryBytes"::float8 AS "memoryBytes",
             "timeLimitSeconds", ${ms('"queuedAt"')} AS "queuedAt", ${ms('"notBefore"')} AS "notBefore", "waitingReason"
        FROM "Job" WHERE state = 'QUEUED'`),
    db.$queryRawUnsafe<PlanRunningJob[]>(`
      SELECT j.id, j."teamId", j."ownerId", j.priority, a."workerId", coalesce(a."deviceIndexes", '{}') AS "deviceIndexes",
             ${ms('coalesce(a."startedAt", j."updatedAt")')} AS "startedAt", j."timeLimitSeconds",
             (j."cancelRequestedAt" IS NOT NULL OR a."preemptRequestedAt" IS NOT NULL) AS stopping
        FROM "Job" j
        LEFT JOIN LATERAL (SELECT "workerId", "deviceIndexes", "startedAt", "preemptRequestedAt" FROM "JobAttempt" WHERE "jobId" = j.id AND state = 'ACTIVE' LIMIT 1) a ON true
       WHERE j.state IN ('ASSIGNED', 'RUNNING')`),
    db.$queryRawUnsafe<PlanWorker[]>(`
      SELECT w.id, w."teamId", w.state::text AS state,
             coalesce(json_agg(json_build_object('index', d.index, 'kind', d.kind, 'memoryBytes', d."memoryBytes"::float8) ORDER BY d.index)
                      FILTER (WHERE d.id IS NOT NULL), '[]') AS devices
        FROM "Worker" w LEFT JOIN "WorkerDevice" d ON d."workerId" = w.id
       WHERE w.state IN ('ONLINE', 'DRAINING') GROUP BY w.id`),
    db.$queryRawUnsafe<PlanTeamQuota[]>(`SELECT "teamId", "maxConcurrentDevices", "maxQueuedJobs", "maxPriority" FROM "TeamQuota"`),
  ]);
  const waitingReasons = new Map<string, string | null>();
  for (const job of queued) {
    waitingReasons.set(job.id, job.waitingReason ?? null);
    delete job.waitingReason;
  }
  return { input: { now: now.getTime(), queued, running, workers, quotas }, waitingReasons };
}

export async function loadPlanInput(db: Db, now: Date): Promise<PlanInput> {
  return (await loadRound(db, now)).input;
}

type StaleAttempt = { id: string; jobId: string; number: number; workerId: string | null; teamId: string; state: JobState; limit: number | null; kind: 'expired' | 'overdue' | 'overtime' };

/**
 * Housekeeping before planning: lost leases, preemptions past their grace, jobs past their time
 * limit (found in one query, usually empty), then silent workers marked offline.
 */
export async function expireStale(db: Db, now: Date, events: SchedulerEvents): Promise<void> {
  const graceEnd = new Date(now.getTime() - PREEMPT_GRACE_SECONDS * 1000);
  const stale = await db.$queryRaw<StaleAttempt[]>`
    SELECT a.id, a."jobId", a.number, a."workerId", j."teamId", j.state::text AS state, j."timeLimitSeconds" AS limit,
           CASE WHEN a."leaseExpiresAt" < ${now} THEN 'expired'
                WHEN a."preemptRequestedAt" < ${graceEnd} THEN 'overdue'
                ELSE 'overtime' END AS kind
      FROM "JobAttempt" a JOIN "Job" j ON j.id = a."jobId"
     WHERE a.state = 'ACTIVE'
       AND (a."leaseExpiresAt" < ${now} OR a."preemptRequestedAt" < ${graceEnd}
            OR (j."timeLimitSeconds" IS NOT NULL AND j."cancelRequestedAt" IS NULL
                AND a."startedAt" + make_interval(secs => j."timeLimitSeconds") < ${now}))`;
  for (const a of stale) {
    if (a.kind === 'overtime') await stopOvertime(db, a, now, events);
    else {
      const reason = a.kind === 'expired' ? 'lease expired (worker lost or partitioned)' : 'preempted: did not stop within the grace period';
      await db.$transaction((tx) => endAttemptAndRequeue(tx, a, reason, { type: 'SCHEDULER' }, now));
    }
    events.jobChanged(a.teamId, a.jobId);
  }
  await db.worker.updateMany({
    where: { state: 'ONLINE', lastHeartbeatAt: { lt: new Date(now.getTime() - WORKER_ONLINE_WINDOW_MS) } },
    data: { state: 'OFFLINE' },
  });
}

/** A job past its declared time limit is stopped (the planner's backfill counts on the limit). */
async function stopOvertime(db: Db, a: StaleAttempt, now: Date, events: SchedulerEvents): Promise<void> {
  const reason = `${TIME_LIMIT_REASON} of ${a.limit} s reached`;
  await db.$transaction(async (tx) => {
    await tx.job.update({ where: { id: a.jobId }, data: { cancelRequestedAt: now, failureReason: reason } });
    await recordEvent(tx, a.jobId, a.state, a.state, { type: 'SCHEDULER' }, `${reason}: stopping`);
  });
  if (a.workerId) events.signal(a.workerId, { attemptId: a.id, cancel: true });
}

/**
 * Applies a plan: all placements in one statement (place.ts), then preemption requests, then the
 * waiting reasons that changed since the round read them.
 */
export async function applyPlan(
  db: Db,
  decisions: Plan,
  now: Date,
  events: SchedulerEvents,
  waitingReasons?: Map<string, string | null>,
  log?: (line: string) => void,
): Promise<{ placed: number; preempted: number }> {
  const placed = await placeAll(db, decisions.placements, now, log);
  for (const p of placed) {
    events.assigned(p.workerId, p.attemptId);
    events.jobChanged(p.teamId, p.jobId);
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
  await writeWaitingReasons(db, decisions, waitingReasons);
  return { placed: placed.length, preempted };
}

/**
 * Waiting reasons change rarely: write only those that did (all of them when the current ones
 * are unknown), one statement per reason.
 */
async function writeWaitingReasons(db: Db, decisions: Plan, current?: Map<string, string | null>): Promise<void> {
  const byReason = new Map<string, string[]>();
  for (const w of decisions.waiting) {
    if (current && current.get(w.jobId) === w.reason) continue;
    const ids = byReason.get(w.reason);
    if (ids) ids.push(w.jobId);
    else byReason.set(w.reason, [w.jobId]);
  }
  for (const [reason, ids] of byReason) {
    await db.job.updateMany({ where: { id: { in: ids }, state: 'QUEUED', OR: [{ waitingReason: null }, { waitingReason: { not: reason } }] }, data: { waitingReason: reason } });
  }
}

/** One round: housekeeping (unless the loop ran it within the last second), plan, apply. */
export async function scheduleOnce(db: Db, events: SchedulerEvents, now = new Date(), opts: RoundOptions = {}): Promise<{ placed: number; preempted: number }> {
  const { placed, preempted } = await runRound(db, events, now, opts);
  return { placed, preempted };
}

interface RoundOptions {
  housekeeping?: boolean;
  log?: (line: string) => void;
}

async function runRound(db: Db, events: SchedulerEvents, now: Date, opts: RoundOptions) {
  if (opts.housekeeping ?? true) await expireStale(db, now, events);
  const { input, waitingReasons } = await loadRound(db, now);
  const decisions = plan(input);
  const applied = await applyPlan(db, decisions, now, events, waitingReasons, opts.log);
  return { ...applied, waiting: decisions.waiting.length };
}

export class SchedulerLoop {
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private stopped = false;
  private housekeptAt = 0;
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
        const now = new Date();
        const housekeeping = now.getTime() - this.housekeptAt >= Math.min(HOUSEKEEPING_MS, this.tickMs);
        if (housekeeping) this.housekeptAt = now.getTime();
        const { waiting } = await runRound(this.db, this.events, now, { housekeeping, log: this.log });
        // Under load every finish wakes the loop. While jobs wait, the next round starts a little
        // later, so that it places what several finishes freed: each round reads the whole queue.
        if (this.again && waiting > 0) await sleep(now.getTime() + BUSY_ROUND_MS - Date.now());
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
