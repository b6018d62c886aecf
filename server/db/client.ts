import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { type Prisma, PrismaClient } from './generated/prisma/client';

export type Db = PrismaClient;

const pools = new WeakMap<Db, pg.Pool>();

/** A Prisma client over node-postgres (Prisma 7 driver adapter). */
export function createDb(databaseUrl: string, poolSize = 10): Db {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolSize });
  // An idle connection the database closed (a restart) is dropped by the pool; unheard, the
  // pool's 'error' event would end the process before Prisma's own listener is attached.
  pool.on('error', () => {});
  const db = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  pools.set(db, pool);
  return db;
}

/**
 * The client's own connection pool, for the few hot paths where Prisma's interactive
 * transaction costs too much (about 2 ms per transaction before the first statement, measured
 * against BEGIN on a pooled connection): stream ingest (server/streams/ingest.ts).
 */
export function poolOf(db: Db): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('this Prisma client was not made by createDb');
  return pool;
}

/**
 * A statement (written with Prisma.sql) run on the pool itself, without Prisma's query engine,
 * which costs more than the statement for the scheduler's and the worker protocol's statements,
 * each run many times a second (start, finish, placement, a round's input). Rows come as
 * node-postgres gives them: bigint and numeric as text, so select times and big numbers cast.
 * Dates go in as UTC text, as Prisma writes them into the schema's timestamp columns.
 * `connection`: a client checked out of the pool, for statements that must follow one another on
 * the same connection.
 */
export async function rawQuery<R>(db: Db, sql: Prisma.Sql, connection: pg.Pool | pg.PoolClient = poolOf(db)): Promise<R[]> {
  const values = sql.values.map((v) => (v instanceof Date ? v.toISOString() : v));
  return (await connection.query(sql.text, values)).rows as R[];
}
