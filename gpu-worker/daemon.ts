/**
 * The worker daemon: `tsx gpu-worker/daemon.ts --server URL --token wst_…` (or `npm run worker -- …`).
 *
 * It registers with a pool's token once (the credential it gets back is kept in
 * $WHETSTONE_HOME/worker-<name>.json, so a restart is the same worker), advertises the devices of
 * the engine's backend, heartbeats its leases, and takes assignments pushed over socket.io
 * (namespace /workers) or returned by heartbeats (the polling fallback). Each assignment runs in a
 * job runner child process (job-runner/), so training never stalls this event loop.
 *
 * This file is the daemon's own lifecycle: registration, the push channel, heartbeats, drain and
 * stop, and the command line. The rest is in daemon/: how it talks to the server (transport.ts:
 * HTTP, and socket.io with acks), an attempt's lifecycle (attempts.ts: runner, start, signals,
 * checkpoints, finish) and its stream batches on their way out (outbox.ts: numbered, ordered,
 * retried; over the socket a few under way at once, over HTTP one at a time).
 *
 * Losing the server does not stop a job: batches wait in memory, heartbeats back off
 * exponentially, and socket.io reconnects. SIGTERM drains: no new work, every job is asked to
 * checkpoint and stop (preempt), reported "preempted", then the daemon exits. SIGUSR1 drains the
 * same way: it is the notice Slurm's `--signal=B:USR1@N` gives before a time limit or preemption.
 *
 * Options (a flag, or its environment variable):
 *   --server URL             WHETSTONE_URL (default http://127.0.0.1:3000)
 *   --token wst_…            WHETSTONE_WORKER_TOKEN: the pool's registration token
 *   --token-file PATH        WHETSTONE_WORKER_TOKEN_FILE: the token read from a file, which must be
 *                            the owner's alone (mode 0600 or 0400; refused when group or others
 *                            may read or write it). It keeps the token out of argv (ps). One of
 *                            the two per source: a flag pair or a variable pair both set is refused;
 *                            a flag wins over a variable.
 *   --name NAME              the worker's name in its pool (default the host name)
 *   --label KEY=VALUE        repeated
 *   --idle-exit SECONDS      WHETSTONE_IDLE_EXIT_SECONDS: once no job has run for that long
 *                            (counted from when it has registered and connected, or from the last
 *                            job's end; a job pushed or listed by a heartbeat restarts the count),
 *                            drain and exit 0. Under Slurm this hands the node back.
 *   --check                  the backend this machine would give jobs, and its speed
 * Under Slurm (SLURM_JOB_ID set) the worker gets the labels `slurm.jobId` (and `slurm.cluster`
 * from SLURM_CLUSTER_NAME), which win over a --label of the same key, and its default name is
 * `<hostname>-slurm-<jobid>`: several workers on one node keep separate credential files.
 * gpu-worker/cluster/worker-script.ts writes the batch script that starts one.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { io } from 'socket.io-client';
import { z } from 'zod';
import { backendReport, type BackendReport, initBackend } from './engine/backend';
import { checkBackend } from './engine/doctor';
import { type Assignment, type AssignmentAck, ASSIGNMENT_EVENT, assignmentSchema, heartbeatResponseSchema, DEVICES_ROUTE, devicesRequestSchema, LEAVE_ROUTE, registerResponseSchema, sampleRequestSchema } from '../sdk/worker-protocol';
import { Attempts, type AttemptSignal } from './daemon/attempts';
import { backoff, HttpStatusError, retry, sleep, WorkerTransport } from './daemon/transport';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface DaemonOptions {
  /** The control plane, e.g. http://127.0.0.1:3000. */
  server: string;
  /** The pool's registration token (wst_…); needed only when no saved credential works. */
  token?: string;
  /** The worker's name in its pool; default the host name. */
  name?: string;
  /** Where the credential is kept; default WHETSTONE_HOME or .whetstone in the checkout. */
  home?: string;
  labels?: Record<string, string>;
  /** Backend for the daemon's device report and its runners; default WHETSTONE_BACKEND or auto. */
  backend?: string;
  /** Seconds between heartbeats until the server says otherwise. */
  heartbeatSeconds?: number;
  /** How long a drain waits for jobs to checkpoint before killing them. Default 120 s. */
  drainTimeoutMs?: number;
  /** Extra environment for runner processes. */
  runnerEnv?: Record<string, string | undefined>;
  /** Keep a runner forked ahead of the next attempt (default true; daemon/attempts.ts says why). */
  spareRunner?: boolean;
  /**
   * Drain and stop once no job has run for this many seconds (counted from the end of start(),
   * registered and connected, or from the last job's end; a job taken restarts the count). Unset: never.
   */
  idleExitSeconds?: number;
  /** Called once the idle drain is over (the command line exits 0 there). */
  onIdleExit?: () => void;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

