import { TRPCClientError } from '@trpc/client';
import { describe, expect, it } from 'vitest';
import { startHttpBandit } from '../../gpu-worker/test-support/http-bandit-server';
import { addMember, createUserWithTeam, useTestServer } from '../test-support/test-server';
import { sessionClient } from '../test-support/trpc-client';
import { teamSecretValues } from '../secrets/team-secrets';
import { secretsKey } from '../secrets/secret-box';

const VALUE = 'sk-very-secret-value-0123456789';
// The test server's installation secret (test-support/test-server.ts).
const key = secretsKey('test-secret-test-secret-test-secret-0123');

async function refusal(work: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await work;
  } catch (e) {
    if (e instanceof TRPCClientError) return { code: (e.data as { code: string }).code, message: e.message };
    throw e;
  }
  throw new Error('expected a refusal');
}

describe('team secrets', () => {
  const ctx = useTestServer();

  it('an admin sets, replaces, lists and deletes; the value is stored encrypted and never returned', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const admin = await addMember(ctx.server.url, ctx.t.db, owner.team.id, 'ADMIN');
    const api = sessionClient(ctx.server.url, admin.cookie);
    const teamId = owner.team.id;

    const created = await api.secrets.set.mutate({ teamId, name: 'API_TOKEN', value: VALUE });
    expect(created).toEqual({ name: 'API_TOKEN', created: true });
    expect(JSON.stringify(created)).not.toContain(VALUE);
    const row = await ctx.t.db.teamSecret.findUniqueOrThrow({ where: { teamId_name: { teamId, name: 'API_TOKEN' } } });
    expect(row.ciphertext).not.toContain(VALUE);
    expect(row.ciphertext).not.toContain(Buffer.from(VALUE).toString('base64url').slice(0, 12));

    const listed = await api.secrets.list.query({ teamId });
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ name: 'API_TOKEN', setBy: { id: admin.user.id } });
    expect(JSON.stringify(listed)).not.toContain(VALUE);
    expect(Object.keys(listed[0]).sort()).toEqual(['createdAt', 'id', 'name', 'setBy', 'updatedAt']);

    expect(await api.secrets.set.mutate({ teamId, name: 'API_TOKEN', value: 'second-value-9876' })).toEqual({ name: 'API_TOKEN', created: false });
    expect(await teamSecretValues(ctx.t.db, key, teamId, ['API_TOKEN', 'NOT_SET'])).toEqual({ API_TOKEN: 'second-value-9876' });

    await api.secrets.delete.mutate({ teamId, name: 'API_TOKEN' });
    expect(await api.secrets.list.query({ teamId })).toEqual([]);
    expect(await refusal(api.secrets.delete.mutate({ teamId, name: 'API_TOKEN' }))).toMatchObject({ code: 'NOT_FOUND', message: 'No secret API_TOKEN in this team' });

    // Audited by name, never with the value.
    const audit = await ctx.t.db.auditLog.findMany({ where: { teamId, targetType: 'secret' }, orderBy: { at: 'asc' }, select: { action: true, details: true } });
    expect(audit.map((a) => a.action)).toEqual(['secret.created', 'secret.replaced', 'secret.deleted']);
    expect(JSON.stringify(audit)).not.toContain(VALUE);
    expect(JSON.stringify(audit)).not.toContain('second-value-9876');
  });

  it('members and viewers read names only; they cannot set or delete', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const teamId = owner.team.id;
    await sessionClient(ctx.server.url, owner.cookie).secrets.set.mutate({ teamId, name: 'TOKEN', value: VALUE });
    for (const role of ['MEMBER', 'VIEWER'] as const) {
      const api = sessionClient(ctx.server.url, (await addMember(ctx.server.url, ctx.t.db, teamId, role)).cookie);
      expect((await api.secrets.list.query({ teamId })).map((s) => s.name)).toEqual(['TOKEN']);
      expect(await refusal(api.secrets.set.mutate({ teamId, name: 'TOKEN', value: 'mine' }))).toMatchObject({ code: 'FORBIDDEN' });
      expect(await refusal(api.secrets.delete.mutate({ teamId, name: 'TOKEN' }))).toMatchObject({ code: 'FORBIDDEN' });
    }
    expect(await teamSecretValues(ctx.t.db, key, teamId, ['TOKEN'])).toEqual({ TOKEN: VALUE });
  });

  it("keeps teams apart: another team's admin neither sees nor changes them, and the same name is its own", async () => {
    const a = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const b = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const apiA = sessionClient(ctx.server.url, a.cookie);
    const apiB = sessionClient(ctx.server.url, b.cookie);
    await apiA.secrets.set.mutate({ teamId: a.team.id, name: 'TOKEN', value: 'team-a-value' });
    expect(await refusal(apiB.secrets.list.query({ teamId: a.team.id }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await refusal(apiB.secrets.set.mutate({ teamId: a.team.id, name: 'TOKEN', value: 'x' }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await refusal(apiB.secrets.delete.mutate({ teamId: a.team.id, name: 'TOKEN' }))).toMatchObject({ code: 'NOT_FOUND' });
    await apiB.secrets.set.mutate({ teamId: b.team.id, name: 'TOKEN', value: 'team-b-value' });
    expect(await apiB.secrets.list.query({ teamId: b.team.id })).toHaveLength(1);
    expect(await teamSecretValues(ctx.t.db, key, a.team.id, ['TOKEN'])).toEqual({ TOKEN: 'team-a-value' });
    expect(await teamSecretValues(ctx.t.db, key, b.team.id, ['TOKEN'])).toEqual({ TOKEN: 'team-b-value' });
  });

  it('validates names and values', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const api = sessionClient(ctx.server.url, owner.cookie);
    const teamId = owner.team.id;
    for (const name of ['lower', '1ABC', 'A-B', 'A'.repeat(65), '']) {
      expect(await refusal(api.secrets.set.mutate({ teamId, name, value: 'v' })), name).toMatchObject({ code: 'BAD_REQUEST' });
    }
    expect(await refusal(api.secrets.set.mutate({ teamId, name: 'EMPTY', value: '' }))).toMatchObject({ code: 'BAD_REQUEST' });
    const tooLong = await refusal(api.secrets.set.mutate({ teamId, name: 'LONG', value: 'x'.repeat(8193) }));
    expect(tooLong.code).toBe('BAD_REQUEST');
    // A refused value is not echoed back.
    expect(tooLong.message).not.toContain('x'.repeat(100));
    expect(await api.secrets.set.mutate({ teamId, name: 'A'.repeat(64), value: 'x'.repeat(8192) })).toMatchObject({ created: true });
  });

  it('an HTTP environment created from answers naming a token secret is dry-run with it (invalid, naming it, until an admin sets it)', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const api = sessionClient(ctx.server.url, owner.cookie);
    const teamId = owner.team.id;
    const guarded = await startHttpBandit({ token: 'answers-token-99' });
    try {
      const http = { urls: [guarded.url], kind: 'single-turn' as const, maxTokens: 2, tokenSecret: 'GAME_TOKEN' };
      const unset = await api.environments.create.mutate({ teamId, name: 'guarded-a', from: { http } });
      expect(unset).toMatchObject({ ok: true, validation: { ok: false, loadError: { message: expect.stringContaining('the team secret GAME_TOKEN, which is not set') } } });
      await api.secrets.set.mutate({ teamId, name: 'GAME_TOKEN', value: 'answers-token-99' });
      const set = await api.environments.create.mutate({ teamId, name: 'guarded-b', from: { http } });
      expect(set).toMatchObject({ ok: true, validation: { ok: true } });
      expect([...guarded.calls.authorizations]).toEqual(['Bearer answers-token-99']);

      // A stored value that no longer decrypts (altered, or another installation secret): the save says so and what to do.
      await ctx.t.db.teamSecret.update({ where: { teamId_name: { teamId, name: 'GAME_TOKEN' } }, data: { ciphertext: 'v1.AAAA.AAAA.AAAA' } });
      expect(await refusal(api.environments.create.mutate({ teamId, name: 'guarded-c', from: { http } }))).toMatchObject({
        code: 'PRECONDITION_FAILED',
        message: expect.stringMatching(/^The team secret GAME_TOKEN cannot be decrypted .*an admin sets it again under the team's Secrets$/),
      });
    } finally {
      await guarded.close();
    }
  });

  it('a member cannot send a team secret to a server the team has not used it with; once an admin has saved that setup, members use it', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const member = await addMember(ctx.server.url, ctx.t.db, owner.team.id, 'MEMBER');
    const admin = sessionClient(ctx.server.url, owner.cookie);
    const api = sessionClient(ctx.server.url, member.cookie);
    const teamId = owner.team.id;
    await admin.secrets.set.mutate({ teamId, name: 'GAME_TOKEN', value: 'vouched-token-42' });
    const guarded = await startHttpBandit({ token: 'vouched-token-42' });
    try {
      const manifest = (urls: string[]) => ({
        name: 'guarded', version: '1.0.0', kind: 'single-turn', limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 2 },
        server: { urls, headers: { Authorization: { secret: 'GAME_TOKEN', prefix: 'Bearer ' } } },
      });
      const elsewhere = manifest(['https://collector.example.com']);
      // The member's own server: a save, a draft played, answers naming the secret, an import — each refused.
      const forbidden = { code: 'FORBIDDEN', message: expect.stringContaining('Only a team admin can send team secrets to servers the team has not used them with: these headers send GAME_TOKEN to https://collector.example.com') };
      expect(await refusal(api.environments.saveVersion.mutate({ teamId, name: 'guarded', entry: 'env.ts', files: {}, manifest: elsewhere }))).toMatchObject(forbidden);
      expect(await refusal(api.play.open.mutate({ teamId, source: { draft: { entry: 'env.ts', files: {}, manifest: elsewhere } } }))).toMatchObject(forbidden);
      expect(await refusal(api.environments.create.mutate({ teamId, name: 'guarded-x', from: { http: { urls: ['https://collector.example.com'], kind: 'single-turn', tokenSecret: 'GAME_TOKEN' } } }))).toMatchObject({ code: 'FORBIDDEN' });
      expect(guarded.calls.authorizations.size).toBe(0);
      // The admin saves the setup with the real server; a member's edit of it (its README) is then theirs to save.
      const vouched = manifest([guarded.url]);
      expect(await admin.environments.saveVersion.mutate({ teamId, name: 'guarded', entry: 'env.ts', files: {}, manifest: vouched })).toMatchObject({ validation: { ok: true } });
      const edited = await api.environments.saveVersion.mutate({ teamId, name: 'guarded', entry: 'env.ts', files: { 'README.md': 'Our game.' }, manifest: vouched });
      expect(edited).toMatchObject({ created: true, version: 2, validation: { ok: true } });
    } finally {
      await guarded.close();
    }
  });
});
