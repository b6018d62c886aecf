// Writes a new SQL migration: the difference between the schema the latest migration was made
// from and prisma/schema.prisma, as Prisma's own SQL.
//
// Prisma 7's CLI needs a native schema engine that cannot be downloaded offline, but the same
// engine ships compiled to WebAssembly (@prisma/schema-engine-wasm); we drive it directly. Each
// migration folder keeps the schema it was made from (schema.snapshot.prisma), so a diff needs no
// schema file. server/db/schema-drift.test.ts checks the result against a real PostgreSQL.
//
//   npm run db:migration -- add_things
import * as bg from '@prisma/schema-engine-wasm/schema_engine_bg';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import fs from 'node:fs';
import path from 'node:path';

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error('usage: npm run db:migration -- <name in snake_case>');
  process.exit(2);
}
const migrationsDir = 'prisma/migrations';
const snapshotName = 'schema.snapshot.prisma';
const schema = fs.readFileSync('prisma/schema.prisma', 'utf8');

const wasm = fs.readFileSync('node_modules/@prisma/schema-engine-wasm/schema_engine_bg.wasm');
const { instance } = await WebAssembly.instantiate(wasm, { './schema_engine_bg.js': bg });
bg.__wbg_set_wasm(instance.exports);
instance.exports.__wbindgen_start?.();

const latest = fs.existsSync(migrationsDir)
  ? fs
      .readdirSync(migrationsDir)
      .filter((d) => fs.existsSync(path.join(migrationsDir, d, 'migration.sql')))
      .sort()
      .at(-1)
  : undefined;
const previous = latest ? path.join(migrationsDir, latest, snapshotName) : undefined;
if (previous && !fs.existsSync(previous)) {
  console.error(`${previous} is missing: cannot tell what the migrations already create`);
  process.exit(1);
}

// The engine opens a connection (to learn the server's version) even for a schema-to-schema
// diff; it changes nothing there. Any PostgreSQL will do: DATABASE_URL, else the local one.
const adapter = new PrismaPg({
  connectionString: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres',
});
const engine = await bg.SchemaEngine.new(
  { datamodels: [['schema.prisma', schema]] },
  () => {},
  bindMigrationAwareSqlAdapterFactory(adapter),
);
const asTarget = (content) => ({ tag: 'schemaDatamodel', files: [{ path: 'schema.prisma', content }] });
const result = await engine.diff({
  from: previous ? asTarget(fs.readFileSync(previous, 'utf8')) : { tag: 'empty' },
  to: asTarget(schema),
  script: true,
  exitCode: null,
  filters: { externalTables: [], externalEnums: [] },
});
const sql = result.stdout ?? '';
if (!sql.trim() || sql.includes('-- This is an empty migration')) {
  console.log('schema.prisma and the migrations agree: nothing to write');
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const dir = path.join(migrationsDir, `${stamp}_${name}`);
fs.mkdirSync(dir, { recursive: true });
fs.writeFileSync(path.join(dir, 'migration.sql'), sql);
fs.writeFileSync(path.join(dir, snapshotName), schema);
const lock = path.join(migrationsDir, 'migration_lock.toml');
if (!fs.existsSync(lock)) fs.writeFileSync(lock, 'provider = "postgresql"\n');
console.log(`wrote ${dir}/migration.sql`);