interface SavedState {
  server: string;
  workerId: string;
  credential: string;
}

export class WorkerDaemon {
  readonly name: string;
  workerId: string | null = null;
  private readonly transport: WorkerTransport;
  private readonly attempts: Attempts;
  private draining = false;
  /** The pool drains this worker (an admin's drain): undone when an admin resumes it, unlike `draining`. */
  private poolDraining = false;
  private stopped = false;
  private heartbeatMs: number;
  private wakeHeartbeat: (() => void) | null = null;
  private heartbeatLoop: Promise<void> | null = null;
  private readonly statePath: string;
  private readonly server: string;
  /** When the last job ended, or when start() was done if none has run; null before and while one runs. */
  private idleSince: number | null = null;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(private readonly o: DaemonOptions) {
    this.server = o.server.replace(/\/+$/, '');
    this.name = o.name ?? os.hostname();
    const home = o.home ?? process.env.WHETSTONE_HOME ?? path.join(REPO_ROOT, '.whetstone');
    this.statePath = path.join(home, `worker-${this.name.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`);
    this.heartbeatMs = (o.heartbeatSeconds ?? 5) * 1000;
    this.transport = new WorkerTransport(this.server);
    this.attempts = new Attempts({
      transport: this.transport,
      backend: o.backend,
      runnerEnv: o.runnerEnv,
      spareRunner: o.spareRunner,
      accepting: () => !this.draining && !this.poolDraining && !this.stopped,
      stopped: () => this.stopped,
      log: (level, message) => this.log(level, message),
      onDeviceLost: () => void this.reprobeDevices(),
    });
  }

  /** The process id of the runner forked ahead of the next attempt, if there is one. */
  get spareRunnerPid(): number | undefined {
    return this.attempts.sparePid;
  }

  /** The attempts running here, by attempt id. */
  get jobs() {
    return this.attempts.jobs;
  }

  /** Registers (or reuses the saved credential), connects, and starts heartbeating. */
  async start(): Promise<void> {
    const saved = this.loadState();
    if (saved) {
      this.transport.credential = saved.credential;
      this.workerId = saved.workerId;
      this.log('info', `using the saved credential of worker ${saved.workerId}`);
    } else {
      await this.register();
    }
    // Once per start: which kernels this machine's jobs will run (on wasm: native, or why not).
    const report = backendReport() ?? (await initBackend(this.o.backend ?? process.env.WHETSTONE_BACKEND));
    if (report.kernels) this.log(report.kernels.startsWith('native kernels:') ? 'info' : 'warn', report.kernels);
    this.connect();
    this.heartbeatLoop = this.runHeartbeats();
    // Idle from here (registered, taking work) until a job comes.
    if (this.idleSince === null && this.jobs.size === 0) this.idleSince = Date.now();
    this.armIdleTimer();
  }

  /** SIGTERM: take no new work, preempt every job (each checkpoints), report them, stop. */
  async drain(): Promise<void> {
    if (this.draining && this.stopped) return;
    this.draining = true;
    this.log('info', `draining: ${this.jobs.size} job(s) asked to checkpoint and stop`);
    for (const job of this.jobs.values()) this.attempts.preempt(job);
    const all = Promise.all([...this.jobs.values()].map((j) => j.over));
    const timeout = sleep(this.o.drainTimeoutMs ?? 120_000).then(() => 'timeout' as const);
    if ((await Promise.race([all, timeout])) === 'timeout') {
      this.log('warn', 'drain timed out: killing the remaining runners');
      for (const job of this.jobs.values()) job.runner?.kill();
      await Promise.race([all, sleep(10_000)]);
    }
    await this.leave();
    await this.stop();
  }

