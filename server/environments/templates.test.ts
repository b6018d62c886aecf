import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEMPLATE_NAMES } from '../../env-templates/load-template';
import { FsBlobStore } from '../blobs/store';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { DryRunPool } from './dry-run-pool';
import { ensureTemplates, validatePendingTemplates } from './templates';

describe('built-in environment templates', () => {
  let t: TestDatabase;
  let blobs: FsBlobStore;
  let root: string;
  beforeAll(async () => {
    t = await createTestDatabase();
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-blobs-'));
    blobs = new FsBlobStore(root);
  });
  afterAll(async () => {
    await t?.drop();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('seeds every template into a team once, with its datasets in the blob store, and validates them', async () => {
    const team = await t.db.team.create({ data: { name: 'T', slug: 't-seed' } });
    expect(await ensureTemplates(t.db, blobs, team.id)).toBe(TEMPLATE_NAMES.length);
    expect(await ensureTemplates(t.db, blobs, team.id)).toBe(0);
    const envs = await t.db.environment.findMany({ where: { teamId: team.id }, include: { versions: true } });
    expect(envs.map((e) => e.name).sort()).toEqual([...TEMPLATE_NAMES].sort());
    for (const env of envs) {
      expect(env.versions).toHaveLength(1);
      expect(env.versions[0].contentHash).toMatch(/^[0-9a-f]{64}$/);
      expect(Object.keys(env.versions[0].files as object)).toContain(env.versions[0].entry);
      // The README comes with the code, as in an environment a user makes from the template.
      expect((env.versions[0].files as Record<string, string>)['README.md']).toMatch(/^# /);
    }
    const datasets = await t.db.datasetVersion.findMany({ where: { dataset: { teamId: team.id } }, include: { dataset: true } });
    expect(datasets.map((d) => d.dataset.name)).toEqual(expect.arrayContaining(['math/data/train.jsonl', 'math/data/held-out.jsonl']));
    for (const d of datasets) {
      const bytes = await blobs.get(d.storageKey);
      expect(bytes.length).toBe(Number(d.bytes));
      expect(bytes.toString().split('\n').filter(Boolean)).toHaveLength(d.rowCount);
    }

    const dryRuns = new DryRunPool();
    await validatePendingTemplates(t.db, dryRuns).finally(() => dryRuns.close());
    const versions = await t.db.environmentVersion.findMany({ where: { environment: { teamId: team.id } }, include: { environment: true } });
    for (const v of versions) {
      expect(v.validationStatus, `${v.environment.name}: ${JSON.stringify(v.validation).slice(0, 500)}`).toBe('VALID');
      expect((v.validation as { episodes: number }).episodes).toBeGreaterThan(0);
    }
  });
});
