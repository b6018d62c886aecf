/**
 * The editor's environment procedures over tRPC against a real server, PostgreSQL and dry-run
 * pool: new environments from a template, blank or a version; saves based on an older version
 * answered as conflicts; the datasets a data-dependent environment's dry run reads.
 */
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTemplate, TEMPLATE_NAMES } from '../../env-templates/load-template';
import { transformer } from '../../sdk/transformer';
import type { AppRouter } from './root';
import { addMember, createUserWithTeam, useTestServer } from '../test-support/test-server';

describe('environments for the editor', () => {
  const s = useTestServer();
  let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
  let teamId: string;
  let api: ReturnType<typeof client>;
  const client = (cookie: string) =>
    createTRPCClient<AppRouter>({ links: [httpLink({ url: `${s.server.url}/api/trpc`, transformer, headers: () => ({ cookie, origin: s.server.url }) })] });

  beforeAll(async () => {
    owner = await createUserWithTeam(s.server.url, s.t.db);
    teamId = owner.team.id;
    api = client(owner.cookie);
  });

  it('creates an environment from a template and from blank, each with a first version that passed its dry run', async () => {
    const fromBandit = await api.environments.create.mutate({ teamId, name: 'my-bandit', from: { template: 'bandit' } });
    expect(fromBandit).toMatchObject({ ok: true, version: 1, created: true, validation: { ok: true }, conflict: null });
    const version = await api.environments.version.query({ teamId, versionId: fromBandit.versionId });
    expect(version).toMatchObject({ validationStatus: 'VALID', entry: 'env.ts', manifest: { name: 'my-bandit', kind: 'single-turn' }, createdBy: { id: owner.user.id } });
    // The template's README comes along with its code, to be edited in the editor.
    expect(Object.keys(version.files as object).sort()).toEqual(['README.md', 'env.ts', 'tests.ts']);
    expect((version.files as Record<string, string>)['README.md']).toBe(loadTemplate('bandit').readme);

    const blank = await api.environments.create.mutate({ teamId, name: 'scratch', description: 'mine', from: { blank: true } });
    expect(blank).toMatchObject({ ok: true, version: 1, validation: { ok: true } });
    const env = await api.environments.get.query({ teamId, environmentId: blank.environmentId });
    expect(env).toMatchObject({ name: 'scratch', description: 'mine', versions: [{ version: 1, validationStatus: 'VALID', createdBy: { id: owner.user.id } }] });
    expect((await api.environments.version.query({ teamId, versionId: blank.versionId })).files).toEqual({ ...loadTemplate('blank').source.files, 'README.md': loadTemplate('blank').readme });

    // A name is the team's once.
    await expect(api.environments.create.mutate({ teamId, name: 'scratch', from: { template: 'bandit' } })).rejects.toMatchObject({
      data: { code: 'CONFLICT' },
      message: 'name: an environment named scratch exists in this team; open it, or choose another name',
    });
    await expect(api.environments.create.mutate({ teamId, name: 'other', from: { template: 'nope' as 'bandit' } })).rejects.toMatchObject({ data: { code: 'BAD_REQUEST' } });
  });

  it.each(TEMPLATE_NAMES.filter((name) => name !== 'bandit'))('a new environment from the %s template has its README, next to its code', async (name) => {
    const created = await api.environments.create.mutate({ teamId, name: `readme-${name}`, from: { template: name } });
    if (!created.ok) throw new Error(`not created: ${JSON.stringify(created)}`);
    const { files } = await api.environments.version.query({ teamId, versionId: created.versionId });
    const template = loadTemplate(name);
    expect(template.readme).toMatch(/^## Try it in the play console$/m);
    expect(files).toEqual({ ...template.source.files, 'README.md': template.readme });
  });

  it('a data-dependent copy brings its datasets along, dry-runs on them, and says which it read', async () => {
    const math = await api.environments.create.mutate({ teamId, name: 'sums', from: { template: 'math' } });
    expect(math).toMatchObject({ ok: true, validation: { ok: true } });
    const datasets = await api.environments.datasets.query({ teamId, versionId: math.versionId });
    const train = loadTemplate('math').datasetFiles['data/train.jsonl'];
    expect(datasets.splits).toMatchObject([
      { split: 'train', file: 'data/train.jsonl', name: 'sums/data/train.jsonl', latest: { version: 1, rowCount: train.trim().split('\n').length } },
      { split: 'heldOut', file: 'data/held-out.jsonl', name: 'sums/data/held-out.jsonl', latest: { version: 1 } },
    ]);
    expect(datasets.dryRun).toMatchObject({ versionId: datasets.splits[0].latest!.id, name: 'sums/data/train.jsonl' });
    // The editor previews the rows of the dataset its dry run read.
    const page = await api.datasets.rows.query({ teamId, versionId: datasets.dryRun!.versionId, limit: 2 });
    expect(page.rows).toEqual(train.trim().split('\n').slice(0, 2).map((line) => JSON.parse(line)));

    // A copy of that version, and a save without dataset text, both read the team's dataset.
    const copy = await api.environments.create.mutate({ teamId, name: 'sums-copy', from: { versionId: math.versionId } });
    expect(copy).toMatchObject({ ok: true, validation: { ok: true } });
    expect((await api.environments.datasets.query({ teamId, versionId: copy.versionId })).dryRun).toMatchObject({ name: 'sums-copy/data/train.jsonl' });
    const stored = await api.environments.version.query({ teamId, versionId: math.versionId });
    const files = { ...(stored.files as Record<string, string>), 'env.ts': `${(stored.files as Record<string, string>)['env.ts']}\n// edited\n` };
    const saved = await api.environments.saveVersion.mutate({ teamId, name: 'sums', entry: 'env.ts', files, manifest: stored.manifest as Record<string, unknown> });
    expect(saved).toMatchObject({ version: 2, validation: { ok: true } });

    const stranger = await createUserWithTeam(s.server.url, s.t.db);
    await expect(client(stranger.cookie).environments.create.mutate({ teamId: stranger.team.id, name: 'stolen', from: { versionId: math.versionId } })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    await expect(client(stranger.cookie).environments.datasets.query({ teamId: stranger.team.id, versionId: math.versionId })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    expect(await s.t.db.environment.count({ where: { teamId: stranger.team.id } })).toBe(0);
  });

  it('a save based on an older version stands, and says who saved the latest', async () => {
    const created = await api.environments.create.mutate({ teamId, name: 'shared', from: { template: 'bandit' } });
    const base = await api.environments.version.query({ teamId, versionId: created.versionId });
    const edit = (comment: string) => ({
      teamId, name: 'shared', entry: base.entry, manifest: base.manifest as Record<string, unknown>, baseVersionId: created.versionId,
      files: { 'env.ts': `${(base.files as Record<string, string>)['env.ts']}\n// ${comment}\n` },
    });
    // Another member saves first, from the same base: no conflict for them.
    const colleague = await addMember(s.server.url, s.t.db, teamId, 'MEMBER');
    const theirs = await client(colleague.cookie).environments.saveVersion.mutate(edit('theirs'));
    expect(theirs).toMatchObject({ version: 2, conflict: null });
    // This tab's save, from version 1, is version 3 and carries the conflict.
    const mine = await api.environments.saveVersion.mutate(edit('mine'));
    expect(mine).toMatchObject({ version: 3, created: true, conflict: { latestVersion: 2, latestVersionId: theirs.versionId, createdBy: { id: colleague.user.id, name: colleague.user.name } } });
    // Saving on top of the latest is no conflict; content saved before answers its version.
    expect(await api.environments.saveVersion.mutate({ ...edit('more'), baseVersionId: mine.versionId })).toMatchObject({ version: 4, conflict: null });
    expect(await api.environments.saveVersion.mutate(edit('theirs'))).toMatchObject({ version: 2, created: false, conflict: { latestVersion: 4 } });
    // Without a base, as the CLI saves, nothing is compared.
    const { baseVersionId: _base, ...noBase } = edit('cli');
    expect(await api.environments.saveVersion.mutate(noBase)).toMatchObject({ version: 5, conflict: null });
  });

  it('refusals say what to fix', async () => {
    const error = await api.environments.create.mutate({ teamId, name: 'Bad Name', from: { blank: true } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect((error as TRPCClientError<AppRouter>).data?.issues?.[0]).toMatchObject({ path: ['name'], message: 'lower-case letters, digits and dashes' });

    // Files are code (.ts) or Markdown (.md); the entry is code.
    const save = (entry: string, files: Record<string, string>) =>
      api.environments.saveVersion.mutate({ teamId, name: 'files', entry, files, manifest: { ...loadTemplate('bandit').rawManifest, name: 'files' } }).catch((e: unknown) => e as TRPCClientError<AppRouter>);
    const bandit = loadTemplate('bandit').source.files;
    expect(((await save('env.ts', { ...bandit, 'notes.txt': 'x' })) as TRPCClientError<AppRouter>).data?.code).toBe('BAD_REQUEST');
    expect(((await save('README.md', { ...bandit, 'README.md': '# x' })) as TRPCClientError<AppRouter>).message).toContain('a relative path ending in .ts');
    expect(await save('env.ts', { ...bandit, 'README.md': '# Mine\n\n<script>kept as text</script>' })).toMatchObject({ ok: true, version: 1, validation: { ok: true } });
  });
});