  /**
   * Tells the server this worker is going (LEAVE_ROUTE): it is OFFLINE at once, so nothing more is
   * placed here, and what was placed while it drained goes back to the queue. Best effort: a
   * server that cannot be told finds out when the heartbeats stop.
   */
  private async leave(): Promise<void> {
    if (!this.transport.credential) return;
    try {
      await Promise.race([this.transport.json('POST', LEAVE_ROUTE, {}), sleep(10_000).then(() => Promise.reject(new Error('no answer in 10 s')))]);
    } catch (e) {
      this.log('warn', `could not tell the server this worker leaves: ${(e as Error).message}`);
    }
  }

  /** Stops without waiting for jobs (they are killed; their leases will expire). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.attempts.dropSpare();
    for (const job of this.jobs.values()) job.runner?.kill();
    this.transport.socket?.close();
    this.wakeHeartbeat?.();
    await this.heartbeatLoop;
  }

  // ───────────────────────────── idle exit ─────────────────────────────

  /** Takes an assignment (pushed or listed by a heartbeat): it restarts the idle count, and so does its end. */
  private take(a: Assignment, ack: ((answer: AssignmentAck) => void) | null = null): void {
    const known = this.jobs.has(a.attemptId);
    const over = this.attempts.accept(a, ack);
    if (known || !this.jobs.has(a.attemptId)) return; // listed again, already run, or not taken
    this.idleSince = null;
    void over.finally(() => {
      if (this.jobs.size === 0) this.idleSince = Date.now();
      this.armIdleTimer();
    });
  }

