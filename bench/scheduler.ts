/**
 * `npm run bench:scheduler`: the scheduler, the worker protocol and the live fan-out, measured
 * in one run against one PostgreSQL (DATABASE_URL's server, else an embedded one), in a
 * database of its own that is dropped at the end. Prints one JSON object per line, nothing else.
 *
 * The control plane runs as its own process (server/test-support/reliability/server-process.ts: main.ts's
 * composition without the web app); simulated workers are HTTP + socket.io clients speaking
 * sdk/worker-protocol.ts, in this process; the fan-out's browsers are socket.io clients in a few
 * child processes of their own (bench/fanout-clients.ts).
 *
 * BENCH_ONLY=fanout (comma-separated: submit, drain, fanout, series, scale, round, slurm) runs only those
 * sections, for iterating on one of them; quoted figures come from a full run.
 *
 * The slurm section (issue 22) starts a one-node Slurm (scripts/slurm/local-cluster.sh; root,
 * slurm-wlm and munge) and a provider of a team with no workers, whose agent
 * (gpu-worker/provider-agent.ts, in this process, polling every WHETSTONE_PROVIDER_POLL_SECONDS,
 * default 5) sbatch-es real worker daemons: slurm_submit_to_running_s is a job's submit to its
 * start on a worker Slurm started for it, slurm_idle_to_released_s its end to the end of that
 * worker's Slurm job (the idle time, 5 s here, included). BENCH_SLURM_RUNS (3) cold starts, one
 * after the other, each submitted just after a poll (the poll's worst case: launch_ordered_s;
 * after_order_s is the rest); without Slurm it prints {"name":"slurm","skipped":"…"} and goes on.
 *
 * The scale section (plan_round_ms) plans synthetic clusters from 50 to 10,000 workers in child
 * processes (bench/scheduler-scale.ts), each size within a time budget: BENCH_SCALE=50,500 picks
 * sizes by worker count, BENCH_SCALE_BUDGET_S (60) is each size's budget, BENCH_SCALE_ROUNDS (20)
 * the rounds of each, BENCH_SCALE_PLANNERS (incremental,fast,reference) which planners:
 * `incremental` keeps one Planner across the rounds as the leader's round thread does, `fast` plans
 * each round from nothing, the reference is the planner before issue 20, for the before/after
 * figures of one run. Besides p50/p99 over all rounds, steady_p50_ms/steady_p99_ms leave out the
 * burst after the queue arrives (the leading rounds that place or preempt 1% of the devices).
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { io as connect, type Socket } from 'socket.io-client';
import { ClientFleet } from './fanout-clients';
import { roundApi } from './round-api';
import { type Assignment, type AssignmentAck, ASSIGNMENT_EVENT, ATTEMPT_FINISH_EVENT, ATTEMPT_START_EVENT, type CallAck, STREAM_EVENT, STREAM_WINDOW, type StreamAck, type StreamBatch } from '../sdk/worker-protocol';
import { SCHEDULER_CHANNEL } from '../server/scheduler/notify';
import { rebuildRollups } from '../server/streams/rollup';
import { metricSeries } from '../server/api/routers/runs';
import { createDb } from '../server/db/client';
import { startEmbeddedPostgres } from '../server/db/embedded';
import { migrate } from '../server/db/migrate';
import { killAll, seedTeam, sleep, startServer, submitTrain, trpc, type Team } from '../server/test-support/reliability/harness';
import { scancel, squeue } from '../gpu-worker/cluster/slurm';
import { ProviderAgent } from '../gpu-worker/provider-agent';
import { startLocalSlurm } from '../gpu-worker/test-support/local-slurm';
import { repoRoot } from '../server/paths';

const WORKERS = 50;
const SUBMITS = 200;
const DRAIN_JOBS = 1_000;
const FANOUT_CLIENTS = 100;
const FANOUT_EVENTS_PER_S = 1_000;
const FANOUT_SECONDS = 5;
const SERIES_POINTS = 1_000_000;
const ONLY = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const runs = (section: 'submit' | 'drain' | 'fanout' | 'series' | 'scale' | 'round' | 'slurm') => !ONLY || ONLY.includes(section);
/** The scale section's clusters: workers of 8 devices, and queued jobs over 50 teams and 500 users. */
const SCALE_SIZES = [
  { workers: 50, queued: 1_000 },
  { workers: 500, queued: 10_000 },
  { workers: 2_000, queued: 50_000 },
  { workers: 10_000, queued: 100_000 },
];
const SCALE_ONLY = process.env.BENCH_SCALE?.split(',').map(Number);
const SCALE_BUDGET_S = Number(process.env.BENCH_SCALE_BUDGET_S ?? 60);
const SCALE_ROUNDS = Number(process.env.BENCH_SCALE_ROUNDS ?? 20);
const SCALE_PLANNERS = (process.env.BENCH_SCALE_PLANNERS ?? 'incremental,fast,reference').split(',').map((s) => s.trim());

