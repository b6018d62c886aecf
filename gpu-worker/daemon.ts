/**
 * The worker daemon: `tsx gpu-worker/daemon.ts --server URL --token wst_…` (or `npm run worker -- …`).
 *
 * It registers with a pool's token once (the credential it gets back is kept in
 * $WHETSTONE_HOME/worker-<name>.json, so a restart is the same worker), advertises the devices of
 * the engine's backend, heartbeats its leases, and takes assignments pushed over socket.io
 * (namespace /workers) or returned by heartbeats (the polling fallback). Each assignment runs in a
 * job runner child process (job-runner/), so training never stalls this event loop.
 *
 * Streams: the runner's batches are numbered per attempt (seq 0, 1, 2, …) as they arrive and sent
 * in that order, each retried with backoff until the server takes it, so a batch is never lost
 * and a retried one is recognised by its seq. They go over the socket.io connection while it is
 * up (an ack per batch, a few under way at once) and over HTTP, one at a time, otherwise. Every write carries the attempt's fencing
 * token; a 409 (or a heartbeat saying the lease is invalid) means the job was given to someone
 * else: the runner is killed and nothing more is sent for it.
 *
 * Losing the server does not stop a job: batches wait in memory, heartbeats back off
 * exponentially, and socket.io reconnects. SIGTERM drains: no new work, every job is asked to
 * checkpoint and stop (preempt), reported "preempted", then the daemon exits.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { io, type Socket } from 'socket.io-client';
import { z } from 'zod';
import { initBackend } from './engine/backend';
import { RunnerProcess, type RunnerExit } from './job-runner/runner-process';
import { type CheckpointUploadKind, type UploadedCheckpoint } from './job-runner/sink';
import { type StreamKind } from '../sdk/live';
import { type JobOutcome } from './job-runner/types';
import {
  type Assignment,
  type AssignmentAck,
  ASSIGNMENT_EVENT,
  assignmentSchema,
  ATTEMPT_FINISH_EVENT,
  ATTEMPT_START_EVENT,
  BLOB_ROUTE,
  callAckSchema,
  checkpointResponseSchema,
  heartbeatResponseSchema,
  registerResponseSchema,
  sampleRequestSchema,
  STREAM_EVENT,
  STREAM_SOCKET_MAX_BYTES,
  STREAM_WINDOW,
  streamAckSchema,
} from '../sdk/worker-protocol';

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
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

interface SavedState {
  server: string;
  workerId: string;
  credential: string;
}

type QueuedBatch = { seq: number; kind: StreamKind; items: unknown[] };

/** One attempt this daemon runs. */
export interface DaemonJob {
  assignment: Assignment;
  runner: RunnerProcess | null;
  /** The next seq to give a batch. */
  seq: number;
  queue: QueuedBatch[];
  /** Batches the server took (for tests and logs). */
  sent: number;
  /** The lease is gone: write nothing more. */
  lost: boolean;
  cancelRequested: boolean;
  preemptRequested: boolean;
  /** Resolves when the attempt is over (finish reported, or lost). */
  over: Promise<void>;
  pumping: boolean;
  emptied: (() => void)[];
  /** The ack of the push that brought the assignment: answered, it starts the attempt. */
  startAck: ((answer: AssignmentAck) => void) | null;
  /**
   * How the start went: not yet sent, sent as the push's ack (not confirmed: a heartbeat still
   * listing the assignment means it was not recorded), or confirmed by the start call's answer.
   */
  start: 'pending' | 'acked' | 'confirmed';
}