  /** (Re)schedules the idle check for when the idle time would be up. */
  private armIdleTimer(): void {
    const seconds = this.o.idleExitSeconds;
    if (seconds === undefined || this.stopped || this.draining) return;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    if (this.jobs.size > 0 || this.idleSince === null) return; // re-armed when the last job ends
    const due = this.idleSince + seconds * 1000 - Date.now();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.stopped || this.draining) return;
      if (this.jobs.size > 0 || this.idleSince === null || Date.now() - this.idleSince < seconds * 1000) return this.armIdleTimer();
      this.log('info', `no job for ${seconds} s (--idle-exit): draining and exiting`);
      void this.drain().then(() => this.o.onIdleExit?.());
    }, Math.max(0, due));
  }

  // ───────────────────────────── registration and state ─────────────────────────────

  private loadState(): SavedState | null {
    if (!existsSync(this.statePath)) return null;
    try {
      const state = JSON.parse(readFileSync(this.statePath, 'utf8')) as SavedState;
      return state.server === this.server && typeof state.credential === 'string' ? state : null;
    } catch {
      return null;
    }
  }

  private async register(): Promise<void> {
    if (!this.o.token) throw new Error(`no saved credential in ${this.statePath}: give a registration token to register (WHETSTONE_WORKER_TOKEN, --token-file, or --token wst_…)`);
    const report = await initBackend(this.o.backend ?? process.env.WHETSTONE_BACKEND);
    const body = {
      token: this.o.token,
      name: this.name,
      hostname: os.hostname(),
      backend: report.backend,
      version: packageVersion(),
      labels: this.o.labels ?? {},
      devices: advertised(report),
    };
    const answer = registerResponseSchema.parse(await retry(() => this.transport.json('POST', '/api/workers/register', body, false), () => this.stopped));
    this.transport.credential = answer.credential;
    this.workerId = answer.workerId;
    mkdirSync(path.dirname(this.statePath), { recursive: true });
    writeFileSync(this.statePath, JSON.stringify({ server: this.server, workerId: answer.workerId, credential: answer.credential } satisfies SavedState, null, 2), { mode: 0o600 });
    this.log('info', `registered as worker ${answer.workerId} (${answer.pool} pool) with ${body.devices.length} ${report.backend} device(s)`);
  }

  /**
   * After a device was lost: probe the machine again and tell the server what it has now
   * (DEVICES_ROUTE). The probe runs in a fresh process: this one's backend was made once, and a
   * GPU that went away (or came back) shows only to a new adapter request. A GPU gone leaves the
   * worker with no device, so nothing more is placed here until it comes back (a restart probes
   * again at registration).
   */
  async reprobeDevices(): Promise<void> {
    if (this.reprobing) return this.reprobing;
    this.reprobing = (async () => {
      try {
        const found = devicesRequestSchema.parse(await probeInFreshProcess(this.o.backend ?? process.env.WHETSTONE_BACKEND));
        const answer = await this.transport.json('POST', DEVICES_ROUTE, found);
        this.log('info', `devices probed again after a device loss: ${found.devices.length} ${found.backend} device(s) advertised (${JSON.stringify(answer)})`);
      } catch (e) {
        this.log('warn', `could not probe and advertise the devices again: ${(e as Error).message}`);
      } finally {
        this.reprobing = null;
      }
    })();
    return this.reprobing;
  }

  private reprobing: Promise<void> | null = null;

  // ───────────────────────────── socket.io and heartbeats ─────────────────────────────

  private connect(): void {
    this.transport.socket?.close();
    const socket = io(`${this.server}/workers`, {
      auth: { credential: this.transport.credential },
      reconnection: true,
      reconnectionDelay: 500,
      reconnectionDelayMax: 30_000,
      randomizationFactor: 0.5,
    });
    socket.on('connect', () => {
      this.log('info', 'connected for pushes');
      this.wakeHeartbeat?.(); // catch up on anything pushed while away
    });
    socket.on('connect_error', (e) => this.log('warn', `push channel: ${e.message}`));
    socket.on(ASSIGNMENT_EVENT, (payload: unknown, ack?: unknown) => {
      const parsed = assignmentSchema.safeParse(payload);
      if (parsed.success) this.take(parsed.data, typeof ack === 'function' ? (ack as (answer: AssignmentAck) => void) : null);
      else this.log('warn', `ignored an invalid assignment: ${parsed.error.message}`);
    });
    // Inference sessions: a sampling request goes to the runner of the attempt it names.
    socket.on('sample', (payload: unknown) => {
      const parsed = sampleRequestSchema.safeParse(payload);
      if (!parsed.success) return this.log('warn', `ignored an invalid sampling request: ${parsed.error.message}`);
      const job = this.jobs.get(parsed.data.attemptId);
      if (job && job.assignment.kind === 'INFERENCE' && job.runner && !job.lost) job.runner.sample(parsed.data);
      else socket.emit('sample:done', { requestId: parsed.data.requestId, attemptId: parsed.data.attemptId, reason: 'error', text: '', error: 'this worker does not run that session' });
    });
    socket.on('signal', (payload: { attemptId?: string } & AttemptSignal) => {
      const job = payload?.attemptId ? this.jobs.get(payload.attemptId) : undefined;
      if (job) this.attempts.applySignal(job, payload);
    });
    this.transport.socket = socket;
  }

  private async runHeartbeats(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        await this.heartbeat();
        failures = 0;
      } catch (e) {
        failures++;
        if (e instanceof HttpStatusError && e.status === 401 && this.o.token) {
          this.log('warn', 'the server no longer knows this credential: registering again');
          await this.register().catch((err: Error) => this.log('error', `registration failed: ${err.message}`));
          if (this.transport.credential) this.connect();
        } else {
          this.log('warn', `heartbeat failed (${failures}): ${(e as Error).message}`);
        }
      }
      if (this.stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, failures > 0 ? backoff(failures, 500, 30_000) : this.heartbeatMs);
        this.wakeHeartbeat = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeHeartbeat = null;
    }
  }

  private async heartbeat(): Promise<void> {
    const attempts = [...this.jobs.values()].filter((j) => !j.lost).map((j) => ({ attemptId: j.assignment.attemptId, fencingToken: j.assignment.fencingToken }));
    const answer = heartbeatResponseSchema.parse(await this.transport.json('POST', '/api/workers/heartbeat', { attempts }));
    this.heartbeatMs = Math.max(200, answer.heartbeatSeconds * 1000);
    for (const lease of answer.leases) {
      const job = this.jobs.get(lease.attemptId);
      if (job) this.attempts.applySignal(job, lease);
    }
    if (answer.state === 'REVOKED') {
      this.log('error', 'this worker was revoked: stopping every job');
      for (const job of this.jobs.values()) this.attempts.lose(job, 'worker revoked');
      this.draining = true;
      return;
    }
    if (answer.state === 'DRAINING' && !this.poolDraining) {
      this.log('info', 'the pool drains this worker: no new work');
      this.poolDraining = true;
    } else if (answer.state === 'ONLINE' && this.poolDraining) {
      this.log('info', 'the pool resumed this worker: taking work again');
      this.poolDraining = false;
    }
    for (const a of answer.assignments) this.take(a);
  }

  private log(level: 'info' | 'warn' | 'error', message: string): void {
    if (this.o.log) this.o.log(level, message);
    else console.error(`[worker ${this.name}] ${level}: ${message}`);
  }
}

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}

