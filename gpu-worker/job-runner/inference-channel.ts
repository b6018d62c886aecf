// The daemon's side of an INFERENCE session as the runner sees it: sampling requests queued as they
// arrive, answers sent back. Its own module because the runner's options (types.ts) name it and
// the IPC messages (ipc.ts) carry its events, while the session itself (inference.ts) needs both.
import type { SampleDone, SampleRequest, SampleToken } from '../../sdk/worker-protocol';

export type InferenceEvent = { type: 'token'; token: SampleToken } | { type: 'done'; done: SampleDone };

/** Requests of one session, as they arrive from the daemon; answers go back through `reply`. */
export class InferenceChannel {
  private readonly queue: SampleRequest[] = [];
  private waiter: (() => void) | null = null;
  closed = false;

  constructor(readonly reply: (event: InferenceEvent) => void | Promise<void>) {}

  push(request: SampleRequest): void {
    if (this.closed) {
      void this.reply({ type: 'done', done: { requestId: request.requestId, attemptId: request.attemptId, reason: 'cancelled', text: '', tokens: [], error: 'the session has ended' } });
      return;
    }
    this.queue.push(request);
    this.waiter?.();
  }

  /** The next request, or null after `ms` (or when `stop` resolves first). */
  next(ms: number, stop: Promise<void>): Promise<SampleRequest | null> {
    const ready = this.queue.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(null), ms);
      const finish = (value: SampleRequest | null) => {
        clearTimeout(timer);
        this.waiter = null;
        resolve(value);
      };
      this.waiter = () => finish(this.queue.shift() ?? null);
      void stop.then(() => finish(null));
    });
  }

  /** No more requests: every waiting one is answered "cancelled". */
  close(): void {
    this.closed = true;
    for (const r of this.queue.splice(0)) {
      void this.reply({ type: 'done', done: { requestId: r.requestId, attemptId: r.attemptId, reason: 'cancelled', text: '', tokens: [], error: 'the session has ended' } });
    }
  }
}
