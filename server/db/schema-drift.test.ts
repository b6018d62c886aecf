import fs from 'node:fs';
import path from 'node:path';
import { getDMMF } from '@prisma/get-dmmf';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../paths';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';

// The migrations are SQL written apart from schema.prisma (the native migrate engine cannot be
// fetched offline). This test migrates an empty database and checks that everything
// schema.prisma declares exists there exactly, and nothing else does, so the two cannot drift.

type Dmmf = Exclude<ReturnType<typeof getDMMF>, { type: string; reason: string }>;
type Model = Dmmf['datamodel']['models'][number];
type Field = Model['fields'][number];

const dmmfResult = getDMMF({ datamodel: fs.readFileSync(path.join(repoRoot, 'prisma/schema.prisma'), 'utf8') });
if ('reason' in dmmfResult) throw new Error(`schema.prisma does not parse: ${dmmfResult.reason}`);
const dmmf = dmmfResult as Dmmf;

const scalarTypes: Record<string, { dataType: string; udt: string }> = {
  String: { dataType: 'text', udt: 'text' },
  Int: { dataType: 'integer', udt: 'int4' },
  BigInt: { dataType: 'bigint', udt: 'int8' },
  Float: { dataType: 'double precision', udt: 'float8' },
  Boolean: { dataType: 'boolean', udt: 'bool' },
  DateTime: { dataType: 'timestamp without time zone', udt: 'timestamp' },
  Json: { dataType: 'jsonb', udt: 'jsonb' },
  Bytes: { dataType: 'bytea', udt: 'bytea' },
  Decimal: { dataType: 'numeric', udt: 'numeric' },
};

const tableOf = (model: Model) => model.dbName ?? model.name;
const columnOf = (model: Model, fieldName: string) => {
  const field = model.fields.find((f) => f.name === fieldName);
  if (!field) throw new Error(`${model.name}.${fieldName} is not a field`);
  return field.dbName ?? field.name;
};
const columnFields = (model: Model) => model.fields.filter((f) => f.kind === 'scalar' || f.kind === 'enum');

interface ColumnRow {
  table_name: string;
  column_name: string;
  data_type: string;
  udt_name: string;
  is_nullable: 'YES' | 'NO';
  column_default: string | null;
}
interface IndexRow {
  table: string;
  name: string;
  unique: boolean;
  primary: boolean;
  columns: string[];
  descending: boolean[];
}
interface ForeignKeyRow {
  table: string;
  columns: string[];
  ref_table: string;
  ref_columns: string[];
  on_delete: string;
}

