import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationsDir } from '../paths';
import { migrate, MigrationError, readMigrations } from './migrate';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** A copy of the real migrations folder that a test may change. */
function copyMigrations(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-migrations-'));
  fs.cpSync(migrationsDir, dir, { recursive: true });
  return dir;
}

describe('migrate', () => {
  const dbs: TestDatabase[] = [];
  const fresh = async () => {
    const t = await createTestDatabase({ migrated: false });
    dbs.push(t);
    return t;
  };
  afterAll(async () => {
    await Promise.all(dbs.map((d) => d.drop()));
  });

  it('applies every migration to an empty database once, recording them as Prisma does', async () => {
    const { url } = await fresh();
    const first = await migrate(url);
    expect(first.applied).toEqual(readMigrations().map((m) => m.name));
    expect(await migrate(url)).toEqual({ applied: [], total: first.total });
    const rows = await query<{ migration_name: string; checksum: string; applied_steps_count: number; finished_at: Date }>(
      url,
      'SELECT migration_name, checksum, applied_steps_count, finished_at FROM "_prisma_migrations"',
    );
    expect(rows).toHaveLength(first.total);
    for (const row of rows) {
      expect(row.checksum).toMatch(/^[0-9a-f]{64}$/);
      expect(row.applied_steps_count).toBe(1);
      expect(row.finished_at).toBeInstanceOf(Date);
    }
  });

  it('lets two servers that start together migrate without racing', async () => {
    const { url } = await fresh();
    const [a, b] = await Promise.all([migrate(url), migrate(url)]);
    expect([...a.applied, ...b.applied].sort()).toEqual(readMigrations().map((m) => m.name));
    const rows = await query(url, 'SELECT 1 FROM "_prisma_migrations"');
    expect(rows).toHaveLength(a.total);
  });

  it('refuses to start when an applied migration was changed, naming it', async () => {
    const { url } = await fresh();
    const dir = copyMigrations();
    await migrate(url, dir);
    const [first] = readMigrations(dir);
    fs.appendFileSync(path.join(dir, first.name, 'migration.sql'), '\n-- edited\n');
    await expect(migrate(url, dir)).rejects.toThrow(MigrationError);
    await expect(migrate(url, dir)).rejects.toThrow(new RegExp(`Migration ${first.name} was changed`));
  });

  it('refuses a database migrated by newer code', async () => {
    const { url } = await fresh();
    const dir = copyMigrations();
    fs.mkdirSync(path.join(dir, '99990101000000_future'));
    fs.writeFileSync(path.join(dir, '99990101000000_future', 'migration.sql'), 'CREATE TABLE "Future" (id int);');
    await migrate(url, dir);
    await expect(migrate(url)).rejects.toThrow(/99990101000000_future, which is not in/);
  });

  it('rolls a failing migration back whole and records nothing', async () => {
    const { url } = await fresh();
    const dir = copyMigrations();
    fs.mkdirSync(path.join(dir, '99990101000000_broken'));
    fs.writeFileSync(
      path.join(dir, '99990101000000_broken', 'migration.sql'),
      'CREATE TABLE "HalfDone" (id int);\nSELECT no_such_function();',
    );
    await expect(migrate(url, dir)).rejects.toThrow(/Migration 99990101000000_broken failed/);
    const tables = await query(url, `SELECT 1 FROM information_schema.tables WHERE table_name = 'HalfDone'`);
    expect(tables).toHaveLength(0);
    const recorded = await query(url, `SELECT 1 FROM "_prisma_migrations" WHERE migration_name = '99990101000000_broken'`);
    expect(recorded).toHaveLength(0);
  });
});

describe('readMigrations', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyMigrations();
  });
  it('reads folders in name order with sha256 checksums of their SQL', () => {
    fs.mkdirSync(path.join(dir, '00000000000000_first'));
    fs.writeFileSync(path.join(dir, '00000000000000_first', 'migration.sql'), 'SELECT 1;');
    const list = readMigrations(dir);
    expect(list[0]).toMatchObject({
      name: '00000000000000_first',
      checksum: '17db4fd369edb9244b9f91d9aeed145c3d04ad8ba6e95d06247f07a63527d11a',
    });
    expect(list.map((m) => m.name)).toEqual([...list.map((m) => m.name)].sort());
  });
});
