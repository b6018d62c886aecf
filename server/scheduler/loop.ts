import pg from 'pg';
import { type Db, rawQuery } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import { planRound } from './plan-round';
import type { Planner } from './planner';
import { RoundThread, type SchedulerEvents } from './round-thread';
import { placeAll } from './place';
import type { Plan, PlanInput, PlanQueuedJob, PlanRunningJob, PlanTeamQuota, PlanWorker } from './types';
import { BUSY_ROUND_MS, HOUSEKEEPING_MS, PREEMPT_GRACE_SECONDS, TICK_MS, WORKER_ONLINE_WINDOW_MS } from './timing';
import type { JobState } from '../db/generated/prisma/enums';
import { endAttemptAndRequeue, recordEvent, TIME_LIMIT_REASON } from './transitions';
import { SCHEDULER_CHANNEL } from './notify';
import { providerNotes } from '../providers/notes';

// The loop around the pure planner: one leader among server replicas (a PostgreSQL advisory
// lock held on a dedicated connection, released by PostgreSQL if this process dies), woken by
// LISTEN/NOTIFY on submit, finish and heartbeat changes, with a tick as fallback.

const LEADER_LOCK_KEY = 7_424_002;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

export type { SchedulerEvents } from './round-thread';

/** What a round reads: the planner's input, and the waiting reasons the queued jobs show now. */
export interface RoundInput {
  input: PlanInput;
  waitingReasons: Map<string, string | null>;
  /** And the codes (WaitCode) stored beside them: what a cluster provider counts (providers/agent-api.ts). */
  waitingCodes?: Map<string, string | null>;
  /** Some kind of job has more queued than the window holds: the rest wait behind it. */
  beyondWindow: boolean;
}

/** What a job past the queue window (queue-window.ts) shows until it comes into it. */
export const BEYOND_WINDOW_REASON = 'waiting: behind earlier jobs of the same user, priority and request';

// Times come out as epoch milliseconds and memory as float8, straight into the planner's plain
// numbers (columns are UTC timestamps without time zone, as Prisma writes them).
const ms = (column: string) => `(extract(epoch from ${column}) * 1000)::float8`;

/**
 * The planner's input in four queries run together, each selecting only the columns it needs.
 * Of the queue, only the window the planner needs (queue-window.ts) is read, so that a round
 * costs what it can place rather than the length of the queue; the window is counted from the
 * same workers the planner sees. One job more of each kind is read to tell whether any wait
 * beyond the window; it is not planned. (One statement building JSON cost PostgreSQL three times
 * as much.)
 */
/**
 * The most queued jobs a round reads, whatever the queue's length (each team's is bounded by its
 * maxQueuedJobs, but teams are many): the planner's memory stays bounded. When more are in the
 * window, the round reads every kind's first jobs before any kind's later ones (the first of each
 * kind decide the most), and the rest wait for a later round.
 */
const MAX_ROUND_QUEUED = 200_000;

