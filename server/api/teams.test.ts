import { describe, expect, it } from 'vitest';
import { INVITATION_HEADER } from '../auth/invitations';
import { addMember, createUserWithTeam, signUp, useTestServer } from '../test-support/test-server';

type Result = { ok: true; data: any } | { ok: false; code: string; message: string };

function trpc(base: string, cookie: string | undefined) {
  const headers = { origin: base, 'content-type': 'application/json', ...(cookie ? { cookie } : {}) };
  const unwrap = async (res: Response): Promise<Result> => {
    const body = (await res.json()) as any;
    return body.error ? { ok: false, code: body.error.json.data.code, message: body.error.json.message } : { ok: true, data: body.result.data.json };
  };
  return {
    query: async (path: string, input: unknown) =>
      unwrap(await fetch(`${base}/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`, { headers })),
    mutate: async (path: string, input: unknown) =>
      unwrap(await fetch(`${base}/api/trpc/${path}`, { method: 'POST', headers, body: JSON.stringify({ json: input }) })),
  };
}

describe('teams, members and invitations', () => {
  const ctx = useTestServer();

  it('protects the last owner: cannot leave, be demoted or be removed', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const admin = await addMember(ctx.server.url, ctx.t.db, owner.team.id, 'ADMIN');
    const api = trpc(ctx.server.url, owner.cookie);
    const teamId = owner.team.id;
    expect(await api.mutate('members.leave', { teamId })).toMatchObject({ ok: false, code: 'PRECONDITION_FAILED' });
    expect(await api.mutate('members.changeRole', { teamId, userId: owner.user.id, role: 'ADMIN' })).toMatchObject({ ok: false, code: 'PRECONDITION_FAILED' });
    expect(await trpc(ctx.server.url, admin.cookie).mutate('members.remove', { teamId, userId: owner.user.id })).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    // An admin cannot make anyone owner; an owner can hand ownership over and stays as admin.
    expect(await trpc(ctx.server.url, admin.cookie).mutate('members.changeRole', { teamId, userId: admin.user.id, role: 'OWNER' })).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    expect(await api.mutate('members.transferOwnership', { teamId, userId: admin.user.id })).toMatchObject({ ok: true });
    const roles = await ctx.t.db.membership.findMany({ where: { teamId }, select: { userId: true, role: true } });
    expect(roles.find((r) => r.userId === admin.user.id)?.role).toBe('OWNER');
    expect(roles.find((r) => r.userId === owner.user.id)?.role).toBe('ADMIN');
    expect(await api.mutate('members.leave', { teamId })).toMatchObject({ ok: true });
    const audit = await ctx.t.db.auditLog.findMany({ where: { teamId }, select: { action: true } });
    expect(audit.map((a) => a.action)).toEqual(expect.arrayContaining(['team.ownership_transferred', 'member.left']));
  });

  it('removing a member keeps their environments and runs with the team, and ends their keys', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const member = await addMember(ctx.server.url, ctx.t.db, owner.team.id, 'MEMBER');
    const teamId = owner.team.id;
    const memberApi = trpc(ctx.server.url, member.cookie);
    const env = await ctx.t.db.environment.create({
      data: { teamId, name: 'member-env', versions: { create: { version: 1, contentHash: 'h', files: { 'env.ts': 'x' }, entry: 'env.ts', manifest: {}, createdById: member.user.id } } },
      include: { versions: true },
    });
    const job = await memberApi.mutate('jobs.submit', { teamId, kind: 'TRAIN', config: { environmentVersionId: env.versions[0].id } });
    expect(job.ok).toBe(true);
    const key = await memberApi.mutate('apiKeys.create', { teamId, name: 'k' });
    expect(await trpc(ctx.server.url, owner.cookie).mutate('members.remove', { teamId, userId: member.user.id })).toMatchObject({ ok: true });
    expect(await ctx.t.db.job.count({ where: { teamId, ownerId: member.user.id } })).toBe(1);
    expect(await ctx.t.db.environment.count({ where: { teamId, name: 'member-env' } })).toBe(1);
    expect(await memberApi.query('jobs.list', { teamId })).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    const keyRow = await ctx.t.db.apiKey.findUniqueOrThrow({ where: { id: (key as { data: { id: string } }).data.id } });
    expect(keyRow.revokedAt).not.toBeNull();
  });

  it('invitations: single use, expiring, revocable, never above the inviter, with clear errors and audit', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const admin = await addMember(ctx.server.url, ctx.t.db, owner.team.id, 'ADMIN');
    const teamId = owner.team.id;
    const adminApi = trpc(ctx.server.url, admin.cookie);
    expect(await adminApi.mutate('invitations.create', { teamId, role: 'OWNER' })).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    const created = await adminApi.mutate('invitations.create', { teamId, role: 'MEMBER' });
    if (!created.ok) throw new Error(created.message);
    const token = created.data.link.split('/invite/')[1];
    expect(created.data.link).toBe(`${ctx.server.url}/invite/${token}`);
    expect(await ctx.t.db.invitation.count({ where: { tokenHash: token } })).toBe(0); // only a hash is stored

    // Sign up through the invitation: no team of one's own, then accept.
    const invitee = await signUp(ctx.server.url, ctx.t.db, { headers: { [INVITATION_HEADER]: token } });
    expect(invitee.team).toBeNull();
    const inviteeApi = trpc(ctx.server.url, invitee.cookie);
    expect(await inviteeApi.query('invitations.preview', { token })).toMatchObject({ ok: true, data: { role: 'MEMBER' } });
    expect(await inviteeApi.mutate('invitations.accept', { token })).toMatchObject({ ok: true, data: { teamId } });
    expect(await inviteeApi.query('members.list', { teamId })).toMatchObject({ ok: true });

    // Reused, revoked and expired links fail with a message that says which.
    const other = await signUp(ctx.server.url, ctx.t.db);
    const otherApi = trpc(ctx.server.url, other.cookie);
    expect(await otherApi.mutate('invitations.accept', { token })).toMatchObject({ ok: false, code: 'BAD_REQUEST', message: expect.stringMatching(/already used/) });
    const second = await adminApi.mutate('invitations.create', { teamId, role: 'VIEWER' });
    if (!second.ok) throw new Error(second.message);
    await adminApi.mutate('invitations.revoke', { teamId, invitationId: second.data.id });
    expect(await otherApi.mutate('invitations.accept', { token: second.data.link.split('/invite/')[1] })).toMatchObject({ ok: false, message: expect.stringMatching(/revoked/) });
    const third = await adminApi.mutate('invitations.create', { teamId, role: 'VIEWER', expiresInHours: 1 });
    if (!third.ok) throw new Error(third.message);
    await ctx.t.db.invitation.update({ where: { id: third.data.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await otherApi.mutate('invitations.accept', { token: third.data.link.split('/invite/')[1] })).toMatchObject({ ok: false, message: expect.stringMatching(/expired/) });
    expect(await ctx.t.db.membership.count({ where: { teamId, userId: other.user.id } })).toBe(0);
    const rejected = await ctx.t.db.auditLog.count({ where: { actorUserId: other.user.id, action: 'invitation.rejected' } });
    expect(rejected).toBe(3);
  });

  it('an invitation for an e-mail admits only that e-mail', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const created = await trpc(ctx.server.url, owner.cookie).mutate('invitations.create', { teamId: owner.team.id, email: 'only-me@example.test' });
    if (!created.ok) throw new Error(created.message);
    const token = created.data.link.split('/invite/')[1];
    await expect(signUp(ctx.server.url, ctx.t.db, { headers: { [INVITATION_HEADER]: token } })).rejects.toThrow(/another e-mail/);
    const right = await signUp(ctx.server.url, ctx.t.db, { email: 'only-me@example.test', headers: { [INVITATION_HEADER]: token } });
    expect(await trpc(ctx.server.url, right.cookie).mutate('invitations.accept', { token })).toMatchObject({ ok: true });
  });

  it('quotas: admins change them (audited), members may not ask above the priority limit, the queue limit holds', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const member = await addMember(ctx.server.url, ctx.t.db, owner.team.id, 'MEMBER');
    const teamId = owner.team.id;
    const ownerApi = trpc(ctx.server.url, owner.cookie);
    expect(await ownerApi.mutate('quotas.update', { teamId, maxConcurrentDevices: 2, maxQueuedJobs: 1, maxPriority: 10 })).toMatchObject({ ok: true });
    const memberApi = trpc(ctx.server.url, member.cookie);
    const env = await ctx.t.db.environment.create({
      data: { teamId, name: 'quota-env', versions: { create: { version: 1, contentHash: 'h', files: { 'env.ts': 'x' }, entry: 'env.ts', manifest: {} } } },
      include: { versions: true },
    });
    const config = { environmentVersionId: env.versions[0].id };
    expect(await memberApi.mutate('jobs.submit', { teamId, kind: 'TRAIN', priority: 11, config })).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    expect(await memberApi.mutate('jobs.submit', { teamId, kind: 'TRAIN', config: {} })).toMatchObject({ ok: false, code: 'BAD_REQUEST', message: expect.stringMatching(/config.environmentVersionId/) });
    expect(await memberApi.mutate('jobs.submit', { teamId, kind: 'TRAIN', config: { environmentVersionId: 'someone-elses' } })).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    expect(await memberApi.mutate('jobs.submit', { teamId, kind: 'TRAIN', priority: 10, config })).toMatchObject({ ok: true });
    expect(await memberApi.mutate('jobs.submit', { teamId, kind: 'TRAIN', config })).toMatchObject({ ok: false, code: 'TOO_MANY_REQUESTS', message: expect.stringMatching(/queue is full/) });
    expect(await memberApi.query('quotas.get', { teamId })).toMatchObject({ ok: true, data: { maxQueuedJobs: 1, usage: { queuedJobs: 1 } } });
    expect(await ownerApi.mutate('quotas.update', { teamId, maxConcurrentDevices: -1, maxQueuedJobs: 1, maxPriority: 10 })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    const entry = await ctx.t.db.auditLog.findFirstOrThrow({ where: { teamId, action: 'quota.changed' } });
    expect(entry.details).toMatchObject({ to: { maxQueuedJobs: 1 } });
  });

  it('the audit log pages newest first', async () => {
    const owner = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const teamId = owner.team.id;
    const api = trpc(ctx.server.url, owner.cookie);
    for (let i = 0; i < 3; i++) await api.mutate('teams.rename', { teamId, name: `Name ${i}` });
    const page1 = await api.query('audit.list', { teamId, limit: 2 });
    if (!page1.ok) throw new Error(page1.message);
    expect(page1.data.entries.map((e: any) => e.details.name)).toEqual(['Name 2', 'Name 1']);
    const page2 = await api.query('audit.list', { teamId, limit: 2, cursor: page1.data.nextCursor });
    if (!page2.ok) throw new Error(page2.message);
    expect(page2.data.entries[0].details.name).toBe('Name 0');
  });
});