describe('schema.prisma and the migrated database agree', () => {
  let t: TestDatabase;
  let columns: ColumnRow[];
  let indexes: IndexRow[];
  let foreignKeys: ForeignKeyRow[];
  let enums: Map<string, string[]>;
  let tables: string[];

  beforeAll(async () => {
    t = await createTestDatabase();
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    try {
      tables = (
        await client.query<{ table_name: string }>(
          `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
        )
      ).rows.map((r) => r.table_name);
      columns = (
        await client.query<ColumnRow>(
          `SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default
             FROM information_schema.columns WHERE table_schema = 'public'`,
        )
      ).rows;
      indexes = (
        await client.query<IndexRow>(`
          SELECT t.relname AS table, i.relname AS name, ix.indisunique AS unique, ix.indisprimary AS primary,
                 array_agg(a.attname::text ORDER BY k.ord) AS columns,
                 array_agg((ix.indoption[k.ord - 1] & 1) = 1 ORDER BY k.ord) AS descending
            FROM pg_index ix
            JOIN pg_class i ON i.oid = ix.indexrelid
            JOIN pg_class t ON t.oid = ix.indrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = 'public'
            CROSS JOIN LATERAL unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord)
            JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
           GROUP BY t.relname, i.relname, ix.indisunique, ix.indisprimary`)
      ).rows;
      foreignKeys = (
        await client.query<ForeignKeyRow>(`
          SELECT c.conrelid::regclass::text AS table,
                 array_agg(a.attname::text ORDER BY k.ord) AS columns,
                 c.confrelid::regclass::text AS ref_table,
                 array_agg(ra.attname::text ORDER BY k.ord) AS ref_columns,
                 c.confdeltype::text AS on_delete
            FROM pg_constraint c
            CROSS JOIN LATERAL unnest(c.conkey, c.confkey) WITH ORDINALITY AS k(attnum, refnum, ord)
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
            JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = k.refnum
           WHERE c.contype = 'f'
           GROUP BY c.oid, c.conrelid, c.confrelid, c.confdeltype`)
      ).rows.map((r) => ({ ...r, table: r.table.replace(/"/g, ''), ref_table: r.ref_table.replace(/"/g, '') }));
      const enumRows = (
        await client.query<{ name: string; value: string }>(
          `SELECT t.typname AS name, e.enumlabel AS value FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid ORDER BY t.typname, e.enumsortorder`,
        )
      ).rows;
      enums = new Map();
      for (const row of enumRows) enums.set(row.name, [...(enums.get(row.name) ?? []), row.value]);
    } finally {
      await client.end();
    }
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('has exactly one table per model', () => {
    const expected = dmmf.datamodel.models.map(tableOf).sort();
    expect(tables.filter((n) => n !== '_prisma_migrations').sort()).toEqual(expected);
  });

  it('has every enum with exactly its values, in order', () => {
    expect([...enums.keys()].sort()).toEqual(dmmf.datamodel.enums.map((e) => e.dbName ?? e.name).sort());
    for (const e of dmmf.datamodel.enums) {
      expect(enums.get(e.dbName ?? e.name), `enum ${e.name}`).toEqual(e.values.map((v) => v.dbName ?? v.name));
    }
  });

  for (const model of dmmf.datamodel.models) {
    describe(model.name, () => {
      it('has exactly its columns, each with its type and nullability', () => {
        const actual = columns.filter((c) => c.table_name === tableOf(model));
        expect(actual.map((c) => c.column_name).sort()).toEqual(columnFields(model).map((f) => f.dbName ?? f.name).sort());
        for (const field of columnFields(model)) {
          const column = actual.find((c) => c.column_name === (field.dbName ?? field.name))!;
          const where = `${model.name}.${field.name}`;
          if (field.isList) {
            expect(column.data_type, where).toBe('ARRAY');
            const base = field.kind === 'enum' ? field.type : scalarTypes[field.type].udt;
            expect(column.udt_name, where).toBe(`_${base}`);
          } else if (field.kind === 'enum') {
            expect(column.data_type, where).toBe('USER-DEFINED');
            expect(column.udt_name, where).toBe(field.type);
          } else {
            expect(scalarTypes[field.type], `${where}: unknown type ${field.type}`).toBeDefined();
            expect(column.data_type, where).toBe(scalarTypes[field.type].dataType);
          }
          // Prisma creates scalar lists nullable and everything else as the schema says.
          const nullable = field.isList ? true : !field.isRequired;
          expect(column.is_nullable, `${where} nullability`).toBe(nullable ? 'YES' : 'NO');
          const dbDefault = column.column_default !== null;
          const schemaDefault = field.hasDefaultValue && !(typeof field.default === 'object' && field.default && 'name' in field.default && ['cuid', 'uuid'].includes((field.default as { name: string }).name));
          expect(dbDefault, `${where} default`).toBe(schemaDefault);
        }
      });

      it('has its primary key', () => {
        const pkFields = model.primaryKey?.fields ?? model.fields.filter((f) => f.isId).map((f) => f.name);
        const pk = indexes.find((i) => i.table === tableOf(model) && i.primary);
        expect(pk?.columns, `${model.name} primary key`).toEqual(pkFields.map((f) => columnOf(model, f)));
      });

      it('has every unique constraint and index it declares, and no others', () => {
        const declared = dmmf.datamodel.indexes
          .filter((i) => i.model === model.name && i.type !== 'id')
          .map((i) => ({
            unique: i.type === 'unique',
            columns: i.fields.map((f) => columnOf(model, f.name)),
            descending: i.fields.map((f) => f.sortOrder === 'desc'),
          }));
        const actual = indexes
          .filter((i) => i.table === tableOf(model) && !i.primary)
          .map((i) => ({ unique: i.unique, columns: i.columns, descending: i.descending }));
        const key = (i: { unique: boolean; columns: string[]; descending: boolean[] }) =>
          `${i.unique ? 'unique' : 'index'}(${i.columns.map((c, n) => c + (i.descending[n] ? ' desc' : '')).join(',')})`;
        expect(actual.map(key).sort()).toEqual(declared.map(key).sort());
      });

      it('has a foreign key for every relation it holds, with its delete rule', () => {
        const deleteRule: Record<string, string> = { Cascade: 'c', Restrict: 'r', SetNull: 'n', NoAction: 'a', SetDefault: 'd' };
        const relations = model.fields.filter((f: Field) => f.kind === 'object' && f.relationFromFields?.length);
        const declared = relations.map((f) => {
          const target = dmmf.datamodel.models.find((m) => m.name === f.type)!;
          const optional = f.relationFromFields!.some((name) => !model.fields.find((x) => x.name === name)!.isRequired);
          // Prisma's defaults: SetNull for optional relations, Restrict for required ones.
          const onDelete = (f.relationOnDelete as string | undefined) ?? (optional ? 'SetNull' : 'Restrict');
          return `${f.relationFromFields!.map((n) => columnOf(model, n)).join(',')}->${tableOf(target)}(${f.relationToFields!.map((n) => columnOf(target, n)).join(',')}) ${deleteRule[onDelete]}`;
        });
        const actual = foreignKeys
          .filter((k) => k.table === tableOf(model))
          .map((k) => `${k.columns.join(',')}->${k.ref_table}(${k.ref_columns.join(',')}) ${k.on_delete}`);
        expect(actual.sort()).toEqual(declared.sort());
      });
    });
  }
});
