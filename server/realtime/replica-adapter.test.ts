import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { Server } from 'socket.io';
import { io as connect } from 'socket.io-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { createReplicaAdapter } from './replica-adapter';

/** A pool whose LISTEN connection and NOTIFYs never answer, as when the database is slow: it records the NOTIFYs. */
function stuckPool() {
  const notified: unknown[][] = [];
  const pool = {
    connect: () => new Promise(() => {}),
    query: (...args: unknown[]) => (notified.push(args), new Promise(() => {})),
    on: () => pool,
  };
  return { pool: pool as unknown as pg.Pool, notified };
}

describe('the replica adapter', () => {
  const closers: Array<() => void> = [];
  afterEach(() => closers.splice(0).forEach((close) => close()));

  it("delivers a broadcast to this server's clients without waiting for its NOTIFY, which still goes out", async () => {
    const { pool, notified } = stuckPool();
    const httpServer = http.createServer();
    const io = new Server(httpServer);
    io.adapter(createReplicaAdapter(pool, { cleanupInterval: 60_000 }));
    io.on('connection', (s) => void s.join('room'));
    await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
    const client = connect(`http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`, { transports: ['websocket'], reconnection: false });
    closers.push(() => client.close(), () => void io.close());
    await new Promise<void>((resolve) => client.once('connect', () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, 50)); // the join

    const received: number[] = [];
    client.on('stream', (n: number) => received.push(n));
    for (let n = 0; n < 3; n++) io.to('room').emit('stream', n);
    await expect.poll(() => received, { timeout: 2_000 }).toEqual([0, 1, 2]);

    const notifies = notified.filter(([sql]) => String(sql).includes('pg_notify')).map(([, values]) => JSON.parse((values as string[])[1]) as { data?: { packet?: { data?: unknown[] } } });
    expect(notifies.map((m) => m.data?.packet?.data).filter(Boolean)).toEqual([['stream', 0], ['stream', 1], ['stream', 2]]);
  });

  // A Ctrl-C just after start-up closed the adapter while its LISTEN connection was still being
  // made; the connection was kept, and the shutdown's pool.end() waited for it past its deadline.
  describe('closed while its LISTEN connection is being made', () => {
    let t: TestDatabase;
    beforeAll(async () => {
      t = await createTestDatabase({ migrated: false });
    });
    afterAll(async () => {
      await t?.drop();
    });

    /** A real pool whose connection, or the first query on it, is handed over only after `open`. */
    function gatedPool(gate: 'connect' | 'listen') {
      const real = new pg.Pool({ connectionString: t.url, max: 2 });
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      const pool = {
        query: real.query.bind(real),
        connect: async () => {
          const client = await real.connect();
          if (gate === 'connect') await opened;
          if (gate === 'listen') {
            const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
            (client as unknown as { query: unknown }).query = async (...args: unknown[]) => (await opened, query(...args));
          }
          return client;
        },
      };
      return { real, pool: pool as unknown as pg.Pool, open };
    }

    for (const gate of ['connect', 'listen'] as const) {
      it(`gives the connection back, so that the pool ends (held at ${gate})`, async () => {
        const { real, pool, open } = gatedPool(gate);
        const io = new Server(http.createServer());
        io.adapter(createReplicaAdapter(pool, { cleanupInterval: 60_000 }));
        await expect.poll(() => real.totalCount).toBe(1);
        await new Promise<void>((resolve) => io.close(() => resolve()));
        open();
        // Before the fix this never resolved (the test's time-out).
        await real.end();
        expect(real.totalCount).toBe(0);
      });
    }
  });
});

