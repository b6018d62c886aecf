/**
 * Runs type checks (type-check.ts) on a worker thread of the dry-run process: they overlap the
 * dry run instead of following it, the thread loads TypeScript while the process is idle, and a
 * check past its time or memory is ended by ending the thread, which the next check replaces.
 */
import { Worker } from 'node:worker_threads';
import type { EnvironmentSource } from '../../../sdk/environment-source';
import type { TypeCheckResult } from './type-check';

const WORKER_URL = new URL('./type-check-worker.ts', import.meta.url).href;
/** Heap of the thread: TypeScript on a few files needs far less; a runaway type ends here. */
const MAX_HEAP_MB = 384;

export type TypeCheckOutcome = { ok: true; result: TypeCheckResult } | { ok: false; why: string };

export class TypeCheckThread {
  private worker: Worker | null = null;
  /** The thread has loaded TypeScript: a check that runs past its time now is the check's own fault. */
  private warm = false;
  private nextId = 1;
  private readonly pending = new Map<number, (outcome: TypeCheckOutcome) => void>();

  /** Starts the thread now, so that it is warm for the first check. */
  start(): void {
    this.thread();
  }

  check(source: EnvironmentSource, timeoutMs: number): Promise<TypeCheckOutcome> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ ok: false, why: `the type check took longer than ${Math.round(timeoutMs / 1000)} s` });
        // A thread still loading TypeScript (seconds on a busy machine) is kept: ending it would only start that again.
        if (this.warm) this.stop(worker, 'a type check ran past its time');
      }, timeoutMs);
      this.pending.set(id, (outcome) => {
        clearTimeout(timer);
        resolve(outcome);
      });
      worker.postMessage({ id, source });
    });
  }

  close(): Promise<number> | undefined {
    const worker = this.worker;
    this.worker = null;
    return worker?.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    // tsx's loader is registered inside the thread: Node 20 threads do not inherit the process's --import hooks.
    const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL)}); })`;
    const worker = new Worker(boot, { eval: true, resourceLimits: { maxOldGenerationSizeMb: MAX_HEAP_MB } });
    worker.unref();
    this.warm = false;
    worker.on('message', (message: { warm: true } | { id: number; result: TypeCheckResult | null; error?: string }) => {
      if ('warm' in message) {
        if (this.worker === worker) this.warm = true;
        return;
      }
      const done = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.result) done?.({ ok: true, result: message.result });
      else done?.({ ok: false, why: message.error ? `the type check failed: ${message.error}` : 'TypeScript is not installed on this server' });
    });
    worker.on('error', (error) => this.stop(worker, `the type check failed: ${error.message}`));
    worker.on('exit', () => this.stop(worker, 'the type checker stopped'));
    this.worker = worker;
    return worker;
  }

  /** Ends a thread and answers every check it owed; the next check starts a new one. */
  private stop(worker: Worker, why: string): void {
    if (this.worker !== worker) return;
    this.worker = null;
    void worker.terminate();
    for (const [id, done] of this.pending) {
      this.pending.delete(id);
      done({ ok: false, why });
    }
  }
}