const emit = (name: string, value: number, unit: string, extra: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ name, value: Math.round(value * 100) / 100, unit, ...extra })}\n`);
const now = () => performance.timeOrigin + performance.now();
const round = (v: number) => Math.round(v * 100) / 100;

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

class SimWorker {
  socket!: Socket;
  /** `ack`, when the push has one, starts the attempt when answered (sdk/worker-protocol.ts, ASSIGNMENT_EVENT). */
  onAssignment: (w: SimWorker, a: Assignment, ack: ((answer: AssignmentAck) => void) | null) => void = () => {};
  constructor(
    readonly url: string,
    readonly workerId: string,
    readonly credential: string,
  ) {}

  static async register(url: string, token: string, i: number): Promise<SimWorker> {
    const res = await fetch(`${url}/api/workers/register`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, name: `sim-${i}`, hostname: 'bench', backend: 'wasm', version: '0.1.0', devices: [{ index: 0, kind: 'WASM', name: 'sim', memoryBytes: 1 << 30 }] }),
    });
    const body = (await res.json()) as { workerId: string; credential: string };
    const w = new SimWorker(url, body.workerId, body.credential);
    w.socket = connect(`${url}/workers`, { forceNew: true, transports: ['websocket'], auth: { credential: w.credential } });
    w.socket.on(ASSIGNMENT_EVENT, (a: Assignment, ack?: (answer: AssignmentAck) => void) => w.onAssignment(w, a, ack ?? null));
    await new Promise<void>((resolve, reject) => {
      w.socket.once('connect', () => resolve());
      w.socket.once('connect_error', reject);
    });
    return w;
  }

  async post(route: string, body: unknown): Promise<unknown> {
    const res = await fetch(`${this.url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${this.credential}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = (await res.json()) as unknown;
    if (!res.ok) throw new Error(`${route}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  }

  /** A stream batch the way the daemon sends it while connected: over the socket, acked once stored. */
  async stream(batch: StreamBatch): Promise<void> {
    const ack = (await this.socket.timeout(30_000).emitWithAck(STREAM_EVENT, batch)) as StreamAck;
    if (ack.status !== 200) throw new Error(`stream: ${ack.status} ${ack.error ?? ''}`);
  }

  /** Start and finish the way the daemon calls them while connected: over the socket, acked. */
  async call(event: string, body: unknown): Promise<void> {
    const ack = (await this.socket.timeout(30_000).emitWithAck(event, body)) as CallAck;
    if (ack.status !== 200) throw new Error(`${event}: ${ack.status} ${ack.error ?? ''}`);
  }

  start(a: Assignment) {
    return this.call(ATTEMPT_START_EVENT, { attemptId: a.attemptId, fencingToken: a.fencingToken });
  }
  finish(a: Assignment) {
    return this.call(ATTEMPT_FINISH_EVENT, { attemptId: a.attemptId, fencingToken: a.fencingToken, outcome: 'succeeded', reason: 'bench' });
  }
}

/**
 * Submit → RUNNING on an idle pool. The simulated workers start with the start call rather than
 * the push's ack, because its answer says when RUNNING is recorded (the ack records it with the
 * same statement, and no answer comes back).
 */
async function submitLatency(url: string, team: Team, workers: SimWorker[]) {
  const started = new Map<string, (t: number) => void>();
  const early = new Map<string, number>();
  const pushedAt = new Map<string, number>();
  for (const w of workers) {
    w.onAssignment = (worker, a) =>
      void (pushedAt.set(a.jobId, now()), worker.start(a)).then(async () => {
        const t = now();
        const resolve = started.get(a.jobId);
        if (resolve) resolve(t);
        else early.set(a.jobId, t);
        await worker.finish(a);
      });
  }
  const latencies: number[] = [];
  const submitCall: number[] = [];
  const toPush: number[] = [];
  for (let i = 0; i < SUBMITS; i++) {
    const t0 = now();
    const job = await trpc<{ id: string }>(url, team.apiKey, 'jobs.submit', { teamId: team.teamId, kind: 'TRAIN', config: { environmentVersionId: team.envVersionId } });
    submitCall.push(now() - t0);
    const t1 = early.get(job.id) ?? (await new Promise<number>((resolve) => started.set(job.id, resolve)));
    latencies.push(t1 - t0);
    toPush.push(pushedAt.get(job.id)! - t0);
    await sleep(20); // let the finish land: the pool is idle at every submit
  }
  const breakdown = { submit_call_p50_ms: Math.round(quantile(submitCall, 0.5)), assignment_pushed_p50_ms: Math.round(quantile(toPush, 0.5)), assignment_pushed_p99_ms: Math.round(quantile(toPush, 0.99)) };
  emit('submit_to_running_p50_ms', quantile(latencies, 0.5), 'ms', { jobs: SUBMITS, workers: WORKERS, ...breakdown });
  emit('submit_to_running_p99_ms', quantile(latencies, 0.99), 'ms', { jobs: SUBMITS, workers: WORKERS, target: '< 100' });
}

/**
 * Statements run in this database (pg_stat_statements, when the server has it loaded; BEGIN and
 * COMMIT count too), to report what each job of a phase costs. null when unavailable.
 */
async function statementCounter(databaseUrl: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const ok = await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements').then(() => true, () => false);
  const read = async () => {
    if (!ok) return null;
    const { rows } = await client.query<{ query: string; calls: string; ms: number }>(
      `SELECT query, calls::text, total_exec_time AS ms FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    return new Map(rows.map((r) => [r.query, { calls: Number(r.calls), ms: r.ms }]));
  };
  return {
    read,
    /** Statements per job since `before`; with BENCH_PROFILE=1, the costliest ones go to stderr. */
    async perJob(before: Awaited<ReturnType<typeof read>>, jobs: number, phase: string): Promise<number | null> {
      const after = await read();
      if (!before || !after) return null;
      const delta = [...after].map(([query, a]) => ({ query, calls: a.calls - (before.get(query)?.calls ?? 0), ms: a.ms - (before.get(query)?.ms ?? 0) }));
      if (process.env.BENCH_PROFILE) {
        for (const d of delta.filter((d) => d.calls > 0).sort((x, y) => y.calls - x.calls).slice(0, 25)) {
          process.stderr.write(`[${phase}] ${(d.calls / jobs).toFixed(2)}/job ${d.ms.toFixed(0)} ms  ${d.query.replace(/\s+/g, ' ').slice(0, 160)}\n`);
        }
      }
      return Math.round((delta.reduce((sum, d) => sum + d.calls, 0) / jobs) * 10) / 10;
    },
    /**
     * Waits until the database is quiet again (the server's trailing work done: job hints, which
     * the socket.io adapter sends as NOTIFYs one at a time; heartbeats go on), so that the next
     * phase is measured on its own. Returns how long that took (at most 60 s).
     */
    async settle(): Promise<number> {
      const t0 = now();
      const total = async () => [...((await read()) ?? new Map()).values()].reduce((n, q) => n + q.calls, 0);
      if (!ok) return sleep(1_000).then(() => now() - t0);
      let last = await total();
      for (let waited = 0; waited < 60_000; waited += 500) {
        await sleep(500);
        const next = await total();
        if (next - last <= 20) break;
        last = next;
      }
      return now() - t0;
    },
    /**
     * CPU time (ms) used so far by this database's server processes (backends of its connections,
     * from /proc), or null when unavailable. A backend that ended between two reads is missed.
     */
    async databaseCpuMs(): Promise<Map<number, number> | null> {
      const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
      const used = new Map<number, number>();
      for (const { pid } of rows) {
        const ms = cpuMs(pid);
        if (ms === null) return null;
        used.set(pid, ms);
      }
      return used;
    },
    end: () => client.end(),
  };
}

