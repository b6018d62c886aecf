/**
 * The leader runs each round on a worker thread (round-worker.ts) with a database pool of its
 * own: it reads the round's input, plans, and writes the plan there, so that a round on a large
 * cluster never holds up the server's event loop. Reading 50,000 queued jobs' rows, copying them
 * to a planning thread and the plan back, and building a round's statements each held the loop
 * for 50–150 ms; now the API, socket.io and the worker protocol answer throughout, and the loop
 * only relays the round's events (assignments, stop signals, job changes) to the sockets, in
 * batches as the thread posts them. A thread that fails or exits is replaced at the next round;
 * the round it owed fails, and the loop's next round runs again.
 */
import { Worker } from 'node:worker_threads';
import type { Assignment } from '../../sdk/worker-protocol';

/** What a round tells the server to do on its sockets. */
export interface SchedulerEvents {
  /** A job was placed on a worker: push the assignment (the worker also polls). */
  assigned(workerId: string, assignment: Assignment): void;
  /** Ask a worker to stop an attempt: preempt (checkpoint first) or cancel. */
  signal(workerId: string, payload: { attemptId: string; preempt?: boolean; cancel?: boolean }): void;
  /** A job changed state: for live job lists. */
  jobChanged(teamId: string, jobId: string): void;
}

const WORKER_URL = new URL('./round-worker.ts', import.meta.url).href;

export interface RoundRequest {
  id: number;
  now: number;
  housekeeping: boolean;
  /** Tests only: the thread waits for gate[0] to become non-zero before it starts the round. */
  gate?: Int32Array;
}

/** The round's events, in the order the thread raised them. */
export type RoundEvent =
  | { type: 'assigned'; args: Parameters<SchedulerEvents['assigned']> }
  | { type: 'signal'; args: Parameters<SchedulerEvents['signal']> }
  | { type: 'jobChanged'; args: Parameters<SchedulerEvents['jobChanged']> };

export interface RoundSummary {
  placed: number;
  preempted: number;
  waiting: number;
}

export type RoundMessage =
  | { ready: true }
  | { id: number; events: RoundEvent[] }
  | { id: number; log: string }
  | { id: number; done: RoundSummary }
  | { id: number; error: string };

export class RoundThread {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (summary: RoundSummary) => void; reject: (error: Error) => void }>();

  constructor(
    private readonly databaseUrl: string,
    private readonly events: SchedulerEvents,
    private readonly log: (line: string) => void = () => {},
  ) {}

  /** Starts the thread now, so that the first round does not wait for it to load. */
  start(): void {
    this.thread();
  }

  round(now: Date, housekeeping: boolean, opts: { gate?: Int32Array } = {}): Promise<RoundSummary> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, now: now.getTime(), housekeeping, gate: opts.gate } satisfies RoundRequest);
    });
  }

  async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.fail('the round thread was stopped');
    await worker?.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    // tsx's loader is registered inside the thread: Node 20 threads do not inherit the process's
    // --import hooks, and vitest's transform does not reach threads either.
    const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL)}); })`;
    const worker = new Worker(boot, { eval: true, workerData: { databaseUrl: this.databaseUrl } });
    worker.unref();
    worker.on('message', (message: RoundMessage) => this.received(message));
    worker.on('error', (error) => this.lost(worker, `the round thread failed: ${error.message}`));
    worker.on('exit', () => this.lost(worker, 'the round thread exited'));
    this.worker = worker;
    return worker;
  }

  private received(message: RoundMessage): void {
    if ('ready' in message) return;
    if ('events' in message) {
      for (const event of message.events) {
        if (event.type === 'assigned') this.events.assigned(...event.args);
        else if (event.type === 'signal') this.events.signal(...event.args);
        else this.events.jobChanged(...event.args);
      }
      return;
    }
    if ('log' in message) return this.log(message.log);
    const entry = this.pending.get(message.id);
    this.pending.delete(message.id);
    if ('error' in message) entry?.reject(new Error(message.error));
    else entry?.resolve(message.done);
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