const argsSchema = z.object({
  server: z.string().url(),
  token: z.string().startsWith('wst_', 'a registration token starts with wst_').optional(),
  name: z.string().min(1).max(100).optional(),
  labels: z.record(z.string(), z.string()),
  idleExitSeconds: z.number().int('whole seconds').positive('more than 0').max(365 * 86_400).optional(),
});

export type DaemonArgs = z.infer<typeof argsSchema>;

/**
 * Reads a registration token from a file that only its owner may read or write (mode & 0o077 is
 * 0): a token readable by others is a token given away. The token is never part of a message.
 */
export function readTokenFile(file: string): string {
  let mode: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw new Error(`the token file ${file} is not a regular file`);
    mode = stat.mode;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`the token file ${file} does not exist`, { cause: e });
    if ((e as NodeJS.ErrnoException).code) throw new Error(`the token file ${file} cannot be read: ${(e as NodeJS.ErrnoException).code}`, { cause: e });
    throw e;
  }
  if ((mode & 0o077) !== 0) {
    throw new Error(`the token file ${file} may be read or written by group or others (mode 0${(mode & 0o777).toString(8)}): chmod 600 ${file}`);
  }
  const token = readFileSync(file, 'utf8').trim();
  if (!token) throw new Error(`the token file ${file} is empty`);
  if (!token.startsWith('wst_') || /\s/.test(token)) throw new Error(`the token file ${file} does not hold a registration token (one line, wst_…)`);
  return token;
}

/** Under Slurm (SLURM_JOB_ID set): the labels tying the worker to its job, and its default name. */
export function slurmIdentity(env: Record<string, string | undefined>, hostname = os.hostname()): { labels: Record<string, string>; name: string } | null {
  const jobId = env.SLURM_JOB_ID;
  if (!jobId) return null;
  if (!/^\d+$/.test(jobId)) throw new Error(`SLURM_JOB_ID is not a Slurm job id: ${JSON.stringify(jobId.slice(0, 40))}`);
  const labels: Record<string, string> = { 'slurm.jobId': jobId };
  if (env.SLURM_CLUSTER_NAME) labels['slurm.cluster'] = env.SLURM_CLUSTER_NAME;
  return { labels, name: `${hostname}-slurm-${jobId}`.slice(0, 100) };
}

const USAGE = 'usage: daemon.ts --server URL (--token wst_… | --token-file PATH) [--name N] [--label k=v] [--idle-exit SECONDS], or daemon.ts --check';

