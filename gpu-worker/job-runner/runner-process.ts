/**
 * The daemon's handle on one job runner child process. The child is forked with tsx's loader when
 * this file runs as TypeScript. The daemon supplies the transport (handlers); the child's stream
 * batches arrive in the order they were sent. A runner may be forked before its job is known (the
 * daemon's spare) and given its handlers when an attempt takes it: until `start` the child sends
 * nothing but its `ready`.
 */
import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Assignment, type SampleRequest } from '../../sdk/worker-protocol';
import { type InferenceEvent } from './inference-channel';
import { type FromRunner, type ToRunner } from './ipc';
import { type StreamKind } from '../../sdk/live';
import { type CheckpointUploadKind, type UploadedCheckpoint } from './sink';
import { type JobResult } from './types';

export interface RunnerHandlers {
  onBatch(kind: StreamKind, items: unknown[]): void;
  uploadCheckpoint(kind: CheckpointUploadKind, step: number, bytes: Uint8Array, agent?: string): Promise<UploadedCheckpoint>;
  fetchBlob(key: string): Promise<Uint8Array>;
  fetchBlobToFile(key: string, file: string): Promise<{ bytes: number }>;
  /** The team secrets the job's environment sends as headers (asked only by one that names some). */
  environmentSecrets(): Promise<Record<string, string>>;
  /** INFERENCE: a token or the end of a sampling request. */
  onSample?(event: InferenceEvent): void;
}

export interface RunnerExit {
  /** What the runner reported; null when it exited (or was killed) without reporting. */
  result: JobResult | null;
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class RunnerProcess {
  private readonly child: ChildProcess;
  /** Resolves when the child is up and listening. */
  readonly ready: Promise<void>;
  /** Resolves when the child has exited. */
  readonly exited: Promise<RunnerExit>;
  private result: JobResult | null = null;
  private gone = false;

  constructor(
    private handlers: RunnerHandlers | null,
    options: { env?: Record<string, string | undefined> } = {},
  ) {
    const here = path.dirname(fileURLToPath(import.meta.url));
    const ts = import.meta.url.endsWith('.ts');
    this.child = fork(path.join(here, ts ? 'child.ts' : 'child.js'), [], {
      execArgv: ts ? ['--import', 'tsx'] : [],
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
    });
    this.ready = new Promise((resolve, reject) => {
      this.child.on('message', (msg: FromRunner) => {
        if (msg.type === 'ready') resolve();
        else this.handle(msg);
      });
      this.child.once('exit', () => reject(new Error('the runner exited before it was ready')));
    });
    this.ready.catch(() => undefined);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.gone = true;
        resolve({ result: this.result, code, signal });
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether the child still runs. */
  get alive(): boolean {
    return !this.gone;
  }

  /** Gives a runner forked ahead of its job the handlers of the attempt that takes it. */
  attach(handlers: RunnerHandlers): void {
    this.handlers = handlers;
  }

  start(assignment: Assignment): void {
    this.send({ type: 'start', assignment });
  }

  /** Checkpoint at the next step boundary, then exit with outcome "preempted". */
  preempt(): void {
    this.send({ type: 'preempt' });
  }

  /** Stop at the next step boundary; killed if still running after `graceMs`. */
  cancel(graceMs = 2000): void {
    this.send({ type: 'cancel' });
    const timer = setTimeout(() => this.kill(), graceMs);
    timer.unref();
    void this.exited.then(() => clearTimeout(timer));
  }

  /** INFERENCE: a sampling request for the session. */
  sample(request: SampleRequest): void {
    this.send({ type: 'sample', request });
  }

  kill(): void {
    if (!this.gone) this.child.kill('SIGKILL');
  }

  private send(msg: ToRunner) {
    if (this.gone || !this.child.connected) return;
    this.child.send(msg, (err) => {
      if (err && !this.gone) this.kill();
    });
  }

  private handle(msg: FromRunner) {
    if (msg.type === 'done') this.result = msg.result;
    else if (!this.handlers) return;
    else if (msg.type === 'batch') this.handlers.onBatch(msg.kind, msg.items);
    else if (msg.type === 'sample') this.handlers.onSample?.(msg.event);
    else if (msg.type === 'request') {
      const handlers = this.handlers;
      const work: Promise<unknown> =
        msg.method === 'uploadCheckpoint'
          ? handlers.uploadCheckpoint(msg.params.kind, msg.params.step, msg.params.bytes, msg.params.agent)
          : msg.method === 'fetchBlob'
            ? handlers.fetchBlob(msg.params.key)
            : msg.method === 'fetchBlobToFile'
              ? handlers.fetchBlobToFile(msg.params.key, msg.params.file)
              : handlers.environmentSecrets();
      work.then(
        (result) => this.send({ type: 'reply', id: msg.id, ok: true, result }),
        (e: unknown) => this.send({ type: 'reply', id: msg.id, ok: false, error: (e as Error).message }),
      );
    }
  }
}
