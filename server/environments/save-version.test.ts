import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTemplate } from '../../env-templates/load-template';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { saveEnvironmentVersion } from './save-version';

describe('saving environment versions', () => {
  let t: TestDatabase;
  let teamId: string;
  let userId: string;
  beforeAll(async () => {
    t = await createTestDatabase();
    userId = (await t.db.user.create({ data: { email: 's@example.test', name: 'S' } })).id;
    teamId = (await t.db.team.create({ data: { name: 'T', slug: 't-save' } })).id;
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('stores a version once per content, dry-run validated, and reports errors at the user line', async () => {
    const bandit = loadTemplate('bandit');
    const input = { teamId, userId, name: 'my-bandit', entry: bandit.source.entry, files: bandit.source.files, manifest: bandit.manifest };
    const first = await saveEnvironmentVersion(t.db, input);
    expect(first).toMatchObject({ ok: true, version: 1, created: true, validation: { ok: true } });
    const again = await saveEnvironmentVersion(t.db, input);
    expect(again).toMatchObject({ ok: true, version: 1, created: false });
    if (!first.ok || !again.ok) throw new Error('unreachable');
    expect(again.versionId).toBe(first.versionId);

    const broken = { ...input, files: { ...input.files, [input.entry]: `${input.files[input.entry]}\nconst x: number = ;\n` } };
    const bad = await saveEnvironmentVersion(t.db, broken);
    if (!bad.ok) throw new Error('expected a saved, invalid version');
    expect(bad).toMatchObject({ version: 2, created: true, validation: { ok: false } });
    const line = broken.files[input.entry].split('\n').indexOf('const x: number = ;') + 1;
    expect(bad.validation!.compileErrors[0]).toMatchObject({ location: { file: input.entry, line, column: 19 } });
    const stored = await t.db.environmentVersion.findUniqueOrThrow({ where: { id: bad.versionId } });
    expect(stored.validationStatus).toBe('INVALID');

    expect(await saveEnvironmentVersion(t.db, { ...input, manifest: { ...bandit.manifest, kind: 'bogus' } })).toMatchObject({ ok: false, problems: [expect.stringMatching(/^manifest\.kind/)] });
    expect(await saveEnvironmentVersion(t.db, { ...input, entry: 'missing.ts' })).toMatchObject({ ok: false, problems: [expect.stringMatching(/missing\.ts is not one of the files/)] });
  });
});
