// The lifecycle of the attempts a daemon runs: accept an assignment (pushed or listed by a
// heartbeat), start a job runner child process for it (job-runner/), report the start, stream
// what the runner emits through its outbox, upload its checkpoints, and report the finish once
// the outbox is empty. Signals (cancel, preempt, lease lost) come from pushes and heartbeats.
// Every write carries the attempt's fencing token; a 409 (or a heartbeat saying the lease is
// invalid) means the job was given to someone else: the runner is killed and nothing more is
// sent for it.
import {
  type Assignment,
  type AssignmentAck,
  ATTEMPT_FINISH_EVENT,
  ATTEMPT_START_EVENT,
  BLOB_ROUTE,
  checkpointResponseSchema,
  ENVIRONMENT_SECRETS_ROUTE,
  environmentSecretsResponseSchema,
} from '../../sdk/worker-protocol';
import { RunnerProcess, type RunnerExit, type RunnerHandlers } from '../job-runner/runner-process';
import type { CheckpointUploadKind, UploadedCheckpoint } from '../job-runner/sink';
import type { JobOutcome } from '../job-runner/types';
import { Outbox } from './outbox';
import { fenced, retry, type WorkerTransport } from './transport';

/** One attempt this daemon runs. */
export interface DaemonJob {
  assignment: Assignment;
  runner: RunnerProcess | null;
  /** What the runner streamed, on its way to the server. */
  outbox: Outbox;
  /** The lease is gone: write nothing more. */
  lost: boolean;
  cancelRequested: boolean;
  preemptRequested: boolean;
  /** Resolves when the attempt is over (finish reported, or lost). */
  over: Promise<void>;
  /** The ack of the push that brought the assignment: answered, it starts the attempt. */
  startAck: ((answer: AssignmentAck) => void) | null;
  /**
   * How the start went: not yet sent, sent as the push's ack (not confirmed: a heartbeat still
   * listing the assignment means it was not recorded), or confirmed by the start call's answer.
   */
  start: 'pending' | 'acked' | 'confirmed';
}

type Log = (level: 'info' | 'warn' | 'error', message: string) => void;

export interface AttemptsOptions {
  transport: WorkerTransport;
  /** Backend for the runners; default WHETSTONE_BACKEND or auto. */
  backend?: string;
  /** Extra environment for runner processes. */
  runnerEnv?: Record<string, string | undefined>;
  /**
   * Keep one runner forked ahead of need (default true): a child's start (Node, tsx and the
   * engine's modules) takes about a second, which an inference session's first token or a short
   * job would otherwise wait for. The spare is forked when an attempt ends, for that attempt's
   * devices, and taken by the next attempt on the same devices. It loads no backend until it
   * starts a job, so it holds no device memory.
   */
  spareRunner?: boolean;
  /** Whether new work is taken (not while draining or stopped). */
  accepting(): boolean;
  stopped(): boolean;
  log: Log;
  /** An attempt ended because its device was lost (outcome 'lost'): the machine's devices may have changed. */
  onDeviceLost?(): void;
}

/** A signal about an attempt, from a push or a heartbeat's lease. */
export interface AttemptSignal {
  valid?: boolean;
  cancel?: boolean;
  preempt?: boolean;
}

export class Attempts {
  readonly jobs = new Map<string, DaemonJob>();
  /** Attempts already run here: a late heartbeat answer may still list one. */
  private readonly done = new Set<string>();
  /** A runner forked ahead of need, with the environment (devices) it was forked for. */
  private spare: { key: string; runner: RunnerProcess } | null = null;

  constructor(private readonly o: AttemptsOptions) {}

  /** Takes an assignment (once: one listed again is the one already running). */
  accept(a: Assignment, startAck: ((answer: AssignmentAck) => void) | null = null): Promise<void> {
    const known = this.jobs.get(a.attemptId);
    if (known) {
      // Listed again while its start was only acked: the server did not record it (the connection
      // dropped with the ack). Start it by the call, whose answer confirms it.
      if (known.start === 'acked' && !startAck) {
        void this.startByCall(known).catch((e: Error) => {
          if (fenced(e)) this.lose(known, 'start refused');
          else this.o.log('warn', `attempt ${a.attemptId}: start not recorded: ${e.message}`);
        });
      }
      return known.over;
    }
    if (this.done.has(a.attemptId)) return Promise.resolve();
    if (!this.o.accepting()) {
      this.o.log('info', `attempt ${a.attemptId}: not taken (draining)`);
      return Promise.resolve();
    }
    let finish!: () => void;
    const job: DaemonJob = {
      assignment: a,
      runner: null,
      outbox: new Outbox({
        attemptId: a.attemptId,
        fencingToken: a.fencingToken,
        transport: this.o.transport,
        lost: () => job.lost,
        stopped: this.o.stopped,
        lose: (why) => this.lose(job, why),
        log: this.o.log,
      }),
      lost: false,
      cancelRequested: false,
      preemptRequested: false,
      over: new Promise<void>((resolve) => (finish = resolve)),
      startAck,
      start: 'pending',
    };
    this.jobs.set(a.attemptId, job);
    void this.run(job).finally(() => {
      this.jobs.delete(a.attemptId);
      this.done.add(a.attemptId);
      if (this.done.size > 10_000) this.done.delete(this.done.values().next().value!);
      finish();
      this.prepareSpare(a.deviceIndexes);
    });
    return job.over;
  }

