import { describe, expect, it } from 'vitest';
import { createUserWithTeam, useTestServer } from '../test-support/test-server';
import { createSignInLink } from '../auth/session';
import { transformer } from '../../sdk/transformer';
import { storedJson } from '../db/stored-json';

/** A tRPC query over plain HTTP, as the browser sends it (superjson-wrapped input). */
async function trpcGet(base: string, path: string, input: unknown, cookie?: string) {
  const qs = input === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify({ json: input }))}`;
  const res = await fetch(`${base}/api/trpc/${path}${qs}`, { headers: cookie ? { cookie } : {} });
  return { status: res.status, body: (await res.json()) as any };
}

describe('HTTP API', () => {
  const ctx = useTestServer();

  it('reports health: database up, migrations applied, workers online, uptime', async () => {
    const res = await fetch(`${ctx.server.url}/api/health`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({
      status: 'ok',
      version: expect.any(String),
      database: { reachable: true },
      migrations: { pending: 0 },
      workers: { online: 0 },
      uptimeSeconds: expect.any(Number),
    });
    expect(body.migrations.applied).toBeGreaterThan(0);
  });

  it('counts only workers with a recent heartbeat as online', async () => {
    const base = { hostname: 'h', backend: 'cpu', version: '1', credentialHash: '' };
    await ctx.t.db.worker.create({ data: { ...base, name: 'fresh', credentialHash: 'a' } });
    await ctx.t.db.worker.create({ data: { ...base, name: 'stale', credentialHash: 'b', lastHeartbeatAt: new Date(Date.now() - 120_000) } });
    const body = await (await fetch(`${ctx.server.url}/api/health`)).json();
    expect(body.workers.online).toBe(1);
    await ctx.t.db.worker.deleteMany();
  });

  it('answers input that fails validation with BAD_REQUEST and the zod issues', async () => {
    const { cookie } = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const res = await trpcGet(ctx.server.url, 'environments.list', { teamId: 42 }, cookie);
    expect(res.status).toBe(400);
    expect(res.body.error.json.data.code).toBe('BAD_REQUEST');
    expect(res.body.error.json.data.issues[0]).toMatchObject({ path: ['teamId'], code: 'invalid_type' });
    expect(JSON.stringify(res.body)).not.toMatch(/stack|at .*\.ts/);
  });

  it('serves user data with any key, __proto__ and constructor included, never a 500', async () => {
    const { cookie, team } = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const info = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": 1}, "score": 2}');
    const env = await ctx.t.db.environment.create({ data: { teamId: team.id, name: 'keys' } });
    const version = await ctx.t.db.environmentVersion.create({ data: { environmentId: env.id, version: 1, contentHash: 'keys-1', files: {}, entry: 'env.ts', manifest: {} } });
    // storedJson: Prisma's own writer would drop the own "__proto__" key (server/db/stored-json.ts).
    await ctx.t.db.environmentVersion.update({ where: { id: version.id }, data: { validation: storedJson({ transcripts: [{ info }] }) } });
    const res = await trpcGet(ctx.server.url, 'environments.version', { teamId: team.id, versionId: version.id }, cookie);
    expect(res.status).toBe(200);
    const read = transformer.deserialize(res.body.result.data) as { validation: { transcripts: Array<{ info: object }> } };
    const served = read.validation.transcripts[0].info as Record<string, unknown>;
    expect(Object.keys(served).sort()).toEqual(['__proto__', 'constructor', 'score']);
    expect(Object.getOwnPropertyDescriptor(served, '__proto__')?.value).toEqual({ polluted: true });
    expect(served.constructor).toEqual({ prototype: 1 });
    expect(Object.getPrototypeOf(read.validation.transcripts[0].info)).toBe(Object.prototype);
  });

  it('refuses oversized bodies with 413, not a 500', async () => {
    const { cookie } = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const post = (name: string) =>
      fetch(`${ctx.server.url}/api/trpc/account.updateProfile`, {
        method: 'POST',
        headers: { cookie, origin: ctx.server.url, 'content-type': 'application/json' },
        body: JSON.stringify({ json: { name } }),
      });
    expect((await post('x'.repeat(17_000_000))).status).toBe(413);
    expect((await post('x'.repeat(101))).status).toBe(400);
    expect((await post('Ada')).status).toBe(200);
  });

  it('answers an unknown procedure and an unknown API route with 404', async () => {
    expect((await trpcGet(ctx.server.url, 'nope.nothing', undefined)).status).toBe(404);
    const res = await fetch(`${ctx.server.url}/api/nothing-here`);
    expect(res.status).toBe(404);
  });

  it('requires a session for user and team procedures', async () => {
    const { team } = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const res = await trpcGet(ctx.server.url, 'environments.list', { teamId: team.id });
    expect(res.status).toBe(401);
    expect((await trpcGet(ctx.server.url, 'account.me', undefined)).body.result.data.json).toBeNull();
  });

  it('scopes team data to members: another team is NOT_FOUND, its rows never appear', async () => {
    const a = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const b = await createUserWithTeam(ctx.server.url, ctx.t.db);
    await ctx.t.db.environment.create({ data: { teamId: b.team.id, name: 'secret-env' } });
    await ctx.t.db.environment.create({ data: { teamId: a.team.id, name: 'my-env' } });
    const mine = await trpcGet(ctx.server.url, 'environments.list', { teamId: a.team.id }, a.cookie);
    expect(mine.body.result.data.json.map((e: { name: string }) => e.name)).toEqual(['my-env']);
    const theirs = await trpcGet(ctx.server.url, 'environments.list', { teamId: b.team.id }, a.cookie);
    expect(theirs.status).toBe(404);
    expect(JSON.stringify(theirs.body)).not.toContain('secret-env');
  });

  it('signs in once with a local sign-in link, then the link is spent', async () => {
    const { user } = await createUserWithTeam(ctx.server.url, ctx.t.db);
    const link = await createSignInLink(ctx.t.db, user.id, ctx.server.url);
    const first = await fetch(link, { redirect: 'manual' });
    expect(first.status).toBe(302);
    const cookie = first.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    const me = await trpcGet(ctx.server.url, 'account.me', undefined, cookie.split(';')[0]);
    expect(me.body.result.data.json.user.id).toBe(user.id);
    const again = await fetch(link, { redirect: 'manual' });
    expect(again.status).toBe(302);
    expect(again.headers.get('location')).toBe('/sign-in?error=link');
    expect(again.headers.get('set-cookie')).toBeNull();
    const stored = await ctx.t.db.verification.findMany();
    expect(stored.every((v) => !link.includes(v.value))).toBe(true);
  });

  it('serves the page layer last, and says "starting" until it is ready', async () => {
    const res = await fetch(`${ctx.server.url}/`);
    expect(res.status).toBe(503);
    expect(await res.text()).toMatch(/starting/);
  });
});