export async function loadRound(db: Db, now: Date, maxQueued = MAX_ROUND_QUEUED): Promise<RoundInput> {
  const [queued, running, workers, quotas] = await Promise.all([
    rawQuery<PlanQueuedJob & { waitingReason: string | null; waitingCode: string | null; beyond: boolean }>(db, Prisma.sql`
      WITH size AS (SELECT count(*) + 1 AS n FROM "WorkerDevice" d JOIN "Worker" w ON w.id = d."workerId" WHERE w.state IN ('ONLINE', 'DRAINING'))
      SELECT id, "teamId", "ownerId", priority, "deviceCount", "deviceKind", "memoryBytes",
             "timeLimitSeconds", "queuedAt", "notBefore", "waitingReason", "waitingCode", place > (SELECT n FROM size) AS beyond
        FROM (SELECT id, "teamId", "ownerId", priority, "deviceCount", "deviceKind"::text AS "deviceKind", "memoryBytes"::float8 AS "memoryBytes",
                     "timeLimitSeconds", ${Prisma.raw(ms('"queuedAt"'))} AS "queuedAt", ${Prisma.raw(ms('"notBefore"'))} AS "notBefore", "waitingReason", "waitingCode",
                     row_number() OVER (PARTITION BY "teamId", "ownerId", priority, "deviceCount", "deviceKind", "memoryBytes", "timeLimitSeconds",
                                                     coalesce("notBefore" > ${now}, false)
                                        ORDER BY "queuedAt", id COLLATE "C") AS place
                FROM "Job" WHERE state = 'QUEUED') q
       WHERE place <= (SELECT n + 1 FROM size)
       ORDER BY place, "queuedAt", id COLLATE "C"
       LIMIT ${maxQueued + 1}`),
    rawQuery<PlanRunningJob>(db, Prisma.raw(`
      SELECT j.id, j."teamId", j."ownerId", j.priority, a."workerId", coalesce(a."deviceIndexes", '{}') AS "deviceIndexes",
             ${ms('coalesce(a."startedAt", j."updatedAt")')} AS "startedAt", j."timeLimitSeconds",
             (j."cancelRequestedAt" IS NOT NULL OR a."preemptRequestedAt" IS NOT NULL) AS stopping
        FROM "Job" j
        LEFT JOIN LATERAL (SELECT "workerId", "deviceIndexes", "startedAt", "preemptRequestedAt" FROM "JobAttempt" WHERE "jobId" = j.id AND state = 'ACTIVE' LIMIT 1) a ON true
       WHERE j.state IN ('ASSIGNED', 'RUNNING')`)),
    rawQuery<PlanWorker>(db, Prisma.raw(`
      SELECT w.id, w.name, w."teamId", w.state::text AS state,
             coalesce(json_agg(json_build_object('index', d.index, 'kind', d.kind, 'memoryBytes', d."memoryBytes"::float8) ORDER BY d.index)
                      FILTER (WHERE d.id IS NOT NULL), '[]') AS devices
        FROM "Worker" w LEFT JOIN "WorkerDevice" d ON d."workerId" = w.id
       WHERE w.state IN ('ONLINE', 'DRAINING') GROUP BY w.id`)),
    rawQuery<PlanTeamQuota>(db, Prisma.raw(`SELECT "teamId", "maxConcurrentDevices", "maxQueuedJobs", "maxPriority" FROM "TeamQuota"`)),
  ]);
  const waitingReasons = new Map<string, string | null>();
  const waitingCodes = new Map<string, string | null>();
  const inWindow: PlanQueuedJob[] = [];
  let beyondWindow = false;
  for (const { waitingReason, waitingCode, beyond, ...job } of queued) {
    if (beyond || inWindow.length === maxQueued) beyondWindow = true;
    else {
      waitingReasons.set(job.id, waitingReason);
      waitingCodes.set(job.id, waitingCode);
      inWindow.push(job);
    }
  }
  return { input: { now: now.getTime(), queued: inWindow, running, workers, quotas }, waitingReasons, waitingCodes, beyondWindow };
}


type StaleAttempt = { id: string; jobId: string; number: number; workerId: string | null; teamId: string; state: JobState; limit: number | null; kind: 'expired' | 'overdue' | 'overtime' };

/**
 * Housekeeping before planning: lost leases, preemptions past their grace, jobs past their time
 * limit (found in one query, usually empty), then silent workers marked offline.
 */
async function expireStale(db: Db, now: Date, events: SchedulerEvents): Promise<void> {
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
  read?: Pick<RoundInput, 'waitingReasons' | 'waitingCodes' | 'beyondWindow'>,
  log?: (line: string) => void,
): Promise<{ placed: number; preempted: number }> {
  const placed = await placeAll(db, decisions.placements, now, log);
  for (const p of placed) {
    events.assigned(p.workerId, p.assignment);
    events.jobChanged(p.teamId, p.jobId);
  }
  const preempted = await requestPreemptions(db, decisions.preemptions, now);
  for (const p of preempted) if (p.workerId) events.signal(p.workerId, { attemptId: p.attemptId, preempt: true });
  await writeWaitingReasons(db, decisions, now, read);
  return { placed: placed.length, preempted: preempted.length };
}