  applySignal(job: DaemonJob, s: AttemptSignal): void {
    if (s.valid === false) this.lose(job, 'the server says the lease is no longer valid');
    else if (s.cancel && !job.cancelRequested) {
      job.cancelRequested = true;
      this.o.log('info', `attempt ${job.assignment.attemptId}: cancelled`);
      job.runner?.cancel();
    } else if (s.preempt) this.preempt(job);
  }

  /** The spare runner's process id, once one is forked. */
  get sparePid(): number | undefined {
    return this.spare?.runner.alive ? this.spare.runner.pid : undefined;
  }

  /** Forks a spare runner for attempts on these devices, unless one is there or no work is taken. */
  prepareSpare(deviceIndexes: number[]): void {
    if (this.o.spareRunner === false || this.spare || !this.o.accepting()) return;
    const env = this.runnerEnv(deviceIndexes);
    const runner = new RunnerProcess(null, { env });
    this.spare = { key: JSON.stringify(env), runner };
    // One that dies unused (killed from outside) is forgotten: the next attempt forks its own.
    void runner.exited.then(() => {
      if (this.spare?.runner === runner) this.spare = null;
    });
  }

  /** Kills the spare runner (the daemon stops). */
  dropSpare(): void {
    this.spare?.runner.kill();
    this.spare = null;
  }

  /** The environment of a runner on these devices. */
  private runnerEnv(deviceIndexes: number[]): Record<string, string | undefined> {
    return {
      WHETSTONE_BACKEND: this.o.backend ?? process.env.WHETSTONE_BACKEND,
      ...(deviceIndexes.length > 0 ? { CUDA_VISIBLE_DEVICES: deviceIndexes.join(',') } : {}),
      ...this.o.runnerEnv,
    };
  }

  /** A runner for an attempt: the spare when it was forked for the same devices, else a new one. */
  private runnerFor(deviceIndexes: number[], handlers: RunnerHandlers): RunnerProcess {
    const env = this.runnerEnv(deviceIndexes);
    const spare = this.spare;
    this.spare = null;
    if (spare && spare.key === JSON.stringify(env) && spare.runner.alive) {
      spare.runner.attach(handlers);
      return spare.runner;
    }
    spare?.runner.kill();
    return new RunnerProcess(handlers, { env });
  }

  /** Asks the runner to checkpoint and stop. */
  preempt(job: DaemonJob): void {
    if (job.preemptRequested || job.lost) return;
    job.preemptRequested = true;
    this.o.log('info', `attempt ${job.assignment.attemptId}: preempted, checkpointing`);
    job.runner?.preempt();
  }

  /** The lease is gone: kill the runner and send nothing more. */
  lose(job: DaemonJob, why: string): void {
    if (job.lost) return;
    job.lost = true;
    this.o.log('warn', `attempt ${job.assignment.attemptId}: lease lost (${why}); stopping it`);
    job.runner?.kill();
    job.outbox.drop();
  }

