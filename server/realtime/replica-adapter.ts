import { createAdapter, type PostgresAdapter, type PostgresAdapterOptions } from '@socket.io/postgres-adapter';
import type pg from 'pg';

/** The adapter's hook that sends a message to the other replicas (a NOTIFY); protected in its types. */
interface Notifying {
  doPublish(message: unknown): Promise<string>;
}

/**
 * The postgres adapter (emits reach the clients of every server replica, NOTIFY under the hood),
 * except that a broadcast reaches this server's own clients at once. As shipped, the adapter
 * delivers locally only once its NOTIFY has returned: a database round trip on every live
 * event's path, queued behind the other NOTIFYs on the realtime pool's one free connection.
 *
 * The NOTIFY still goes out, after the local delivery; the adapter reports its errors itself
 * (errorHandler), and those were never a reason to hold back local delivery. The other replicas
 * still get broadcasts in order when the pool has one connection for them (main.ts: two, one of
 * which LISTENs), as before.
 */
export function createReplicaAdapter(pool: pg.Pool, opts: PostgresAdapterOptions): (nsp: unknown) => PostgresAdapter {
  const create = createAdapter(pool, opts);
  // A function, not an arrow: socket.io calls it with `new`.
  return function (nsp: unknown) {
    const adapter = create(nsp);
    const notifying = adapter as unknown as Notifying;
    const notify = notifying.doPublish.bind(adapter);
    // No offsets to wait for: the adapter has none ("connection state recovery is not supported").
    // The NOTIFY is encoded and sent after the local delivery (which follows on a microtask), in
    // the order of the broadcasts.
    notifying.doPublish = (message) => (setImmediate(() => void notify(message)), Promise.resolve(''));
    return adapter;
  };
}
