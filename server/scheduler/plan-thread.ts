/**
 * The leader plans on a worker thread (plan-worker.ts), so that a round on a large cluster never
 * holds up the server's event loop: its API, socket.io and the worker protocol answer while the
 * thread plans, and the loop applies the plan when it comes back. The round's input is plain data
 * (loadRound's rows); the plan comes back with the ids of the jobs it decided (plan-round.ts).
 * A thread that fails or exits is replaced at the next round; the round it owed fails, and the
 * loop's next round plans again.
 */
import { Worker } from 'node:worker_threads';
import type { Plan, PlanInput } from './types';

const WORKER_URL = new URL('./plan-worker.ts', import.meta.url).href;

export interface PlanRequest {
  id: number;
  /** Tests only: the thread waits for gate[0] to become non-zero before answering. */
  gate?: Int32Array;
}

export type PlanResponse = { id: number; plan: Plan; read: string[] } | { id: number; error: string };

export interface ThreadPlan {
  plan: Plan;
  /** The ids of the queued jobs the plan decided; the others wait behind an earlier job of their kind. */
  read: string[];
}

export class PlanThread {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (plan: ThreadPlan) => void; reject: (error: Error) => void }>();

  /** Starts the thread now, so that the first round does not wait for it to load. */
  start(): void {
    this.thread();
  }

  plan(input: PlanInput, opts: { gate?: Int32Array } = {}): Promise<ThreadPlan> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, input, gate: opts.gate });
    });
  }

  async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.fail('the planner thread was stopped');
    await worker?.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    // tsx's loader is registered inside the thread: Node 20 threads do not inherit the process's
    // --import hooks, and vitest's transform does not reach threads either.
    const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL)}); })`;
    const worker = new Worker(boot, { eval: true });
    worker.unref();
    worker.on('message', (message: PlanResponse | { ready: true }) => {
      if ('ready' in message) return;
      const entry = this.pending.get(message.id);
      this.pending.delete(message.id);
      if ('error' in message) entry?.reject(new Error(`planning failed: ${message.error}`));
      else entry?.resolve({ plan: message.plan, read: message.read });
    });
    worker.on('error', (error) => this.lost(worker, `the planner thread failed: ${error.message}`));
    worker.on('exit', () => this.lost(worker, 'the planner thread exited'));
    this.worker = worker;
    return worker;
  }

  private lost(worker: Worker, why: string): void {
    if (this.worker !== worker) return;
    this.worker = null;
    this.fail(why);
  }

  private fail(why: string): void {
    for (const entry of this.pending.values()) entry.reject(new Error(why));
    this.pending.clear();
  }
}