  private async run(job: DaemonJob): Promise<void> {
    const a = job.assignment;
    this.o.log('info', `attempt ${a.attemptId}: ${a.kind} job ${a.jobId} (attempt ${a.attempt}) on device(s) ${a.deviceIndexes.join(',') || '-'}`);
    const runner = this.runnerFor(a.deviceIndexes, {
      onBatch: (kind, items) => job.outbox.add(kind, items),
      uploadCheckpoint: (kind, step, bytes, agent) => this.uploadCheckpoint(job, kind, step, bytes, agent),
      fetchBlob: (key) => this.fetchBlob(job, key),
      fetchBlobToFile: (key, file) => this.fetchBlobToFile(job, key, file),
      environmentSecrets: () => this.environmentSecrets(job),
      onSample: (event) => {
        if (job.lost) return;
        if (event.type === 'token') this.o.transport.socket?.emit('sample:token', event.token);
        else this.o.transport.socket?.emit('sample:done', event.done);
      },
    });
    job.runner = runner;
    let exit: RunnerExit;
    try {
      await runner.ready;
      if (job.startAck && this.o.transport.connected) {
        job.start = 'acked';
        job.startAck({ started: true });
      } else await this.startByCall(job);
      if (job.lost) throw new Error('lost');
      runner.start(a);
      if (job.cancelRequested) runner.cancel();
      else if (job.preemptRequested) runner.preempt();
      exit = await runner.exited;
    } catch (e) {
      if (fenced(e)) this.lose(job, 'start refused');
      runner.kill();
      exit = await runner.exited;
      if (job.lost || this.o.stopped()) return;
      exit = { result: { outcome: 'failed', reason: `could not start: ${(e as Error).message}` }, code: exit.code, signal: exit.signal };
    }
    if (job.lost) return;
    const outcome: JobOutcome = exit.result?.outcome ?? (job.cancelRequested ? 'cancelled' : job.preemptRequested ? 'preempted' : 'failed');
    const reason =
      exit.result?.reason ??
      (job.cancelRequested ? 'cancelled' : `the job runner exited without a result (code ${exit.code ?? '-'}, signal ${exit.signal ?? '-'})`);
    // Everything the runner streamed goes out before the finish.
    await job.outbox.flushed();
    if (job.lost) return;
    try {
      await retry(
        () =>
          this.o.transport.call(ATTEMPT_FINISH_EVENT, '/api/workers/attempts/finish', {
            attemptId: a.attemptId,
            fencingToken: a.fencingToken,
            outcome,
            reason: reason.slice(0, 4000),
            exitCode: exit.code,
          }),
        () => job.lost || this.o.stopped(),
      );
      this.o.log('info', `attempt ${a.attemptId}: ${outcome}${reason ? ` (${reason})` : ''}`);
    } catch (e) {
      this.o.log('warn', `attempt ${a.attemptId}: finish not accepted: ${(e as Error).message}`);
    }
    if (outcome === 'lost') this.o.onDeviceLost?.();
  }

  /** The start call (socket with an ack, else HTTP), retried until answered; 409 ends the job. */
  private async startByCall(job: DaemonJob): Promise<void> {
    const a = job.assignment;
    await retry(
      () => this.o.transport.call(ATTEMPT_START_EVENT, '/api/workers/attempts/start', { attemptId: a.attemptId, fencingToken: a.fencingToken }),
      () => job.lost || this.o.stopped(),
    );
    job.start = 'confirmed';
  }

  private async uploadCheckpoint(job: DaemonJob, kind: CheckpointUploadKind, step: number, bytes: Uint8Array, agent?: string): Promise<UploadedCheckpoint> {
    const a = job.assignment;
    const query = new URLSearchParams({ attemptId: a.attemptId, fencingToken: a.fencingToken, kind, step: String(step), ...(agent === undefined ? {} : { agent }) });
    try {
      const answer = await retry(
        () => this.o.transport.request('PUT', `/api/workers/checkpoints?${query}`, { body: bytes, contentType: 'application/octet-stream', timeoutMs: 300_000 }),
        () => job.lost || this.o.stopped(),
      );
      const parsed = checkpointResponseSchema.parse(JSON.parse(new TextDecoder().decode(answer)));
      this.o.log('info', `attempt ${a.attemptId}: ${kind} checkpoint${agent === undefined ? '' : ` of ${agent}`} after step ${step} uploaded (${bytes.byteLength} bytes)`);
      return parsed;
    } catch (e) {
      if (fenced(e)) this.lose(job, 'the server refused a checkpoint (409)');
      throw e;
    }
  }

  /** Asked once when the job opens its environment; the answer goes to the runner and nowhere else (no log). */
  private async environmentSecrets(job: DaemonJob): Promise<Record<string, string>> {
    const a = job.assignment;
    const answer = await retry(
      () => this.o.transport.json('POST', ENVIRONMENT_SECRETS_ROUTE, { attemptId: a.attemptId, fencingToken: a.fencingToken }),
      () => job.lost || this.o.stopped(),
    );
    return environmentSecretsResponseSchema.parse(answer).secrets;
  }

  private async fetchBlob(job: DaemonJob, key: string): Promise<Uint8Array> {
    return retry(() => this.o.transport.request('GET', blobRoute(key), { timeoutMs: 300_000 }), () => job.lost || this.o.stopped());
  }

  /** A model's file, streamed to disk (a retry starts the file again). */
  private async fetchBlobToFile(job: DaemonJob, key: string, file: string): Promise<{ bytes: number }> {
    // A runner that is gone (cancelled, crashed) no longer waits for the file.
    return retry(() => this.o.transport.download(blobRoute(key), file), () => job.lost || this.o.stopped() || !job.runner?.alive);
  }
}

function blobRoute(key: string): string {
  return BLOB_ROUTE + key.split('/').map(encodeURIComponent).join('/');
}