/** Database CPU ms per job between two `databaseCpuMs` reads (backends new since `before` count from 0). */
function databaseCpuPerJob(before: Map<number, number> | null, after: Map<number, number> | null, jobs: number): number | null {
  if (!before || !after) return null;
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return Math.round((total / jobs) * 100) / 100;
}

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux), else null. */
function cpuMs(pid: number | undefined): number | null {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks, USER_HZ = 100
  } catch {
    return null;
  }
}

async function drain(url: string, databaseUrl: string, team: Team, workers: SimWorker[], counter: Awaited<ReturnType<typeof statementCounter>>, serverPid?: number): Promise<number> {
  const db = createDb(databaseUrl, 2);
  let done = 0;
  let finished!: () => void;
  const all = new Promise<void>((resolve) => (finished = resolve));
  // As the daemon does while connected: the push's ack is the start, and nothing waits for it.
  for (const w of workers) {
    w.onAssignment = (worker, a, ack) =>
      void (ack ? (ack({ started: true }), Promise.resolve()) : worker.start(a)).then(() => worker.finish(a)).then(() => {
        if (++done === DRAIN_JOBS) finished();
      });
  }
  // The queue is filled before the clock starts, as pg-boss's is below: both drain 1,000 jobs
  // already queued. Until then the jobs wait in backoff (notBefore an hour ahead), and the clock
  // starts with the one statement that lifts it and wakes the scheduler.
  await db.job.createMany({
    data: Array.from({ length: DRAIN_JOBS }, () => ({ teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN' as const, config: { environmentVersionId: team.envVersionId }, notBefore: new Date(Date.now() + 3_600_000) })),
  });
  await counter.settle(); // the rounds that saw the held jobs are done
  const before = await counter.read();
  const databaseCpu0 = await counter.databaseCpuMs();
  const serverCpu0 = cpuMs(serverPid);
  const benchCpu0 = process.cpuUsage();
  const t0 = now();
  await db.$executeRaw`WITH released AS (UPDATE "Job" SET "notBefore" = NULL WHERE "teamId" = ${team.teamId} AND state = 'QUEUED' RETURNING 1)
                       SELECT pg_notify(${SCHEDULER_CHANNEL}, (SELECT count(*) FROM released) || ' jobs released')`;
  await all;
  const seconds = (now() - t0) / 1000;
  await db.$disconnect();
  const rate = DRAIN_JOBS / seconds;
  const serverCpu1 = cpuMs(serverPid);
  const benchCpu = process.cpuUsage(benchCpu0);
  const databaseCpu = databaseCpuPerJob(databaseCpu0, await counter.databaseCpuMs(), DRAIN_JOBS);
  const cpu = {
    server_cpu_ms_per_job: serverCpu0 === null || serverCpu1 === null ? null : Math.round(((serverCpu1 - serverCpu0) / DRAIN_JOBS) * 100) / 100,
    bench_cpu_ms_per_job: Math.round(((benchCpu.user + benchCpu.system) / 1000 / DRAIN_JOBS) * 100) / 100,
    database_cpu_ms_per_job: databaseCpu,
  };
  const settleMs = await counter.settle();
  const statementsPerJob = await counter.perJob(before, DRAIN_JOBS, 'drain');
  emit('placements_per_s', rate, 'jobs/s', { jobs: DRAIN_JOBS, workers: WORKERS, cycle: 'queued → placed → pushed, its ack the start → finish (over the worker socket)', statements_per_job: statementsPerJob, ...cpu, trailing_work_ms: Math.round(settleMs) });
  void url;
  return rate;
}

async function pgBoss(databaseUrl: string, counter: Awaited<ReturnType<typeof statementCounter>>): Promise<number> {
  const boss = new PgBoss({ connectionString: databaseUrl, schema: 'pgboss_bench', max: 10 });
  boss.on('error', () => {});
  await boss.start();
  await boss.createQueue('bench');
  await boss.insert(Array.from({ length: DRAIN_JOBS }, (_, i) => ({ name: 'bench', data: { i } })));
  let done = 0;
  const before = await counter.read();
  const databaseCpu0 = await counter.databaseCpuMs();
  const benchCpu0 = process.cpuUsage();
  const t0 = now();
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (done < DRAIN_JOBS) {
        const jobs = await boss.fetch<{ i: number }>('bench');
        if (jobs.length === 0) {
          await sleep(5);
          continue;
        }
        await boss.complete('bench', jobs[0].id);
        done++;
      }
    }),
  );
  const rate = DRAIN_JOBS / ((now() - t0) / 1000);
  const benchCpu = process.cpuUsage(benchCpu0);
  const databaseCpu = databaseCpuPerJob(databaseCpu0, await counter.databaseCpuMs(), DRAIN_JOBS);
  const statementsPerJob = await counter.perJob(before, DRAIN_JOBS, 'pg-boss');
  await boss.stop({ graceful: false, wait: true });
  emit('pgboss_fetch_complete_per_s', rate, 'jobs/s', {
    jobs: DRAIN_JOBS, consumers: WORKERS, version: '10.4.2', statements_per_job: statementsPerJob,
    bench_cpu_ms_per_job: Math.round(((benchCpu.user + benchCpu.system) / 1000 / DRAIN_JOBS) * 100) / 100, database_cpu_ms_per_job: databaseCpu,
  });
  return rate;
}

