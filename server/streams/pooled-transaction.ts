import pg from 'pg';
import { type Db, poolOf } from '../db/client';
import type { Prisma } from '../db/generated/prisma/client';

/**
 * A statement PostgreSQL plans once per connection: `text` with parameters $1… of `types`,
 * prepared with SQL PREPARE on first use and run with EXECUTE, so that it can go in the same
 * round trip as BEGIN (the simple query protocol takes several statements, but no parameters).
 */
export interface PreparedStatement {
  name: string;
  types: string[];
  text: string;
}

/** A prepared statement with its values (strings, finite numbers and booleans). */
export interface PreparedCall {
  prepared: PreparedStatement;
  values: Array<string | number | boolean>;
}

/**
 * Runs one statement in the transaction. A `name` has a Prisma.Sql statement whose text never
 * changes prepared once per connection (node-postgres' named statements) after the first.
 */
export type Query = <T>(sql: Prisma.Sql | PreparedCall, name?: string) => Promise<T[]>;

/** The statements prepared on each pooled connection so far. */
const preparedOn = new WeakMap<pg.PoolClient, Set<string>>();

/**
 * A transaction on a pooled connection, without Prisma: metrics and logs, the kinds that stream
 * all the time, spend about 2 ms less before they are published than in Prisma's interactive
 * transaction (server/db/client.ts). BEGIN goes in one round trip with the first statement, and
 * a prepared first statement is not planned again (planning was half of the fence's time).
 */
export async function pooledTransaction<T>(db: Db, work: (query: Query) => Promise<T>): Promise<T> {
  const client = await poolOf(db).connect();
  let begun = false;
  let broken = false;
  // A checked-out connection the database drops between two statements (a restart) emits
  // 'error', which unheard ends the process; the next statement fails and the batch with it.
  const dropped = () => (broken = true);
  client.on('error', dropped);
  const query = async <R>(sql: Prisma.Sql | PreparedCall, name?: string): Promise<R[]> => {
    if (begun) return 'prepared' in sql ? runPrepared<R>(client, '', sql) : ((await client.query({ name, text: sql.text, values: sql.values })).rows as R[]);
    begun = true;
    if (!('prepared' in sql)) {
      const [, first] = (await client.query(`BEGIN; ${inlined(sql)}`)) as unknown as [unknown, { rows: R[] }];
      return first.rows;
    }
    // Whether a PREPARE sent with it took effect is unknown if this fails: the connection goes.
    return runPrepared<R>(client, 'BEGIN; ', sql).catch((error: unknown) => {
      broken = true;
      throw error;
    });
  };
  try {
    const result = await work(query);
    if (begun) await client.query('COMMIT');
    return result;
  } catch (error) {
    // A connection that cannot roll back is not given back to the pool.
    if (begun && !broken) await client.query('ROLLBACK').catch(() => (broken = true));
    throw error;
  } finally {
    client.off('error', dropped);
    client.release(broken);
  }
}

/** EXECUTE of a prepared statement after `before`, with its PREPARE first on a connection that has not seen it. */
async function runPrepared<R>(client: pg.PoolClient, before: string, { prepared: statement, values }: PreparedCall): Promise<R[]> {
  let known = preparedOn.get(client);
  if (!known) preparedOn.set(client, (known = new Set()));
  const prepare = known.has(statement.name) ? '' : `PREPARE ${statement.name}(${statement.types.join(', ')}) AS ${statement.text}; `;
  const results = (await client.query(`${prepare}${before}EXECUTE ${statement.name}(${values.map(literal).join(', ')})`)) as unknown as pg.QueryResult | pg.QueryResult[];
  known.add(statement.name);
  return (Array.isArray(results) ? results.at(-1)! : results).rows as R[];
}

/** A statement run without preparing it: outside a pooled transaction, as an unnamed extended-protocol one. */
export function unprepared(sql: Prisma.Sql | PreparedCall): { text: string; values: unknown[] } {
  return 'prepared' in sql ? { text: sql.prepared.text, values: sql.values } : { text: sql.text, values: sql.values };
}

/**
 * A statement with its values written in as literals, for the simple query protocol (which
 * takes several statements at once but no parameters). Strings, numbers and booleans only.
 */
function inlined(sql: Prisma.Sql): string {
  return sql.text.replace(/\$(\d+)/g, (_, n: string) => literal(sql.values[Number(n) - 1]));
}

function literal(value: unknown): string {
  if (typeof value === 'string') return pg.escapeLiteral(value);
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') return String(value);
  throw new Error(`cannot inline a ${typeof value} into SQL`);
}
