import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { type PreparedStatement, pooledTransaction } from './pooled-transaction';

// The transaction batches are stored in (ingest.ts): BEGIN in the same round trip as a first
// statement that is prepared once per connection.

const RATIO: PreparedStatement = { name: 'test_ratio', types: ['int', 'int', 'text'], text: 'SELECT $1::int / $2::int AS ratio, $3::text AS label, pg_backend_pid() AS pid' };
type Row = { ratio: number; label: string; pid: number };

describe('pooled transactions', () => {
  let t: TestDatabase;
  let db: Db; // one connection: every transaction gets the same one while it lives
  beforeAll(async () => {
    t = await createTestDatabase({ migrated: false });
    db = createDb(t.url, 1);
  });
  afterAll(async () => {
    await db?.$disconnect();
    await t?.drop();
  });

  it('prepares the first statement and named ones once per connection, and runs them in the transaction', async () => {
    const rows: Row[] = [];
    for (let i = 1; i <= 3; i++) {
      await pooledTransaction(db, async (query) => {
        rows.push(...(await query<Row>({ prepared: RATIO, values: [6, i, `it's ${i}`] })));
        // A later statement, also prepared, and one written with Prisma.sql, in the same transaction.
        const [again] = await query<Row>({ prepared: RATIO, values: [9, 3, 'later'] });
        const [open] = await query<{ open: boolean }>(Prisma.sql`SELECT now() = statement_timestamp() AS open`);
        // A named one, prepared by the first transaction and reused by the next ones.
        const [named] = await query<{ n: number }>(Prisma.sql`SELECT ${i}::int * 10 AS n`, 'test_named');
        expect([again.ratio, again.pid, open.open, named.n]).toEqual([3, rows.at(-1)!.pid, false, i * 10]);
      });
    }
    expect(rows.map((r) => [r.ratio, r.label])).toEqual([[6, "it's 1"], [3, "it's 2"], [2, "it's 3"]]);
    expect(new Set(rows.map((r) => r.pid)).size).toBe(1);
  });

  it('rolls back on a failure and keeps the connection, unless the first round trip failed: then it is replaced', async () => {
    const pid = async () => pooledTransaction(db, async (query) => (await query<Row>({ prepared: RATIO, values: [1, 1, 'pid'] }))[0].pid);
    const before = await pid();
    await expect(pooledTransaction(db, async (query) => {
      await query({ prepared: RATIO, values: [1, 1, 'fine'] });
      await query({ prepared: RATIO, values: [1, 0, 'later'] });
    })).rejects.toThrow(/division by zero/);
    expect(await pid()).toBe(before);
    await expect(pooledTransaction(db, (query) => query({ prepared: RATIO, values: [1, 0, 'first'] }))).rejects.toThrow(/division by zero/);
    const after = await pid();
    expect(after).not.toBe(before);
    // The new connection prepares the statement for itself.
    expect(await pid()).toBe(after);
  });
});
