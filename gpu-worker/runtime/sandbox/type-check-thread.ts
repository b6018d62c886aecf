/**
 * Runs type checks (type-check.ts) on a worker thread of the dry-run process: the thread can load
 * TypeScript while the process is idle (`start`), and a check past its time or memory is ended by
 * ending the thread, which the next check replaces, while the process and its sandboxes go on.
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
  private nextId = 1;
  private readonly pending = new Map<number, { timeoutMs: number; timer: NodeJS.Timeout | null; done: (outcome: TypeCheckOutcome) => void }>();

  /** Starts the thread now, so that it is warm for the first check. */
  start(): void {
    this.thread();
  }

  /** A check, stopped `timeoutMs` after the thread starts it (loading TypeScript first does not count). */
  check(source: EnvironmentSource, timeoutMs: number): Promise<TypeCheckOutcome> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, {
        timeoutMs,
        timer: null,
        done: (outcome) => {
          const entry = this.pending.get(id);
          if (entry?.timer) clearTimeout(entry.timer);
          this.pending.delete(id);
          resolve(outcome);
        },
      });
      worker.postMessage({ id, source });
    });
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    // tsx's loader is registered inside the thread: Node 20 threads do not inherit the process's --import hooks.
    const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL)}); })`;
    const worker = new Worker(boot, { eval: true, resourceLimits: { maxOldGenerationSizeMb: MAX_HEAP_MB } });
    worker.unref();
    worker.on('message', (message: { started: number } | { id: number; result: TypeCheckResult | null; error?: string }) => {
      if ('started' in message) {
        const entry = this.pending.get(message.started);
        if (entry) {
          entry.timer = setTimeout(() => {
            entry.done({ ok: false, why: `the type check took longer than ${Math.round(entry.timeoutMs / 1000)} s and was stopped` });
            this.stop(worker, 'a type check before this one ran past its time');
          }, entry.timeoutMs);
        }
        return;
      }
      const entry = this.pending.get(message.id);
      if (message.result) entry?.done({ ok: true, result: message.result });
      else entry?.done({ ok: false, why: message.error ? `the type check failed: ${message.error}` : 'TypeScript is not installed on this server' });
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
    for (const entry of [...this.pending.values()]) entry.done({ ok: false, why });
  }
}
