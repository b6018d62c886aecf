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
  const listen = listenConnection(pool);
  const create = createAdapter(listen.pool, opts);
  let open = 0;
  // A function, not an arrow: socket.io calls it with `new`.
  return function (nsp: unknown) {
    const adapter = create(nsp);
    // The adapter's own close releases its LISTEN connection when the last namespace closes; ours follows it.
    open++;
    const close = adapter.close.bind(adapter);
    adapter.close = () => {
      close();
      if (--open === 0) listen.close();
    };
    const notifying = adapter as unknown as Notifying;
    const notify = notifying.doPublish.bind(adapter);
    // No offsets to wait for: the adapter has none ("connection state recovery is not supported").
    // The NOTIFY is encoded and sent after the local delivery (which follows on a microtask), in
    // the order of the broadcasts.
    notifying.doPublish = (message) => (setImmediate(() => void notify(message)), Promise.resolve(''));
    return adapter;
  };
}

/**
 * The pool as the adapter sees it, where its one `connect()` is its LISTEN connection. The
 * adapter's close releases that connection only once it is set up: one still connecting, or still
 * sending its LISTENs, was kept for ever, and the pool's `end()` in the server's shutdown waited
 * for it (a Ctrl-C just after start-up overran the shutdown's deadline). Closed, this gives back
 * a connection still in the adapter's hands, ending it, and one that arrives later at once; the
 * reconnection the adapter then schedules waits for ever, holding nothing.
 */
function listenConnection(pool: pg.Pool): { pool: pg.Pool; close: () => void } {
  let closed = false;
  const held = new Set<pg.PoolClient>();
  const connect = async (): Promise<pg.PoolClient> => {
    if (closed) return new Promise<never>(() => {});
    const client = await pool.connect();
    if (closed) {
      client.release();
      return new Promise<never>(() => {});
    }
    held.add(client);
    // The pool gives each checkout a release of its own; this one's forgets the client first.
    const release = client.release.bind(client);
    client.release = (destroy?: boolean | Error) => {
      held.delete(client);
      release(destroy);
    };
    return client;
  };
  const view = { connect, query: pool.query.bind(pool) } as unknown as pg.Pool;
  return {
    pool: view,
    close: () => {
      closed = true;
      for (const client of [...held]) client.release(true);
    },
  };
}