export function parseArgs(argv: string[], env: Record<string, string | undefined> = process.env): DaemonArgs {
  const out: { server?: string; token?: string; tokenFile?: string; name?: string; labels: Record<string, string>; idle?: string } = {
    server: env.WHETSTONE_URL ?? 'http://127.0.0.1:3000',
    labels: {},
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value (${USAGE})`);
      return v;
    };
    if (flag === '--server') out.server = value();
    else if (flag === '--token') out.token = value();
    else if (flag === '--token-file') out.tokenFile = value();
    else if (flag === '--name') out.name = value();
    else if (flag === '--idle-exit') out.idle = value();
    else if (flag === '--label') {
      const [k, v] = value().split('=');
      if (!k || v === undefined) throw new Error('--label takes key=value');
      out.labels[k] = v;
    } else throw new Error(`unknown argument "${flag}" (${USAGE})`);
  }
  // The token: from the command line if given there, else from the environment; a token and a
  // token file from the same place are refused (which one was meant?).
  let token: string | undefined;
  if (out.token !== undefined && out.tokenFile !== undefined) throw new Error('give --token or --token-file, not both');
  else if (out.token !== undefined) token = out.token;
  else if (out.tokenFile !== undefined) token = readTokenFile(out.tokenFile);
  else if (env.WHETSTONE_WORKER_TOKEN && env.WHETSTONE_WORKER_TOKEN_FILE) throw new Error('set WHETSTONE_WORKER_TOKEN or WHETSTONE_WORKER_TOKEN_FILE, not both');
  else if (env.WHETSTONE_WORKER_TOKEN_FILE) token = readTokenFile(env.WHETSTONE_WORKER_TOKEN_FILE);
  else if (env.WHETSTONE_WORKER_TOKEN) token = env.WHETSTONE_WORKER_TOKEN;

  const idle = out.idle ?? env.WHETSTONE_IDLE_EXIT_SECONDS;
  let idleExitSeconds: number | undefined;
  if (idle !== undefined && idle !== '') {
    if (!/^\s*\d+(\.\d+)?\s*$/.test(idle)) throw new Error(`--idle-exit takes seconds, not ${JSON.stringify(idle.slice(0, 40))}`);
    idleExitSeconds = Number(idle);
  }
  const slurm = slurmIdentity(env);
  const parsed = argsSchema.safeParse({
    server: out.server,
    token,
    name: out.name ?? slurm?.name,
    labels: { ...out.labels, ...slurm?.labels },
    idleExitSeconds,
  });
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `--${i.path.join('.').replace('idleExitSeconds', 'idle-exit')}: ${i.message}`).join('; '));
  return parsed.data;
}

/** The devices a backend report advertises, as the worker protocol has them. */
function advertised(report: BackendReport) {
  const kinds = { cuda: 'CUDA', webgpu: 'WEBGPU', cpu: 'CPU', wasm: 'WASM' } as const;
  return report.devices.map((d, index) => ({ index, kind: kinds[d.kind], name: d.name.slice(0, 200), memoryBytes: Math.max(0, Math.floor(d.memoryBytes)) }));
}

const PROBE_FLAG = '--probe-devices';

/** This script with --probe-devices in a new process: its answer, parsed. */
function probeInFreshProcess(backend: string | undefined): Promise<unknown> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(import.meta.url), PROBE_FLAG],
      { cwd: REPO_ROOT, env: { ...process.env, ...(backend ? { WHETSTONE_BACKEND: backend } : {}) }, timeout: 120_000, maxBuffer: 1_000_000 },
      (error, stdout) => {
        if (error) return reject(new Error(`the probe failed: ${error.message.split('\n')[0]}`));
        try {
          resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? ''));
        } catch {
          reject(new Error(`the probe answered no JSON: ${stdout.slice(0, 200)}`));
        }
      },
    );
  });
}

async function main(): Promise<void> {
  if (process.argv.includes(PROBE_FLAG)) {
    // For reprobeDevices: the backend this machine gives now, and its devices; none when the
    // backend chosen cannot load any more (its GPU gone).
    const backend = process.env.WHETSTONE_BACKEND ?? 'auto';
    try {
      const report = await initBackend(backend);
      console.log(JSON.stringify({ backend: report.backend, devices: advertised(report) }));
    } catch {
      console.log(JSON.stringify({ backend: backend.slice(0, 40), devices: [] }));
    }
    process.exit(0);
  }
  if (process.argv.includes('--check')) {
    // `npm run worker -- --check`: the backend this machine would give jobs, and its speed.
    try {
      console.log(JSON.stringify(await checkBackend(process.env.WHETSTONE_BACKEND), null, 2));
      process.exit(0);
    } catch (e) {
      console.error((e as Error).message);
      process.exit(1);
    }
  }
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error((e as Error).message);
    process.exit(2);
  }
  let draining: Promise<void> | null = null;
  const daemon = new WorkerDaemon({
    server: args.server,
    token: args.token,
    name: args.name,
    labels: args.labels,
    idleExitSeconds: args.idleExitSeconds,
    onIdleExit: () => process.exit(0),
  });
  const drain = (signal: string) => {
    if (draining) return;
    console.error(`[worker] ${signal}: draining`);
    draining = daemon.drain().then(
      () => process.exit(0),
      (e: Error) => {
        console.error(`[worker] drain failed: ${e.message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => drain('SIGTERM'));
  process.on('SIGINT', () => drain('SIGINT'));
  // Slurm's notice before a time limit or preemption (sbatch --signal=B:USR1@N). A listener also
  // keeps Node from opening its inspector on SIGUSR1, its default.
  process.on('SIGUSR1', () => drain('SIGUSR1'));
  // Started by `npm start` with an IPC channel (server/local-mode.ts): when that server is gone,
  // however it ended, its local worker goes too rather than retrying a dead address for ever.
  // Nobody is left to hand jobs back to: their leases expire and the next start requeues them.
  process.on('disconnect', () => {
    console.error('[worker] the server process that started this worker is gone: stopping');
    void daemon.stop().finally(() => process.exit(0));
  });
  try {
    await daemon.start();
  } catch (e) {
    console.error(`[worker] ${(e as Error).message}`);
    process.exit(1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) void main();