/**
 * The fan-out's browsers: FANOUT_CLIENTS socket.io clients spread over FANOUT_CLIENT_PROCESSES
 * child processes (bench/fanout-clients.ts), as real browsers are separate processes. A latency is
 * the receiving process's clock minus the sender's (both performance.timeOrigin +
 * performance.now(), the same wall clock); the estimated offset between them is reported.
 */
const FANOUT_CLIENT_PROCESSES = Number(process.env.FANOUT_CLIENT_PROCESSES ?? 4);

async function clockOffsetMs(fleet: ClientFleet): Promise<number> {
  return round(Math.max(...(await fleet.clockOffsets()).map(Math.abs)));
}

async function fanout(url: string, team: Team, workers: SimWorker[]): Promise<number> {
  let assigned!: (v: { w: SimWorker; a: Assignment }) => void;
  const got = new Promise<{ w: SimWorker; a: Assignment }>((resolve) => (assigned = resolve));
  for (const w of workers) w.onAssignment = (worker, a) => void worker.start(a).then(() => assigned({ w: worker, a }));
  const job = await trpc<{ id: string }>(url, team.apiKey, 'jobs.submit', { teamId: team.teamId, kind: 'TRAIN', config: { environmentVersionId: team.envVersionId } });
  const { w, a } = await got;
  const clients = await ClientFleet.open(url, FANOUT_CLIENTS, FANOUT_CLIENT_PROCESSES, `Bearer ${team.apiKey}`);
  await clients.join('subscribe', `run:${job.id}`);
  await clients.measure(true);
  const batchesPerSecond = 50;
  const perBatch = FANOUT_EVENTS_PER_S / batchesPerSecond;
  let seq = 0;
  let step = 0;
  // As the daemon does (gpu-worker/daemon.ts): batches queue, up to STREAM_WINDOW are under way
  // over the socket, and each leaves the queue when its ack (sent once it is stored) comes.
  const queue: StreamBatch[] = [];
  const stored: number[] = [];
  // How long each batch waited for a place in the window (its acks late): part of its latency.
  const windowWait: number[] = [];
  const madeAt = new Map<number, number>();
  let inFlight = 0;
  let allAcked!: () => void;
  const acked = new Promise<void>((resolve) => (allAcked = resolve));
  let producing = true;
  const pump = () => {
    while (inFlight < STREAM_WINDOW && queue.length > 0) {
      const batch = queue.shift()!;
      const sent = now();
      windowWait.push(sent - madeAt.get(batch.seq)!);
      inFlight++;
      void w.stream(batch).then(() => {
        stored.push(now() - sent);
        inFlight--;
        if (!producing && inFlight === 0 && queue.length === 0) allAcked();
        pump();
      });
    }
  };
  const t0 = now();
  while (now() - t0 < FANOUT_SECONDS * 1000) {
    const due = t0 + (seq * 1000) / batchesPerSecond;
    if (due > now()) await sleep(due - now());
    const items = Array.from({ length: perBatch }, () => ({ step: step++, key: 'bench/sent_at', value: now() }));
    madeAt.set(seq, items[0].value);
    queue.push({ attemptId: a.attemptId, fencingToken: a.fencingToken, seq: seq++, kind: 'metrics', items });
    pump();
  }
  producing = false;
  if (inFlight > 0 || queue.length > 0) await acked;
  await sleep(1_000);
  await clients.measure(false);
  const { latencies, first } = await clients.arrivals();
  const clockOffset = await clockOffsetMs(clients);
  await clients.close();
  const expected = step * FANOUT_CLIENTS;
  emit('fanout_p50_ms', quantile(latencies, 0.5), 'ms', { events_per_s: FANOUT_EVENTS_PER_S, clients: FANOUT_CLIENTS, delivered: latencies.length, expected });
  const p99 = quantile(latencies, 0.99);
  emit('fanout_p99_ms', p99, 'ms', {
    events_per_s: FANOUT_EVENTS_PER_S, clients: FANOUT_CLIENTS, client_processes: clients.size, batches_per_s: batchesPerSecond, via: `worker socket.io, ${STREAM_WINDOW} batches under way`,
    what: "each item from the simulated worker's send to each client's receipt, the clients in their own processes",
    clock_offset_max_ms: clockOffset,
    first_client_p50_ms: round(quantile(first, 0.5)), first_client_p99_ms: round(quantile(first, 0.99)),
    stored_ack_p50_ms: round(quantile(stored, 0.5)), stored_ack_p99_ms: round(quantile(stored, 0.99)),
    window_wait_p99_ms: round(quantile(windowWait, 0.99)), window_wait_max_ms: round(Math.max(...windowWait)),
  });
  await w.finish(a);
  return p99;
}