/**
 * A round's preemptions in one statement (a first round on a busy cluster has thousands): each
 * victim's active attempt not yet asked is asked to stop, and its job gets the event with the
 * planner's reason. Answers the attempts asked, for the signals to their workers.
 */
async function requestPreemptions(db: Db, preemptions: Plan['preemptions'], now: Date): Promise<{ attemptId: string; workerId: string | null }[]> {
  if (preemptions.length === 0) return [];
  return rawQuery<{ attemptId: string; workerId: string | null }>(db, Prisma.sql`
    WITH asked AS (
      UPDATE "JobAttempt" a SET "preemptRequestedAt" = ${now}
        FROM unnest(${preemptions.map((p) => p.jobId)}::text[]) AS v("jobId")
       WHERE a."jobId" = v."jobId" AND a.state = 'ACTIVE' AND a."preemptRequestedAt" IS NULL
      RETURNING a.id, a."jobId", a."workerId"
    ), noted AS (
      INSERT INTO "JobEvent" ("jobId", "fromState", "toState", "actorType", reason, at)
      SELECT asked."jobId", j.state, j.state, 'SCHEDULER', r.reason, ${now}
        FROM asked JOIN "Job" j ON j.id = asked."jobId"
        JOIN unnest(${preemptions.map((p) => p.jobId)}::text[], ${preemptions.map((p) => p.reason)}::text[]) AS r("jobId", reason) ON r."jobId" = asked."jobId"
    )
    SELECT id AS "attemptId", "workerId" FROM asked`);
}

/**
 * Waiting reasons change rarely: write only those that did (all of them when the current ones
 * are unknown), in one statement; and, when the round did not read the whole queue, the reason
 * of the jobs past the window, in one statement that writes only those not showing it yet.
 */
async function writeWaitingReasons(db: Db, decisions: Plan, now: Date, read?: Pick<RoundInput, 'waitingReasons' | 'waitingCodes' | 'beyondWindow'>): Promise<void> {
  const changed = decisions.waiting.filter(
    (w) => !read || read.waitingReasons.get(w.jobId) !== w.reason || (read.waitingCodes !== undefined && read.waitingCodes.get(w.jobId) !== w.code),
  );
  if (changed.length > 0) {
    await rawQuery(db, Prisma.sql`
      UPDATE "Job" j SET "waitingReason" = r.reason, "waitingCode" = r.code, "updatedAt" = ${now}
        FROM unnest(${changed.map((w) => w.jobId)}::text[], ${changed.map((w) => w.reason)}::text[], ${changed.map((w) => w.code)}::text[]) AS r(id, reason, code)
       WHERE j.id = r.id AND j.state = 'QUEUED' AND (j."waitingReason" IS DISTINCT FROM r.reason OR j."waitingCode" IS DISTINCT FROM r.code)`);
  }
  if (read?.beyondWindow) {
    await rawQuery(db, Prisma.sql`
      UPDATE "Job" SET "waitingReason" = ${BEYOND_WINDOW_REASON}, "updatedAt" = ${now}
       WHERE state = 'QUEUED' AND id <> ALL(${[...read.waitingReasons.keys()]}::text[]) AND "waitingReason" IS DISTINCT FROM ${BEYOND_WINDOW_REASON}`);
  }
}

/**
 * A job waiting for capacity in a pool with a cluster provider is told the provider's state
 * (providers/notes.ts): workers pending in Slurm and why, or why Slurm refuses them.
 */
