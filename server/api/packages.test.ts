/**
 * Environment packages and the gallery over tRPC against a real server, PostgreSQL and dry-run
 * pool: a version exported from one team imports into another with the same content hash, the
 * same datasets and a dry run with the same statistics; a package changed after export, or of a
 * newer format, is refused storing nothing; a published version is read and imported by a user of
 * another team, and its runs are counted over every team by content hash.
 */
import { createTRPCClient, httpLink } from '@trpc/client';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DryRunReport } from '../../sdk/dry-run-report';
import { transformer } from '../../sdk/transformer';
import type { EnvironmentPackage } from '../environments/package';
import { addMember, createUserWithTeam, useTestServer } from '../test-support/test-server';
import type { AppRouter } from './root';

describe('environment packages and the gallery', () => {
  const s = useTestServer();
  const client = (cookie: string) =>
    createTRPCClient<AppRouter>({ links: [httpLink({ url: `${s.server.url}/api/trpc`, transformer, headers: () => ({ cookie, origin: s.server.url }) })] });
  let a: Awaited<ReturnType<typeof createUserWithTeam>>;
  let b: Awaited<ReturnType<typeof createUserWithTeam>>;
  let apiA: ReturnType<typeof client>;
  let apiB: ReturnType<typeof client>;
  let math: { versionId: string; environmentId: string };
  let pkg: EnvironmentPackage;

  beforeAll(async () => {
    a = await createUserWithTeam(s.server.url, s.t.db);
    b = await createUserWithTeam(s.server.url, s.t.db);
    apiA = client(a.cookie);
    apiB = client(b.cookie);
    const created = await apiA.environments.create.mutate({ teamId: a.team.id, name: 'sums', from: { template: 'math' } });
    if (!created.ok) throw new Error('not created');
    math = created;
    pkg = await apiA.environments.exportPackage.query({ teamId: a.team.id, versionId: math.versionId });
  });

  it('exports a version with its README, tests and datasets, and imports into another team with the same content hash and dry run', async () => {
    const source = await apiA.environments.version.query({ teamId: a.team.id, versionId: math.versionId });
    expect(pkg).toMatchObject({ format: 'whetstone-environment', formatVersion: 1, name: 'sums', contentHash: source.contentHash, entry: 'env.ts', manifest: source.manifest });
    expect(pkg.files).toEqual(source.files);
    expect(pkg.files).toHaveProperty(['README.md']);
    expect(pkg.files).toHaveProperty(['tests.ts']);
    expect(pkg.datasets.map((d) => [d.split, d.file])).toEqual([
      ['train', 'data/train.jsonl'],
      ['heldOut', 'data/held-out.jsonl'],
    ]);
    // Through JSON, as a file would carry it.
    const imported = await apiB.environments.importPackage.mutate({ teamId: b.team.id, package: JSON.parse(JSON.stringify(pkg)) as EnvironmentPackage });
    expect(imported).toMatchObject({ ok: true, created: true, version: 1, name: 'sums', contentHash: source.contentHash, keptContentHash: true });
    expect(imported.datasets).toEqual([
      { name: 'sums/data/train.jsonl', version: 1 },
      { name: 'sums/data/held-out.jsonl', version: 1 },
    ]);
    const copy = await apiB.environments.version.query({ teamId: b.team.id, versionId: imported.versionId });
    expect(copy.contentHash).toBe(source.contentHash);
    expect(copy.files).toEqual(source.files);
    // The same rows, so the same dry run.
    const statistics = (v: unknown) => {
      const r = v as DryRunReport;
      return { ok: r.ok, episodes: r.episodes, endReasons: r.endReasons, lengths: r.lengths, rewards: r.rewards, tests: r.tests.map((t) => [t.name, t.pass]) };
    };
    expect(statistics(copy.validation)).toEqual(statistics(source.validation));
    expect(statistics(copy.validation)).toMatchObject({ ok: true, episodes: 8 });
    const datasets = await apiB.environments.datasets.query({ teamId: b.team.id, versionId: imported.versionId });
    expect(datasets.dryRun).toMatchObject({ name: 'sums/data/train.jsonl', version: 1 });

    // Again: the version there answers, nothing new.
    expect(await apiB.environments.importPackage.mutate({ teamId: b.team.id, package: pkg })).toMatchObject({ created: false, versionId: imported.versionId });
    // Under another name it is other content (the manifest names it), and says so.
    const renamed = await apiB.environments.importPackage.mutate({ teamId: b.team.id, package: pkg, name: 'sums-two' });
    expect(renamed).toMatchObject({ ok: true, created: true, name: 'sums-two', keptContentHash: false, datasets: [{ name: 'sums-two/data/train.jsonl' }, { name: 'sums-two/data/held-out.jsonl' }] });
  });

  it('refuses a package changed after export, one of a newer format, or not a package at all, storing nothing', async () => {
    const before = await s.t.db.environmentVersion.count();
    const edited = { ...pkg, files: { ...pkg.files, 'env.ts': `${pkg.files['env.ts']}\n// edited\n` } };
    await expect(apiB.environments.importPackage.mutate({ teamId: b.team.id, package: edited, name: 'edited' })).rejects.toThrow(
      /Not imported: its content hash does not match its files \(declared [0-9a-f]{12}…, computed [0-9a-f]{12}…\): the package was changed after it was exported/,
    );
    const rows = { ...pkg, datasets: pkg.datasets.map((d) => (d.split === 'train' ? { ...d, text: `${d.text}{"prompt":"1+1","answer":"3"}\n` } : d)) };
    await expect(apiB.environments.importPackage.mutate({ teamId: b.team.id, package: rows, name: 'rows' })).rejects.toThrow(
      'Not imported: dataset data/train.jsonl: its content hash does not match its rows: the package was changed after it was exported',
    );
    await expect(apiB.environments.importPackage.mutate({ teamId: b.team.id, package: { ...pkg, formatVersion: 2 }, name: 'newer' })).rejects.toThrow(
      'Not imported: the package is format version 2, and this Whetstone reads up to version 1: upgrade Whetstone to import it',
    );
    await expect(apiB.environments.importPackage.mutate({ teamId: b.team.id, package: { ...pkg, format: 'zip' as 'whetstone-environment' } })).rejects.toThrow(
      /not a Whetstone environment package: its \\?"format\\?" must be/,
    );
    expect(await s.t.db.environmentVersion.count()).toBe(before);
    expect(await s.t.db.environment.count({ where: { teamId: b.team.id, name: { in: ['edited', 'rows', 'newer'] } } })).toBe(0);
  });

  it('a published version is in the gallery for every user, imports into their team, and counts the runs of every team on it', async () => {
    // A member cannot publish; an admin (here the owner) can; the gallery shows it to team B.
    const member = await addMember(s.server.url, s.t.db, a.team.id, 'MEMBER');
    await expect(client(member.cookie).environments.publish.mutate({ teamId: a.team.id, versionId: math.versionId, published: true })).rejects.toMatchObject({ data: { code: 'FORBIDDEN' } });
    expect(await apiB.gallery.list.query({})).toEqual([]);
    await apiA.environments.publish.mutate({ teamId: a.team.id, versionId: math.versionId, published: true });
    const [entry] = await apiB.gallery.list.query({});
    expect(entry).toMatchObject({ environmentId: math.environmentId, name: 'sums', team: a.team.name, kind: 'single-turn', publishedVersions: 1, latest: { versionId: math.versionId, version: 1 } });
    expect(await apiB.gallery.list.query({ search: 'SUM' })).toHaveLength(1);
    expect(await apiB.gallery.list.query({ search: 'gomoku' })).toHaveLength(0);
    const detail = await apiB.gallery.entry.query({ environmentId: math.environmentId });
    expect(detail.readme).toBe(pkg.files['README.md']);
    expect(detail.versions).toMatchObject([{ versionId: math.versionId, contentHash: pkg.contentHash, files: Object.keys(pkg.files).sort(), runs: 0, teams: 0 }]);

    // Imported from the gallery into team B (already there from the package: the same version answers).
    const fromGallery = await apiB.gallery.import.mutate({ teamId: b.team.id, versionId: math.versionId, name: 'sums-gallery' });
    expect(fromGallery).toMatchObject({ ok: true, created: true, name: 'sums-gallery' });
    // Only what was published travels: the train rows its dry run read, not the held-out rows.
    expect(fromGallery.datasets).toEqual([{ name: 'sums-gallery/data/train.jsonl', version: 1 }]);

    // A run in team B on its copy of the same content counts for the published version.
    const copy = await s.t.db.environmentVersion.findFirstOrThrow({ where: { contentHash: pkg.contentHash, environment: { teamId: b.team.id } } });
    // (As `whetstone run` submits it: the job's config names the version; no experiment.)
    await s.t.db.job.create({ data: { teamId: b.team.id, ownerId: b.user.id, kind: 'TRAIN', config: { environmentVersionId: copy.id } } });
    expect((await apiB.gallery.entry.query({ environmentId: math.environmentId })).versions[0]).toMatchObject({ runs: 1, teams: 1 });
    expect((await apiB.gallery.list.query({}))[0].runs).toBe(1);

    // Taken back: gone from the gallery, and not importable by its id.
    await apiA.environments.publish.mutate({ teamId: a.team.id, versionId: math.versionId, published: false });
    expect(await apiB.gallery.list.query({})).toEqual([]);
    await expect(apiB.gallery.entry.query({ environmentId: math.environmentId })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    await expect(apiB.gallery.import.mutate({ teamId: b.team.id, versionId: math.versionId })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    // A team's unpublished version is not exportable by another team either.
    await expect(apiB.environments.exportPackage.query({ teamId: b.team.id, versionId: math.versionId })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
  });
});