/**
 * A bare socket.io server in its own process, and the same 100 clients (in the same child
 * processes' arrangement) echoing through it. Then, as a floor for the fan-out, the same server
 * relaying the fan-out's batches from a publisher in this process to a room of the 100: what
 * remains of the fan-out's latency with no database and no checks.
 */
async function echo(): Promise<{ echoP99: number; floorP99: number }> {
  const script = `
    const http = require('node:http'); const { Server } = require('socket.io');
    const server = http.createServer(); const io = new Server(server);
    io.on('connection', (s) => {
      s.on('echo', (m, ack) => ack(m));
      s.on('join', (room, ack) => { s.join(room); ack(); });
      s.on('relay', (m) => io.to('room').emit('stream', m));
    });
    server.listen(0, '127.0.0.1', () => console.log('port ' + server.address().port));`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) => child.stdout.on('data', (d: Buffer) => { const m = /port (\d+)/.exec(d.toString()); if (m) resolve(Number(m[1])); }));
  const bare = `http://127.0.0.1:${port}`;
  const clients = await ClientFleet.open(bare, FANOUT_CLIENTS, FANOUT_CLIENT_PROCESSES);
  // 1,000 echoes a second in all, spread over the clients (each process its share), for as long
  // as the fan-out ran; a round trip is timed by the client that sent it.
  const rtts = await clients.echo(FANOUT_EVENTS_PER_S, FANOUT_SECONDS);
  const p99 = quantile(rtts, 0.99);
  emit('echo_p99_ms', p99, 'ms', {
    clients: FANOUT_CLIENTS, client_processes: clients.size, echoes: rtts.length, p50_ms: round(quantile(rtts, 0.5)),
    what: 'round trip through a bare socket.io server, timed by each sending client in its process',
  });

  await clients.join('join', 'room');
  await clients.measure(true);
  const publisher = connect(bare, { forceNew: true, transports: ['websocket'], reconnection: false });
  await new Promise<void>((resolve) => publisher.once('connect', () => resolve()));
  const perBatch = FANOUT_EVENTS_PER_S / 50;
  let step = 0;
  const r0 = now();
  for (let seq = 0; now() - r0 < FANOUT_SECONDS * 1000; seq++) {
    const due = r0 + seq * 20;
    if (due > now()) await sleep(due - now());
    publisher.emit('relay', { jobId: 'bench', kind: 'metrics', attempt: 1, seq, items: Array.from({ length: perBatch }, () => ({ step: step++, key: 'bench/sent_at', value: now() })) });
  }
  await sleep(1_000);
  await clients.measure(false);
  const { latencies } = await clients.arrivals();
  const floorP99 = quantile(latencies, 0.99);
  emit('broadcast_floor_p99_ms', floorP99, 'ms', {
    p50_ms: round(quantile(latencies, 0.5)), clients: FANOUT_CLIENTS, client_processes: clients.size, delivered: latencies.length, expected: step * FANOUT_CLIENTS,
    what: 'the same batches relayed by a bare socket.io server to the same clients',
  });
  await clients.close();
  publisher.close();
  child.kill();
  return { echoP99: p99, floorP99 };
}