async function withProviderNotes(db: Db, decisions: Plan, queued: PlanQueuedJob[]): Promise<Plan> {
  if (!decisions.waiting.some((w) => w.code === 'NO_CAPACITY' || w.code === 'NO_WORKER')) return decisions;
  const notes = await providerNotes(db);
  if (notes.size === 0) return decisions;
  const teamOf = new Map(queued.map((j) => [j.id, j.teamId]));
  const waiting = decisions.waiting.map((w) => {
    if (w.code !== 'NO_CAPACITY' && w.code !== 'NO_WORKER') return w;
    const said = [notes.get(teamOf.get(w.jobId) ?? ''), notes.get(null)].filter(Boolean);
    return said.length > 0 ? { ...w, reason: `${w.reason} — ${said.join('; ')}` } : w;
  });
  return { ...decisions, waiting };
}

/** One round on the calling thread (tests and tools; the loop's run on its round thread). */
export async function scheduleOnce(db: Db, events: SchedulerEvents, now = new Date(), opts: RoundOptions = {}): Promise<{ placed: number; preempted: number }> {
  const { placed, preempted } = await runRound(db, events, now, opts);
  return { placed, preempted };
}

interface RoundOptions {
  housekeeping?: boolean;
  log?: (line: string) => void;
  /** The round thread's planner, kept from round to round (planner.ts); else a round plans from nothing. */
  planner?: Planner;
}

/**
 * One round: housekeeping (unless the loop ran it within the last second), read, plan, apply.
 * The loop runs it on its round thread (round-thread.ts); scheduleOnce, for tests and tools, here.
 */
export async function runRound(db: Db, events: SchedulerEvents, now: Date, opts: RoundOptions = {}) {
  if (opts.housekeeping ?? true) await expireStale(db, now, events);
  const read = await loadRound(db, now);
  // Of each kind, only the jobs up to the first that waits decide the round (plan-round.ts); the
  // others read are past the window as those the query left out.
  const { plan, read: plannedJobs } = opts.planner ? opts.planner.round(read.input) : planRound(read.input);
  const planned = plannedJobs.map((job) => job.id);
  const decisions = await withProviderNotes(db, plan, read.input.queued);
  const waitingReasons = new Map(planned.map((id) => [id, read.waitingReasons.get(id) ?? null]));
  const waitingCodes = new Map(planned.map((id) => [id, read.waitingCodes?.get(id) ?? null]));
  const beyondWindow = read.beyondWindow || planned.length < read.input.queued.length;
  // Jobs past the window are told so with housekeeping (at most once a second): under load every
  // round would otherwise scan the whole queue for the few new ones.
  const applied = await applyPlan(db, decisions, now, events, { waitingReasons, waitingCodes, beyondWindow: beyondWindow && (opts.housekeeping ?? true) }, opts.log);
  return { ...applied, waiting: decisions.waiting.length };
}

export class SchedulerLoop {
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private again = false;
  private stopped = false;
  private housekeptAt = 0;
  /** Rounds run here, off the event loop. */
  private readonly rounds: RoundThread;
  /** When the last round started, and how many jobs it left waiting. */
  private lastRound = { at: 0, waiting: 0 };
  isLeader = false;

  constructor(
    private readonly databaseUrl: string,
    private readonly events: SchedulerEvents,
    private readonly log: (line: string) => void = () => {},
    private readonly tickMs = TICK_MS,
  ) {
    this.rounds = new RoundThread(databaseUrl, events, log);
  }

  async start(): Promise<void> {
    this.rounds.start();
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
        // Under load every finish wakes the loop. While jobs wait, rounds start at least
        // BUSY_ROUND_MS apart, so that one places what several finishes freed: a round costs its
        // statements whether it places one job or fifty. An idle pool's round starts at once.
        if (this.lastRound.waiting > 0) await sleep(this.lastRound.at + BUSY_ROUND_MS - Date.now());
        this.again = false;
        const now = new Date();
        const housekeeping = now.getTime() - this.housekeptAt >= Math.min(HOUSEKEEPING_MS, this.tickMs);
        if (housekeeping) this.housekeptAt = now.getTime();
        const { waiting } = await this.rounds.round(now, housekeeping);
        this.lastRound = { at: now.getTime(), waiting };
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
    await this.rounds.stop();
  }
}
