import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { migrationsDir as defaultMigrationsDir } from '../paths';

// Applies prisma/migrations at start, keeping Prisma's own `_prisma_migrations` table so that
// `prisma migrate status` agrees wherever the native engine is present (DESIGN.md, OFFLINE.md).

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateResult {
  applied: string[];
  total: number;
}

export class MigrationError extends Error {}

/** An arbitrary constant: every Whetstone server takes this advisory lock to migrate. */
const MIGRATION_LOCK_KEY = 7_424_001;

const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id"                  VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum"            VARCHAR(64) NOT NULL,
  "finished_at"         TIMESTAMPTZ,
  "migration_name"      VARCHAR(255) NOT NULL,
  "logs"                TEXT,
  "rolled_back_at"      TIMESTAMPTZ,
  "started_at"          TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

export function readMigrations(dir = defaultMigrationsDir): Migration[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(dir, d.name, 'migration.sql')))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = fs.readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

/**
 * Brings the database up to date. Two servers starting together serialise on an advisory lock;
 * the second finds nothing left to do. Refuses to go on when an applied migration's file has
 * changed, when a migration failed half-way, or when the database is ahead of this code.
 */
export async function migrate(databaseUrl: string, dir = defaultMigrationsDir): Promise<MigrateResult> {
  const migrations = readMigrations(dir);
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const { rows } = await client.query<AppliedRow>(
      'SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" ORDER BY started_at',
    );
    const applied = new Map<string, AppliedRow>();
    for (const row of rows) {
      if (row.rolled_back_at) continue;
      if (!row.finished_at) {
        throw new MigrationError(
          `Migration ${row.migration_name} started but did not finish. Repair the database by hand, then delete its row from "_prisma_migrations".`,
        );
      }
      applied.set(row.migration_name, row);
    }
    const known = new Set(migrations.map((m) => m.name));
    for (const name of applied.keys()) {
      if (!known.has(name)) {
        throw new MigrationError(
          `The database has migration ${name}, which is not in ${path.relative(process.cwd(), dir) || dir}: it was migrated by a newer version of Whetstone.`,
        );
      }
    }
    const done: string[] = [];
    for (const migration of migrations) {
      const row = applied.get(migration.name);
      if (row) {
        if (row.checksum !== migration.checksum) {
          throw new MigrationError(
            `Migration ${migration.name} was changed after it was applied (checksum ${row.checksum.slice(0, 12)}… in the database, ${migration.checksum.slice(0, 12)}… on disk). Restore the original file; put changes in a new migration.`,
          );
        }
        continue;
      }
      await applyOne(client, migration);
      done.push(migration.name);
    }
    return { applied: done, total: migrations.length };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await client.end().catch(() => {});
  }
}

async function applyOne(client: pg.Client, migration: Migration): Promise<void> {
  // One transaction for the SQL and its record: PostgreSQL's DDL is transactional, so a failed
  // migration leaves nothing behind.
  await client.query('BEGIN');
  try {
    const id = randomUUID();
    await client.query(
      'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())',
      [id, migration.checksum, migration.name],
    );
    await client.query(migration.sql);
    await client.query(
      'UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1',
      [id],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw new MigrationError(`Migration ${migration.name} failed: ${(error as Error).message}`);
  }
}