async function series(url: string, databaseUrl: string, team: Team) {
  const db = createDb(databaseUrl, 2);
  const job = await db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', config: {}, state: 'SUCCEEDED' } });
  await db.$executeRaw`
    INSERT INTO "MetricPoint" ("jobId", key, step, value, attempt)
    SELECT ${job.id}, 'loss/total', s, sin(s / 1000.0) + random() * 0.1, 1 FROM generate_series(0, ${SERIES_POINTS - 1}::int) AS s`;
  // Ingest keeps rollups as batches arrive; points written in bulk here get theirs rebuilt.
  await rebuildRollups(db, job.id);
  await db.$executeRawUnsafe('ANALYZE "MetricPoint"');
  const viaApi: number[] = [];
  const direct: number[] = [];
  for (let i = 0; i < 6; i++) {
    let t = now();
    const buckets = await trpc<unknown[]>(url, team.apiKey, 'runs.series', { teamId: team.teamId, jobId: job.id, key: 'loss/total', buckets: 500 }, 'query');
    if (i > 0) viaApi.push(now() - t);
    // At most the buckets asked for; widths rounded up to whole rollups may give a few fewer.
    if (buckets.length > 500 || buckets.length < 400) throw new Error(`expected up to 500 buckets, got ${buckets.length}`);
    t = now();
    await metricSeries(db, job.id, 'loss/total', 500);
    if (i > 0) direct.push(now() - t);
  }
  await db.$disconnect();
  emit('series_query_ms', quantile(viaApi, 0.5), 'ms', { points: SERIES_POINTS, buckets: 500, via: 'tRPC runs.series over HTTP, median of 5 warm', sql_ms: Math.round(quantile(direct, 0.5) * 100) / 100, target: '< 100' });
}

interface RoundFigure {
  ms: number;
  group_ms: number;
  placed: number;
  preempted: number;
  read: number;
  queued: number;
}

const SCALE_WHAT = {
  incremental: 'Planner.round(queue) per round of a draining queue, one Planner kept from round to round (as the leader does)',
  fast: 'planRound(byKind(queue)) per round of a draining queue, planned from nothing each round',
  reference: 'referencePlan(queueWindow(input)) per round of a draining queue',
};

/**
 * plan_round_ms: p50 and p99 of consecutive rounds of a draining queue, for each size and both
 * priority mixes, each in its own process (bench/scheduler-scale.ts). A size that runs past its
 * budget is stopped and reported as cut off, with the rounds it finished.
 */
async function scale(): Promise<void> {
  for (const size of SCALE_SIZES.filter((s) => !SCALE_ONLY || SCALE_ONLY.includes(s.workers))) {
    for (const [planner, priorities] of SCALE_PLANNERS.flatMap((p) => (['equal', 'mixed'] as const).map((m) => [p, m] as const))) {
      const args = { ...size, priorities, rounds: SCALE_ROUNDS, planner };
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'scheduler-scale.ts'), JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'inherit'] });
      const rounds: RoundFigure[] = [];
      let buffered = '';
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) if (line.trim()) rounds.push(JSON.parse(line) as RoundFigure);
      });
      let cutOff = false;
      const timer = setTimeout(() => {
        cutOff = true;
        child.kill('SIGKILL');
      }, SCALE_BUDGET_S * 1000);
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      clearTimeout(timer);
      const what = { planner, workers: size.workers, devices: size.workers * 8, queued: size.queued, priorities, teams: 50, users: 500, busy: 0.9 };
      const times = rounds.map((r) => r.ms);
      // After the queue's arrival: the leading rounds that place or preempt 1% of the devices or
      // more are its burst (thousands of decisions each); the rounds after them are the steady state.
      const burst = rounds.findIndex((r) => r.placed + r.preempted < 0.01 * size.workers * 8);
      const steady = burst === -1 ? [] : times.slice(burst);
      const figures = rounds.length === 0 ? {} : {
        p50_ms: round(quantile(times, 0.5)), p99_ms: round(quantile(times, 0.99)), first_round_ms: round(times[0]),
        ...(steady.length === 0 ? {} : { burst_rounds: burst, steady_p50_ms: round(quantile(steady, 0.5)), steady_p99_ms: round(quantile(steady, 0.99)) }),
        placed_per_round: round(rounds.reduce((n, r) => n + r.placed, 0) / rounds.length),
        preempted_per_round: round(rounds.reduce((n, r) => n + r.preempted, 0) / rounds.length),
        read_per_round: round(rounds.reduce((n, r) => n + r.read, 0) / rounds.length),
        group_p99_ms: round(quantile(rounds.map((r) => r.group_ms), 0.99)),
      };
      if (cutOff || code !== 0) {
        process.stdout.write(`${JSON.stringify({ name: 'plan_round_ms', value: null, unit: 'ms', cut_off: cutOff, exit_code: code, budget_s: SCALE_BUDGET_S, rounds_done: rounds.length, rounds_asked: SCALE_ROUNDS, ...what, ...figures })}\n`);
      } else {
        emit('plan_round_ms', quantile(times, 0.99), 'ms', { ...what, rounds: rounds.length, ...figures, what: SCALE_WHAT[planner as keyof typeof SCALE_WHAT], target: size.workers === 2_000 ? '< 50 (mixed)' : size.workers === 10_000 ? '< 200 (mixed)' : undefined });
      }
    }
  }
}

function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Polls `probe` every 50 ms until it returns a value; throws after `timeoutMs`. */
async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * Elastic workers on a one-node Slurm (issue 22): a team with no worker but a Slurm provider; each
 * run submits a 3-step job, which waits until the provider's agent has sbatch-ed a worker, Slurm
 * has started it and it has registered; once done, the worker idles for `idleSeconds`, drains and
 * exits, and its Slurm job ends. Runs one after the other, so each is a cold start.
 */