class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}: ${body.slice(0, 300)}`);
  }
}

/** Transient: the network, a timeout, or a server error. Retried with backoff. */
function transient(e: unknown): boolean {
  return !(e instanceof HttpStatusError) || e.status >= 500 || e.status === 429;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const backoff = (failures: number, base = 250, max = 15_000) => Math.min(max, base * 2 ** Math.min(failures, 16)) * (0.75 + Math.random() * 0.5);

export class WorkerDaemon {
  readonly name: string;
  readonly jobs = new Map<string, DaemonJob>();
  /** Attempts already run here: a late heartbeat answer may still list one. */
  private readonly done = new Set<string>();
  private credential: string | null = null;
  workerId: string | null = null;
  private socket: Socket | null = null;
  private draining = false;
  private stopped = false;
  private heartbeatMs: number;
  private wakeHeartbeat: (() => void) | null = null;
  private heartbeatLoop: Promise<void> | null = null;
  private readonly statePath: string;
  private readonly server: string;

  constructor(private readonly o: DaemonOptions) {
    this.server = o.server.replace(/\/+$/, '');
    this.name = o.name ?? os.hostname();
    const home = o.home ?? process.env.WHETSTONE_HOME ?? path.join(REPO_ROOT, '.whetstone');
    this.statePath = path.join(home, `worker-${this.name.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`);
    this.heartbeatMs = (o.heartbeatSeconds ?? 5) * 1000;
  }

  /** Registers (or reuses the saved credential), connects, and starts heartbeating. */
  async start(): Promise<void> {
    const saved = this.loadState();
    if (saved) {
      this.credential = saved.credential;
      this.workerId = saved.workerId;
      this.log('info', `using the saved credential of worker ${saved.workerId}`);
    } else {
      await this.register();
    }
    this.connect();
    this.heartbeatLoop = this.runHeartbeats();
  }

  /** SIGTERM: take no new work, preempt every job (each checkpoints), report them, stop. */
  async drain(): Promise<void> {
    if (this.draining && this.stopped) return;
    this.draining = true;
    this.log('info', `draining: ${this.jobs.size} job(s) asked to checkpoint and stop`);
    for (const job of this.jobs.values()) this.preemptJob(job);
    const all = Promise.all([...this.jobs.values()].map((j) => j.over));
    const timeout = sleep(this.o.drainTimeoutMs ?? 120_000).then(() => 'timeout' as const);
    if ((await Promise.race([all, timeout])) === 'timeout') {
      this.log('warn', 'drain timed out: killing the remaining runners');
      for (const job of this.jobs.values()) job.runner?.kill();
      await Promise.race([all, sleep(10_000)]);
    }
    await this.stop();
  }

  /** Stops without waiting for jobs (they are killed; their leases will expire). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const job of this.jobs.values()) job.runner?.kill();
    this.socket?.close();
    this.wakeHeartbeat?.();
    await this.heartbeatLoop;
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
    if (!this.o.token) throw new Error(`no saved credential in ${this.statePath}: pass --token wst_… to register`);
    const report = await initBackend(this.o.backend ?? process.env.WHETSTONE_BACKEND);
    const kinds = { cuda: 'CUDA', cpu: 'CPU', wasm: 'WASM' } as const;
    const body = {
      token: this.o.token,
      name: this.name,
      hostname: os.hostname(),
      backend: report.backend,
      version: packageVersion(),
      labels: this.o.labels ?? {},
      devices: report.devices.map((d, index) => ({ index, kind: kinds[d.kind], name: d.name.slice(0, 200), memoryBytes: Math.max(0, Math.floor(d.memoryBytes)) })),
    };
    const answer = registerResponseSchema.parse(await this.retry(() => this.json('POST', '/api/workers/register', body, false), () => this.stopped));
    this.credential = answer.credential;
    this.workerId = answer.workerId;
    mkdirSync(path.dirname(this.statePath), { recursive: true });
    writeFileSync(this.statePath, JSON.stringify({ server: this.server, workerId: answer.workerId, credential: answer.credential } satisfies SavedState, null, 2), { mode: 0o600 });
    this.log('info', `registered as worker ${answer.workerId} (${answer.pool} pool) with ${body.devices.length} ${report.backend} device(s)`);
  }

  // ───────────────────────────── socket.io and heartbeats ─────────────────────────────

  private connect(): void {
    this.socket?.close();
    const socket = io(`${this.server}/workers`, {
      auth: { credential: this.credential },
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
      if (parsed.success) void this.accept(parsed.data, typeof ack === 'function' ? (ack as (answer: AssignmentAck) => void) : null);
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
    socket.on('signal', (payload: { attemptId?: string; cancel?: boolean; preempt?: boolean; valid?: boolean }) => {
      const job = payload?.attemptId ? this.jobs.get(payload.attemptId) : undefined;
      if (job) this.applySignal(job, payload);
    });
    this.socket = socket;
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
          if (this.credential) this.connect();
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
    const answer = heartbeatResponseSchema.parse(await this.json('POST', '/api/workers/heartbeat', { attempts }));
    this.heartbeatMs = Math.max(200, answer.heartbeatSeconds * 1000);
    for (const lease of answer.leases) {
      const job = this.jobs.get(lease.attemptId);
      if (job) this.applySignal(job, lease);
    }
    if (answer.state === 'REVOKED') {
      this.log('error', 'this worker was revoked: stopping every job');
      for (const job of this.jobs.values()) this.loseJob(job, 'worker revoked');
      this.draining = true;
      return;
    }
    if (answer.state === 'DRAINING' && !this.draining) {
      this.log('info', 'the pool drains this worker: no new work');
      this.draining = true;
    }
    for (const a of answer.assignments) void this.accept(a);
  }

  private applySignal(job: DaemonJob, s: { valid?: boolean; cancel?: boolean; preempt?: boolean }): void {
    if (s.valid === false) this.loseJob(job, 'the server says the lease is no longer valid');
    else if (s.cancel && !job.cancelRequested) {
      job.cancelRequested = true;
      this.log('info', `attempt ${job.assignment.attemptId}: cancelled`);
      job.runner?.cancel();
    } else if (s.preempt) this.preemptJob(job);
  }

  private preemptJob(job: DaemonJob): void {
    if (job.preemptRequested || job.lost) return;
    job.preemptRequested = true;
    this.log('info', `attempt ${job.assignment.attemptId}: preempted, checkpointing`);
    job.runner?.preempt();
  }

  private loseJob(job: DaemonJob, why: string): void {
    if (job.lost) return;
    job.lost = true;
    job.queue.length = 0;
    this.log('warn', `attempt ${job.assignment.attemptId}: lease lost (${why}); stopping it`);
    job.runner?.kill();
    for (const w of job.emptied.splice(0)) w();
  }

  // ───────────────────────────── running an attempt ─────────────────────────────

  private accept(a: Assignment, startAck: ((answer: AssignmentAck) => void) | null = null): Promise<void> {
    const known = this.jobs.get(a.attemptId);
    if (known) {
      // Listed again while its start was only acked: the server did not record it (the connection
      // dropped with the ack). Start it by the call, whose answer confirms it.
      if (known.start === 'acked' && !startAck) {
        void this.startByCall(known).catch((e: Error) => {
          if (e instanceof HttpStatusError && e.status === 409) this.loseJob(known, 'start refused');
          else this.log('warn', `attempt ${a.attemptId}: start not recorded: ${e.message}`);
        });
      }
      return known.over;
    }
    if (this.done.has(a.attemptId)) return Promise.resolve();
    if (this.draining || this.stopped) {
      this.log('info', `attempt ${a.attemptId}: not taken (draining)`);
      return Promise.resolve();
    }
    let finish!: () => void;
    const job: DaemonJob = {
      assignment: a,
      runner: null,
      seq: 0,
      queue: [],
      sent: 0,
      lost: false,
      cancelRequested: false,
      preemptRequested: false,
      over: new Promise<void>((resolve) => (finish = resolve)),
      pumping: false,
      emptied: [],
      startAck,
      start: 'pending',
    };
    this.jobs.set(a.attemptId, job);
    void this.run(job).finally(() => {
      this.jobs.delete(a.attemptId);
      this.done.add(a.attemptId);
      if (this.done.size > 10_000) this.done.delete(this.done.values().next().value!);
      finish();
    });
    return job.over;
  }

  private async run(job: DaemonJob): Promise<void> {
    const a = job.assignment;
    this.log('info', `attempt ${a.attemptId}: ${a.kind} job ${a.jobId} (attempt ${a.attempt}) on device(s) ${a.deviceIndexes.join(',') || '-'}`);
    const runner = new RunnerProcess(
      {
        onBatch: (kind, items) => this.enqueue(job, kind, items),
        uploadCheckpoint: (kind, step, bytes) => this.uploadCheckpoint(job, kind, step, bytes),
        fetchBlob: (key) => this.fetchBlob(job, key),
        onSample: (event) => {
          if (job.lost) return;
          if (event.type === 'token') this.socket?.emit('sample:token', event.token);
          else this.socket?.emit('sample:done', event.done);
        },
      },
      {
        env: {
          WHETSTONE_BACKEND: this.o.backend ?? process.env.WHETSTONE_BACKEND,
          ...(a.deviceIndexes.length > 0 ? { CUDA_VISIBLE_DEVICES: a.deviceIndexes.join(',') } : {}),
          ...this.o.runnerEnv,
        },
      },
    );
    job.runner = runner;
    let exit: RunnerExit;
    try {
      await runner.ready;
      if (job.startAck && this.socket?.connected) {
        job.start = 'acked';
        job.startAck({ started: true });
      } else await this.startByCall(job);
      if (job.lost) throw new Error('lost');
      runner.start(a);
      if (job.cancelRequested) runner.cancel();
      else if (job.preemptRequested) runner.preempt();
      exit = await runner.exited;
    } catch (e) {
      if (e instanceof HttpStatusError && e.status === 409) this.loseJob(job, 'start refused');
      runner.kill();
      exit = await runner.exited;
      if (job.lost || this.stopped) return;
      exit = { result: { outcome: 'failed', reason: `could not start: ${(e as Error).message}` }, code: exit.code, signal: exit.signal };
    }
    if (job.lost) return;
    const outcome: JobOutcome = exit.result?.outcome ?? (job.cancelRequested ? 'cancelled' : job.preemptRequested ? 'preempted' : 'failed');
    const reason =
      exit.result?.reason ??
      (job.cancelRequested ? 'cancelled' : `the job runner exited without a result (code ${exit.code ?? '-'}, signal ${exit.signal ?? '-'})`);
    // Everything the runner streamed goes out before the finish.
    await this.flushed(job);
    if (job.lost) return;
    try {
      await this.retry(
        () =>
          this.call(ATTEMPT_FINISH_EVENT, '/api/workers/attempts/finish', {
            attemptId: a.attemptId,
            fencingToken: a.fencingToken,
            outcome,
            reason: reason.slice(0, 4000),
            exitCode: exit.code,
          }),
        () => job.lost || this.stopped,
      );
      this.log('info', `attempt ${a.attemptId}: ${outcome}${reason ? ` (${reason})` : ''}`);
    } catch (e) {
      this.log('warn', `attempt ${a.attemptId}: finish not accepted: ${(e as Error).message}`);
    }
  }

  /** The start call (socket with an ack, else HTTP), retried until answered; 409 ends the job. */
  private async startByCall(job: DaemonJob): Promise<void> {
    const a = job.assignment;
    await this.retry(() => this.call(ATTEMPT_START_EVENT, '/api/workers/attempts/start', { attemptId: a.attemptId, fencingToken: a.fencingToken }), () => job.lost || this.stopped);
    job.start = 'confirmed';
  }

  private enqueue(job: DaemonJob, kind: StreamKind, items: unknown[]): void {
    if (job.lost) return;
    job.queue.push({ seq: job.seq++, kind, items });
    void this.pump(job);
  }

  /**
   * Sends queued batches in order; retries each until taken, or until the lease is lost. Over the
   * socket up to STREAM_WINDOW are under way at once: the server publishes each to the run's
   * watchers as soon as it is fenced and answers once it is stored, so a slow write does not
   * hold up the next batch's publication. They are answered in order; after a failure, the ones
   * taken leave the queue and the rest go again from the failed one.
   */
  private async pump(job: DaemonJob): Promise<void> {
    if (job.pumping) return;
    job.pumping = true;
    const sending = new Map<QueuedBatch, Promise<void>>();
    const taken = new Set<QueuedBatch>();
    try {
      let failures = 0;
      while (job.queue.length > 0 && !job.lost && !this.stopped) {
        const window = this.socket?.connected ? STREAM_WINDOW : 1;
        for (const b of job.queue.slice(0, window)) {
          if (sending.has(b)) continue;
          const sent = this.sendBatch({ attemptId: job.assignment.attemptId, fencingToken: job.assignment.fencingToken, seq: b.seq, kind: b.kind, items: b.items });
          sent.then(() => taken.add(b), () => undefined);
          sending.set(b, sent);
        }
        const batch = job.queue[0];
        try {
          await sending.get(batch);
          sending.delete(batch);
          job.queue.shift();
          job.sent++;
          failures = 0;
        } catch (e) {
          await Promise.allSettled(sending.values());
          sending.clear();
          const before = job.queue.length;
          job.queue = job.queue.filter((b) => b === batch || !taken.has(b));
          job.sent += before - job.queue.length;
          if (e instanceof HttpStatusError && e.status === 409) {
            this.loseJob(job, 'the server refused a stream batch (409)');
          } else if (!transient(e)) {
            this.log('error', `attempt ${job.assignment.attemptId}: batch ${batch.seq} (${batch.kind}) refused, dropped: ${(e as Error).message}`);
            job.queue.shift();
          } else {
            await sleep(backoff(++failures));
          }
        } finally {
          taken.delete(batch);
        }
      }
    } finally {
      job.pumping = false;
      if (job.queue.length === 0 || job.lost) for (const w of job.emptied.splice(0)) w();
    }
  }

  /** One batch, over the socket when it is connected (acked once stored), else over HTTP. */
  private async sendBatch(body: { attemptId: string; fencingToken: string; seq: number; kind: StreamKind; items: unknown[] }): Promise<void> {
    const socket = this.socket;
    const text = JSON.stringify(body);
    if (!socket?.connected || text.length > STREAM_SOCKET_MAX_BYTES) {
      await this.request('POST', '/api/workers/stream', { body: new TextEncoder().encode(text), contentType: 'application/json' });
      return;
    }
    // A disconnect fails the ack at once (socket.io-client), and the retry goes over HTTP.
    const answer = streamAckSchema.safeParse(await socket.timeout(30_000).emitWithAck(STREAM_EVENT, body));
    if (!answer.success) throw new Error('the server answered a stream batch with something else than an ack');
    if (answer.data.status >= 300) throw new HttpStatusError(answer.data.status, answer.data.error ?? '');
  }

  private flushed(job: DaemonJob): Promise<void> {
    if (job.queue.length === 0 || job.lost) return Promise.resolve();
    return new Promise((resolve) => {
      job.emptied.push(resolve);
      void this.pump(job);
    });
  }

  private async uploadCheckpoint(job: DaemonJob, kind: CheckpointUploadKind, step: number, bytes: Uint8Array): Promise<UploadedCheckpoint> {
    const a = job.assignment;
    const query = new URLSearchParams({ attemptId: a.attemptId, fencingToken: a.fencingToken, kind, step: String(step) });
    try {
      const answer = await this.retry(
        () => this.request('PUT', `/api/workers/checkpoints?${query}`, { body: bytes, contentType: 'application/octet-stream', timeoutMs: 300_000 }),
        () => job.lost || this.stopped,
      );
      const parsed = checkpointResponseSchema.parse(JSON.parse(new TextDecoder().decode(answer)));
      this.log('info', `attempt ${a.attemptId}: ${kind} checkpoint at step ${step} uploaded (${bytes.byteLength} bytes)`);
      return parsed;
    } catch (e) {
      if (e instanceof HttpStatusError && e.status === 409) this.loseJob(job, 'the server refused a checkpoint (409)');
      throw e;
    }
  }

  private async fetchBlob(job: DaemonJob, key: string): Promise<Uint8Array> {
    const route = BLOB_ROUTE + key.split('/').map(encodeURIComponent).join('/');
    return this.retry(() => this.request('GET', route, { timeoutMs: 300_000 }), () => job.lost || this.stopped);
  }

  // ───────────────────────────── HTTP ─────────────────────────────

  /** Retries transient failures with exponential backoff until `give up` says so. */
  private async retry<T>(fn: () => Promise<T>, giveUp: () => boolean): Promise<T> {
    for (let failures = 0; ; failures++) {
      try {
        return await fn();
      } catch (e) {
        if (!transient(e) || giveUp()) throw e;
        await sleep(backoff(failures));
      }
    }
  }

  /** Start or finish: over the socket when it is connected (the ack carries the HTTP answer), else over HTTP. */
  private async call(event: string, route: string, body: unknown): Promise<void> {
    const socket = this.socket;
    if (!socket?.connected) {
      await this.json('POST', route, body);
      return;
    }
    // A disconnect fails the ack at once (socket.io-client), and the retry goes over HTTP.
    const answer = callAckSchema.safeParse(await socket.timeout(30_000).emitWithAck(event, body));
    if (!answer.success) throw new Error(`the server answered ${event} with something else than an ack`);
    if (answer.data.status >= 300) throw new HttpStatusError(answer.data.status, answer.data.error ?? '');
  }

  private async json(method: string, route: string, body: unknown, auth = true): Promise<unknown> {
    const bytes = await this.request(method, route, { body: new TextEncoder().encode(JSON.stringify(body)), contentType: 'application/json', auth });
    return bytes.byteLength === 0 ? null : (JSON.parse(new TextDecoder().decode(bytes)) as unknown);
  }

  private async request(
    method: string,
    route: string,
    options: { body?: Uint8Array; contentType?: string; auth?: boolean; timeoutMs?: number } = {},
  ): Promise<Uint8Array> {
    const headers: Record<string, string> = {};
    if (options.contentType) headers['content-type'] = options.contentType;
    if (options.auth !== false && this.credential) headers.authorization = `Bearer ${this.credential}`;
    const res = await fetch(this.server + route, {
      method,
      headers,
      body: options.body ? new Uint8Array(options.body) : undefined,
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    });
    const data = new Uint8Array(await res.arrayBuffer());
    if (!res.ok) throw new HttpStatusError(res.status, new TextDecoder().decode(data));
    return data;
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
  token: z.string().startsWith('wst_').optional(),
  name: z.string().min(1).max(100).optional(),
  labels: z.record(z.string(), z.string()),
});

export function parseArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): z.infer<typeof argsSchema> {
  const out: { server?: string; token?: string; name?: string; labels: Record<string, string> } = {
    server: env.WHETSTONE_URL ?? 'http://127.0.0.1:3000',
    token: env.WHETSTONE_WORKER_TOKEN,
    labels: {},
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const value = () => inline ?? argv[++i];
    if (flag === '--server') out.server = value();
    else if (flag === '--token') out.token = value();
    else if (flag === '--name') out.name = value();
    else if (flag === '--label') {
      const [k, v] = (value() ?? '').split('=');
      if (!k || v === undefined) throw new Error('--label takes key=value');
      out.labels[k] = v;
    } else throw new Error(`unknown argument "${argv[i]}" (usage: daemon.ts --server URL --token wst_… [--name N] [--label k=v])`);
  }
  const parsed = argsSchema.safeParse(out);
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; '));
  return parsed.data;
}

async function main(): Promise<void> {
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error((e as Error).message);
    process.exit(2);
  }
  const daemon = new WorkerDaemon({ server: args.server, token: args.token, name: args.name, labels: args.labels });
  let draining: Promise<void> | null = null;
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
