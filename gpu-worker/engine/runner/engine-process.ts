/**
 * The daemon's handle on an engine child process. The child is forked with tsx's loader when this
 * file runs as TypeScript (tsx does not follow into worker threads on Node 20, but a child process
 * can load it with --import).
 */
import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ErrorInfo, type Method, type Requests, type ResponseMessage } from './protocol';

/** An error raised in the child, with its fields (field, step, lastGoodCheckpoint) kept. */
export class EngineProcessError extends Error {
  constructor(readonly info: ErrorInfo) {
    super(info.message);
    this.name = info.name;
  }
}

export interface EngineProcessOptions {
  /** Extra environment for the child (e.g. WHETSTONE_BACKEND). */
  env?: Record<string, string | undefined>;
}

export class EngineProcess {
  private readonly child: ChildProcess;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private exited: Error | null = null;

  constructor(opts: EngineProcessOptions = {}) {
    const here = path.dirname(fileURLToPath(import.meta.url));
    const ts = import.meta.url.endsWith('.ts');
    const entry = path.join(here, ts ? 'child.ts' : 'child.js');
    this.child = fork(entry, [], {
      execArgv: ts ? ['--import', 'tsx'] : [],
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
    });
    this.child.on('message', (msg: ResponseMessage) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.ok) p.resolve(msg.result);
      else p.reject(new EngineProcessError(msg.error));
    });
    this.child.on('exit', (code, signal) => {
      this.exited = new Error(`engine process exited (code ${code}, signal ${signal})`);
      for (const p of this.pending.values()) p.reject(this.exited);
      this.pending.clear();
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  request<M extends Method>(method: M, params: Requests[M]['params']): Promise<Requests[M]['result']> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, method, params });
    });
  }

  /** Ask the child to free its tensors and exit; kill it if it has not exited after `graceMs`. */
  async close(graceMs = 5000): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    await this.request('shutdown', {}).catch(() => undefined);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}