async function slurmElastic(url: string, databaseUrl: string): Promise<void> {
  const started = await startLocalSlurm();
  if ('error' in started) {
    process.stdout.write(`${JSON.stringify({ name: 'slurm', skipped: `Slurm did not start (root, apt-get install slurm-wlm munge): ${started.error.replace(/\s*\n\s*/g, '; ')}` })}\n`);
    return;
  }
  const cluster = started;
  const slurm = { slurmConf: cluster.slurmConf };
  const db = createDb(databaseUrl, 2);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-bench-slurm-'));
  const runsWanted = Number(process.env.BENCH_SLURM_RUNS ?? 3);
  const idleSeconds = 5;
  let agent: ProviderAgent | null = null;
  let polling: Promise<void> = Promise.resolve();
  try {
    const team = await seedTeam(db);
    const settings = {
      partition: 'whetstone', gres: 'gpu:1', devicesPerWorker: 1, deviceKind: 'WASM', cpusPerWorker: 1, memoryMbPerWorker: 2048, timeLimit: '30',
      installPath: repoRoot, idleSeconds, registerTimeoutSeconds: 300, noticeSeconds: 0, maxWorkers: 1, maxPendingLaunches: 1,
    };
    const provider = await trpc<{ id: string; token: string }>(url, team.apiKey, 'providers.create', { teamId: team.teamId, name: 'bench', kind: 'SLURM', settings });
    agent = new ProviderAgent({
      server: url, token: provider.token, slurm,
      workerEnv: { WHETSTONE_HOME: home, WHETSTONE_BACKEND: 'wasm' },
      logDir: path.join(cluster.dir, 'jobs'),
      log: () => {},
    });
    polling = agent.run();
    const samples: Record<string, number>[] = [];
    for (let i = 0; i < runsWanted; i += 1) {
      const submittedAt = Date.now();
      const job = await submitTrain(url, team, 3, 1000);
      // Slurm's view, sampled every 50 ms (the agent reports it only at its next poll): when the
      // worker's job was queued, started and ended, found by its name (whetstone-worker-<launch>).
      let slurmJob: string | null = null;
      let slurmQueuedAt: number | null = null;
      let slurmRunningAt: number | null = null;
      const watchSlurm = async () => {
        if (!slurmJob) {
          const launches = await db.clusterLaunch.findMany({ where: { providerId: provider.id, createdAt: { gte: new Date(submittedAt - 1_000) } }, select: { id: true } });
          const names = new Set(launches.map((l) => `whetstone-worker-${l.id}`));
          const listed = await new Promise<string>((resolve) =>
            execFile('squeue', ['-h', '-t', 'all', '-o', '%i|%j'], { env: { ...process.env, SLURM_CONF: cluster.slurmConf }, encoding: 'utf8' }, (_e, out) => resolve(out ?? '')));
          slurmJob = listed.split('\n').map((l) => l.trim().split('|')).find(([, name]) => names.has(name))?.[0] ?? null;
          if (slurmJob) slurmQueuedAt = Date.now();
        }
        if (!slurmJob) return null;
        const status = (await squeue([slurmJob], slurm)).get(slurmJob);
        if (status?.state === 'RUNNING' && slurmRunningAt === null) slurmRunningAt = Date.now();
        return status;
      };
      const attempt = await until('the job to start on a Slurm worker', async () => {
        await watchSlurm();
        return db.jobAttempt.findFirst({ where: { jobId: job.id }, include: { worker: true } });
      }, 300_000);
      const done = await until('the job to finish', async () => {
        await watchSlurm();
        const row = await db.job.findUniqueOrThrow({ where: { id: job.id } });
        if (row.state === 'FAILED' || row.state === 'CANCELLED') throw new Error(`the job ${row.state}: ${row.failureReason ?? ''}`);
        return row.state === 'SUCCEEDED' ? row : null;
      }, 300_000);
      const ended = await until("the worker's Slurm job to end", async () => {
        const status = await watchSlurm();
        return status?.finished ? { at: Date.now(), state: status.state } : null;
      }, 300_000);
      const launch = await db.clusterLaunch.findFirstOrThrow({ where: { providerId: provider.id, externalId: slurmJob } });
      const s = (t: Date | number | null | undefined) => (t == null ? NaN : round(((typeof t === 'number' ? t : t.getTime()) - submittedAt) / 1000));
      samples.push({
        submit_to_running_s: s(attempt.startedAt),
        launch_ordered_s: s(launch.createdAt),
        after_order_s: round((attempt.startedAt.getTime() - launch.createdAt.getTime()) / 1000),
        slurm_queued_s: s(slurmQueuedAt),
        slurm_running_s: s(slurmRunningAt),
        worker_registered_s: s(attempt.worker?.registeredAt),
        job_seconds: round((done.finishedAt!.getTime() - attempt.startedAt.getTime()) / 1000),
        idle_to_released_s: round((ended.at - done.finishedAt!.getTime()) / 1000),
      });
      if (ended.state !== 'COMPLETED') throw new Error(`the worker's Slurm job ended ${ended.state}, not COMPLETED`);
      // The next run starts from no worker: the launch is over on the server's side too.
      await until('the launch to be over', async () => (await db.clusterLaunch.count({ where: { providerId: provider.id, state: { in: ['ORDERED', 'SUBMITTING', 'PENDING', 'RUNNING'] } } })) === 0, 60_000);
    }
    const median = (key: string) => quantile(samples.map((x) => x[key]), 0.5);
    const what = { runs: samples.length, poll_seconds: Number(process.env.WHETSTONE_PROVIDER_POLL_SECONDS ?? 5), backend: 'wasm', slurm: 'one node, scripts/slurm/local-cluster.sh' };
    emit('slurm_submit_to_running_s', median('submit_to_running_s'), 's', {
      ...what,
      what: "median: a job's submit, with no worker in its pool, to its start on a worker the provider's agent sbatch-ed and Slurm started; each submit comes right after a poll, so launch_ordered_s is the poll's worst case",
      launch_ordered_s: median('launch_ordered_s'), after_order_s: median('after_order_s'), slurm_queued_s: median('slurm_queued_s'), slurm_running_s: median('slurm_running_s'), worker_registered_s: median('worker_registered_s'),
      samples: samples.map((x) => x.submit_to_running_s),
    });
    emit('slurm_idle_to_released_s', median('idle_to_released_s'), 's', {
      ...what,
      what: "median: the job's end to the end (COMPLETED) of its worker's Slurm job: the idle time, the drain and the exit",
      idle_seconds: idleSeconds, beyond_idle_s: round(median('idle_to_released_s') - idleSeconds),
      samples: samples.map((x) => x.idle_to_released_s),
    });
  } finally {
    if (agent) agent.stopped = true;
    await polling;
    // Anything left running in Slurm goes with the cluster.
    for (const l of await db.clusterLaunch.findMany({ where: { externalId: { not: null }, state: { in: ['PENDING', 'RUNNING'] } } }).catch(() => [])) await scancel(l.externalId!, slurm).catch(() => {});
    await db.$disconnect();
    await cluster.stop();
    fs.rmSync(home, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (runs('scale')) await scale();
  if (ONLY && ONLY.every((section) => section === 'scale')) return;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-bench-'));
  fs.chmodSync(home, 0o755);
  const embedded = process.env.DATABASE_URL ? null : await startEmbeddedPostgres(home, undefined, undefined, ['-c', 'shared_preload_libraries=pg_stat_statements']);
  const serverUrl = process.env.DATABASE_URL ?? embedded!.url;
  const name = `whetstone_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const databaseUrl = withDatabase(serverUrl, name);
  try {
    if (runs('round')) {
      const r = await roundApi((database) => withDatabase(serverUrl, database), admin);
      const what = { workers: r.workers, queued: r.queued, running: r.running, priorities: '0-4', round_s: round(r.roundS), placed: r.placed, preempted: r.preempted, queries: r.queries };
      emit('api_p99_ms_during_round', r.p99, 'ms', { ...what, p50_ms: round(r.p50), max_ms: round(r.max), what: 'quotas.get over tRPC every 20 ms, the API warmed, from the queue arriving until the round wrote its waiting reasons', target: '< 50' });
    }
    if (ONLY && ONLY.every((section) => section === 'scale' || section === 'round')) return;
    await migrate(databaseUrl);
    const db = createDb(databaseUrl, 2);
    const team = await seedTeam(db, { maxConcurrentDevices: 100_000 });
    await db.teamQuota.update({ where: { teamId: team.teamId }, data: { maxQueuedJobs: 100_000 } });
    await db.$disconnect();
    const { url, proc: server } = await startServer({ databaseUrl, name: 'bench-server', leaseSeconds: 300 });
    const workers: SimWorker[] = [];
    for (let i = 0; i < WORKERS; i++) workers.push(await SimWorker.register(url, team.workerToken, i));
    // Each worker heartbeats every 5 s, spread over the interval as real daemons' are.
    const beats = workers.map((w, i) => setTimeout(() => {
      beats[i] = setInterval(() => void w.post('/api/workers/heartbeat', {}).catch(() => {}), 5_000);
    }, (i * 5_000) / WORKERS));

    if (runs('submit')) await submitLatency(url, team, workers);
    if (runs('drain')) {
      const counter = await statementCounter(databaseUrl);
      const placements = await drain(url, databaseUrl, team, workers, counter, server.child.pid);
      const boss = await pgBoss(databaseUrl, counter);
      await counter.end();
      emit('placement_vs_pgboss', placements / boss, 'ratio', { target: '>= 1.0' });
    }
    if (runs('fanout')) {
      const fan = await fanout(url, team, workers);
      const { echoP99, floorP99 } = await echo();
      emit('fanout_vs_echo_p99', fan / echoP99, 'ratio', { target: '<= 2', fanout_vs_floor_p99: round(fan / floorP99) });
    }
    if (runs('series')) await series(url, databaseUrl, team);
    if (runs('slurm')) await slurmElastic(url, databaseUrl);

    beats.forEach((b) => clearInterval(b));
    workers.forEach((w) => w.socket.close());
  } finally {
    await killAll();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
    await embedded?.stop();
    fs.rmSync(home, { recursive: true, force: true });
  }
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
