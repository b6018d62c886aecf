// An attempt's outbox: the runner's stream batches, numbered per attempt (seq 0, 1, 2, …) as they
// arrive and sent in that order, each retried with backoff until the server takes it, so a batch
// is never lost and a retried one is recognised by its seq. While the lease holds, nothing is
// dropped: batches wait in memory while the server is away.
import { STREAM_WINDOW } from '../../sdk/worker-protocol';
import type { StreamKind } from '../../sdk/live';
import { backoff, fenced, sleep, transient, type WorkerTransport } from './transport';

type QueuedBatch = { seq: number; kind: StreamKind; items: unknown[] };

export interface OutboxOptions {
  attemptId: string;
  fencingToken: string;
  transport: WorkerTransport;
  /** The lease is gone: write nothing more. */
  lost(): boolean;
  stopped(): boolean;
  /** The server refused a batch for a stale fence: the attempt's lease is lost. */
  lose(why: string): void;
  log(level: 'info' | 'warn' | 'error', message: string): void;
}

export class Outbox {
  /** Batches waiting to be taken, in seq order. */
  queue: QueuedBatch[] = [];
  /** Batches the server took (for tests and logs). */
  sent = 0;
  /** The next seq to give a batch. */
  private seq = 0;
  private pumping = false;
  private emptied: (() => void)[] = [];

  constructor(private readonly o: OutboxOptions) {}

  add(kind: StreamKind, items: unknown[]): void {
    if (this.o.lost()) return;
    this.queue.push({ seq: this.seq++, kind, items });
    void this.pump();
  }

  /** Resolves once everything queued was taken (or the lease is lost). */
  flushed(): Promise<void> {
    if (this.queue.length === 0 || this.o.lost()) return Promise.resolve();
    return new Promise((resolve) => {
      this.emptied.push(resolve);
      void this.pump();
    });
  }

  /** The lease is lost: what waits is dropped, and whoever waits for the outbox is let go. */
  drop(): void {
    this.queue.length = 0;
    for (const w of this.emptied.splice(0)) w();
  }

  /**
   * Sends queued batches in order; retries each until taken, or until the lease is lost. Over the
   * socket up to STREAM_WINDOW are under way at once: the server publishes each to the run's
   * watchers as soon as it is fenced and answers once it is stored, so a slow write does not
   * hold up the next batch's publication. They are answered in order; after a failure, the ones
   * taken leave the queue and the rest go again from the failed one.
   */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    const { attemptId, fencingToken, transport } = this.o;
    const sending = new Map<QueuedBatch, Promise<void>>();
    const taken = new Set<QueuedBatch>();
    try {
      let failures = 0;
      while (this.queue.length > 0 && !this.o.lost() && !this.o.stopped()) {
        const window = transport.connected ? STREAM_WINDOW : 1;
        for (const b of this.queue.slice(0, window)) {
          if (sending.has(b)) continue;
          const sent = transport.sendBatch({ attemptId, fencingToken, seq: b.seq, kind: b.kind, items: b.items });
          sent.then(() => taken.add(b), () => undefined);
          sending.set(b, sent);
        }
        const batch = this.queue[0];
        try {
          await sending.get(batch);
          sending.delete(batch);
          this.queue.shift();
          this.sent++;
          failures = 0;
        } catch (e) {
          await Promise.allSettled(sending.values());
          sending.clear();
          const before = this.queue.length;
          this.queue = this.queue.filter((b) => b === batch || !taken.has(b));
          this.sent += before - this.queue.length;
          if (fenced(e)) {
            this.o.lose('the server refused a stream batch (409)');
          } else if (!transient(e)) {
            this.o.log('error', `attempt ${attemptId}: batch ${batch.seq} (${batch.kind}) refused, dropped: ${(e as Error).message}`);
            this.queue.shift();
          } else {
            await sleep(backoff(++failures));
          }
        } finally {
          taken.delete(batch);
        }
      }
    } finally {
      this.pumping = false;
      if (this.queue.length === 0 || this.o.lost()) for (const w of this.emptied.splice(0)) w();
    }
  }
}
