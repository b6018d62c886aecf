/**
 * Datasets over tRPC against a real server and PostgreSQL: upload, deduplication by content,
 * every bad line named (structured for the page), the declared row schema enforced, versions,
 * paged previews, who uses each version, team scoping, and an SFT job that names the uploaded version.
 */
import { TRPCClientError } from '@trpc/client';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from './root';
import { loadTemplate } from '../../env-templates/load-template';
import { createUserWithTeam, useTestServer } from '../test-support/test-server';
import { sessionClient } from '../test-support/trpc-client';

const jsonl = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

describe('datasets', () => {
  const s = useTestServer();
  let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
  let api: ReturnType<typeof client>;
  const client = (cookie: string) => sessionClient(s.server.url, cookie);

  beforeAll(async () => {
    owner = await createUserWithTeam(s.server.url, s.t.db);
    api = client(owner.cookie);
  });

  it('stores a version, answers the same content with the same version, and numbers new content', async () => {
    const teamId = owner.team.id;
    const text = jsonl([{ prompt: '1+1=', completion: '2' }, { prompt: '2+2=', completion: '4' }]);
    const first = await api.datasets.upload.mutate({ teamId, name: 'sums/train.jsonl', jsonl: text });
    expect(first).toMatchObject({ version: 1, rowCount: 2, bytes: Buffer.byteLength(text), created: true });
    expect(await api.datasets.upload.mutate({ teamId, name: 'sums/train.jsonl', jsonl: text })).toMatchObject({ versionId: first.versionId, created: false });
    const second = await api.datasets.upload.mutate({ teamId, name: 'sums/train.jsonl', jsonl: text + jsonl([{ prompt: '3+3=', completion: '6' }]) });
    expect(second).toMatchObject({ datasetId: first.datasetId, version: 2, rowCount: 3, created: true });

    const [listed] = (await api.datasets.list.query({ teamId })).filter((d) => d.name === 'sums/train.jsonl');
    expect(listed.latest).toMatchObject({ id: second.versionId, version: 2, rowCount: 3 });
    expect(listed.versionCount).toBe(2);
    expect(listed.versions.map((v) => [v.version, v.rowCount, v.bytes])).toEqual([[2, 3, Buffer.byteLength(text) + Buffer.byteLength(jsonl([{ prompt: '3+3=', completion: '6' }]))], [1, 2, Buffer.byteLength(text)]]);
    expect(listed.versions[0].createdAt).toBeInstanceOf(Date);
    const got = await api.datasets.get.query({ teamId, datasetId: first.datasetId });
    expect(got.versions.map((v) => v.version)).toEqual([2, 1]);
    expect(await api.datasets.rows.query({ teamId, versionId: second.versionId, offset: 1, limit: 1 })).toEqual({ rowCount: 3, offset: 1, rows: [{ prompt: '2+2=', completion: '4' }] });
    expect((await api.datasets.rows.query({ teamId, versionId: second.versionId, limit: 200 })).rows).toHaveLength(3);
    await expect(api.datasets.rows.query({ teamId, versionId: second.versionId, limit: 201 })).rejects.toMatchObject({ data: { code: 'BAD_REQUEST' } });

    // The bytes are in the blob store under the version's key.
    const version = await s.t.db.datasetVersion.findUniqueOrThrow({ where: { id: second.versionId } });
    expect((await s.server.blobs.get(version.storageKey)).toString()).toContain('3+3=');
    const audit = await s.t.db.auditLog.findMany({ where: { teamId, action: 'dataset.uploaded' } });
    expect(audit).toHaveLength(2);

    // An SFT job may name it; the worker gets its storage key with the assignment.
    const job = await api.jobs.submit.mutate({ teamId, kind: 'SFT', config: { datasetVersionId: second.versionId, training: { steps: 5, model: { layers: 1, width: 16, heads: 2, contextLength: 32 } } } });
    expect(job.state).toBe('QUEUED');
  });

  it('names every bad line and stores nothing', async () => {
    const teamId = owner.team.id;
    const bad = ['{"a": 1}', 'not json', '[1, 2]', '{"a": "x"}'].join('\n');
    const rowSchema = { type: 'object' as const, properties: { a: { type: 'number' as const } } };
    await expect(api.datasets.upload.mutate({ teamId, name: 'bad', jsonl: bad, rowSchema })).rejects.toThrow(
      /line 2: not JSON.*line 3: row: expected object.*line 4: row\.a: expected a finite number, got string/,
    );
    await expect(api.datasets.upload.mutate({ teamId, name: 'empty', jsonl: '\n\n' })).rejects.toThrow(/no rows/);
    await expect(api.datasets.upload.mutate({ teamId, name: '../escape', jsonl: '{}' })).rejects.toMatchObject({ data: { code: 'BAD_REQUEST' } });
    await expect(api.datasets.upload.mutate({ teamId, name: 'schema', jsonl: '{}', rowSchema: { type: 'object', properties: { a: { type: 'date' } } } as never })).rejects.toMatchObject({ data: { code: 'BAD_REQUEST' } });
    expect(await s.t.db.dataset.count({ where: { teamId, name: { in: ['bad', 'empty', 'schema'] } } })).toBe(0);
  });

  it('answers a refused upload’s bad lines structured: the first 100, and how many in all', async () => {
    const teamId = owner.team.id;
    const lines = Array.from({ length: 160 }, (_, i) => (i % 16 === 0 ? '{"ok": true}' : `oops ${i}`));
    const error = await api.datasets.upload.mutate({ teamId, name: 'many-bad', jsonl: lines.join('\n') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    const refused = error as TRPCClientError<AppRouter>;
    expect(refused.data?.code).toBe('BAD_REQUEST');
    const bad = lines.flatMap((line, i) => (line.startsWith('oops') ? [i + 1] : []));
    expect(refused.data?.lineProblems?.total).toBe(150);
    expect(refused.data?.lineProblems?.problems.map((p) => p.line)).toEqual(bad.slice(0, 100));
    expect(refused.data?.lineProblems?.problems[0].message).toMatch(/^not JSON: /);
    expect(refused.message).toMatch(/^Dataset not stored: line 2: not JSON: .*; and 140 more\. Fix the lines named and upload again\.$/);
  });

  it('says which environments and jobs use each version', async () => {
    const teamId = owner.team.id;
    const env = await api.environments.create.mutate({ teamId, name: 'adder', from: { template: 'math' } });
    const [dataset] = (await api.datasets.list.query({ teamId })).filter((d) => d.name === 'adder/data/train.jsonl');
    const first = dataset.latest!;
    const train = await api.jobs.submit.mutate({ teamId, kind: 'TRAIN', config: { environmentVersionId: env.versionId, datasetVersionId: first.id, training: { steps: 2 } } });
    const text = loadTemplate('math').datasetFiles['data/train.jsonl'];
    const second = await api.datasets.upload.mutate({ teamId, name: 'adder/data/train.jsonl', jsonl: text + jsonl([{ question: '01+02', answer: 3 }]) });
    const sft = await api.jobs.submit.mutate({ teamId, kind: 'SFT', config: { datasetVersionId: second.versionId, training: { steps: 2 } } });
    await api.jobs.cancel.mutate({ teamId, jobId: sft.id });

    const usage = await api.datasets.usage.query({ teamId, datasetId: dataset.id });
    expect(usage.dataset).toEqual({ id: dataset.id, name: 'adder/data/train.jsonl' });
    expect(usage.environments).toEqual([{ environmentId: env.environmentId, name: 'adder', split: 'train', file: 'data/train.jsonl', latestVersion: { id: env.versionId, version: 1 } }]);
    expect(usage.versions.map((v) => v.version)).toEqual([2, 1]);
    expect(usage.versions[1].dryRuns).toEqual([{ environmentId: env.environmentId, environmentName: 'adder', versionId: env.versionId, version: 1 }]);
    expect(usage.versions[1].jobs).toMatchObject([{ id: train.id, kind: 'TRAIN', state: 'QUEUED', as: 'datasetVersionId', owner: { id: owner.user.id } }]);
    expect(usage.versions[0]).toMatchObject({ dryRuns: [], jobs: [{ id: sft.id, kind: 'SFT', state: 'CANCELLED' }] });
    expect(usage.versions[0].jobs[0].createdAt.getTime()).toBe((await s.t.db.job.findUniqueOrThrow({ where: { id: sft.id } })).createdAt.getTime());

    const stranger = await createUserWithTeam(s.server.url, s.t.db);
    await expect(client(stranger.cookie).datasets.usage.query({ teamId: stranger.team.id, datasetId: dataset.id })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
  });

  it('keeps teams apart and archives', async () => {
    const teamId = owner.team.id;
    const mine = await api.datasets.upload.mutate({ teamId, name: 'private', jsonl: '{"secret": 1}\n' });
    const stranger = await createUserWithTeam(s.server.url, s.t.db);
    const theirs = client(stranger.cookie);
    await expect(theirs.datasets.get.query({ teamId: stranger.team.id, datasetId: mine.datasetId })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    await expect(theirs.datasets.rows.query({ teamId: stranger.team.id, versionId: mine.versionId })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    await expect(theirs.jobs.submit.mutate({ teamId: stranger.team.id, kind: 'SFT', config: { datasetVersionId: mine.versionId } })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    // The same name in another team is another dataset.
    const same = await theirs.datasets.upload.mutate({ teamId: stranger.team.id, name: 'private', jsonl: '{"secret": 1}\n' });
    expect(same.datasetId).not.toBe(mine.datasetId);

    await api.datasets.archive.mutate({ teamId, datasetId: mine.datasetId });
    expect((await api.datasets.list.query({ teamId })).map((d) => d.name)).not.toContain('private');
    expect((await api.datasets.list.query({ teamId, includeArchived: true })).map((d) => d.name)).toContain('private');
    await expect(api.datasets.archive.mutate({ teamId, datasetId: mine.datasetId })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
  });
});
