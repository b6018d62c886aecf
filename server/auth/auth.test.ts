import { describe, expect, it } from 'vitest';
import { signUp, useTestServer, TEST_PASSWORD } from '../test-support/test-server';
import { MAX_FAILURES_PER_ACCOUNT } from './throttle';

async function signIn(url: string, email: string, password: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/api/auth/sign-in/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url, ...headers },
    body: JSON.stringify({ email, password }),
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as { message?: string; code?: string } | null, cookie: res.headers.get('set-cookie') };
}

describe('accounts and sessions (better-auth)', () => {
  const ctx = useTestServer();

  it('signs up with a team of its own, stores only a memory-hard hash, and makes the first user installation admin', async () => {
    const first = await signUp(ctx.server.url, ctx.t.db);
    const second = await signUp(ctx.server.url, ctx.t.db);
    expect(first.team).not.toBeNull();
    expect((await ctx.t.db.user.findUniqueOrThrow({ where: { id: first.user.id } })).isInstallationAdmin).toBe(true);
    expect((await ctx.t.db.user.findUniqueOrThrow({ where: { id: second.user.id } })).isInstallationAdmin).toBe(false);
    const account = await ctx.t.db.account.findFirstOrThrow({ where: { userId: first.user.id, providerId: 'credential' } });
    expect(account.password).toBeTruthy();
    expect(account.password).not.toContain(TEST_PASSWORD);
    // better-auth's scrypt: "salt:key" in hex.
    expect(account.password).toMatch(/^[0-9a-f]+:[0-9a-f]+$/);
    expect(first.cookie).toMatch(/session_token=/);
  });

  it('answers a wrong password and an unknown e-mail the same way, and audits both', async () => {
    const { email } = await signUp(ctx.server.url, ctx.t.db);
    const wrong = await signIn(ctx.server.url, email, 'not the password!!');
    const unknown = await signIn(ctx.server.url, 'nobody-here@example.test', 'not the password!!');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body?.message).toBe(unknown.body?.message);
    expect(wrong.cookie).toBeNull();
    const failures = await ctx.t.db.auditLog.findMany({ where: { action: 'auth.sign_in_failed', targetId: { in: [email, 'nobody-here@example.test'] } } });
    expect(failures).toHaveLength(2);
    expect((await signIn(ctx.server.url, email, TEST_PASSWORD)).status).toBe(200);
  });

  it('limits sign-in attempts per account, even with the right password afterwards', async () => {
    const { email } = await signUp(ctx.server.url, ctx.t.db);
    for (let i = 0; i < MAX_FAILURES_PER_ACCOUNT; i++) {
      expect((await signIn(ctx.server.url, email, `wrong-password-${i}`)).status).toBe(401);
    }
    const blocked = await signIn(ctx.server.url, email, TEST_PASSWORD);
    expect(blocked.status).toBe(429);
    expect(blocked.body?.message).toMatch(/Too many failed sign-in attempts/);
    expect(blocked.cookie).toBeNull();
  });

  it('limits sign-in attempts per address across accounts', async () => {
    await ctx.t.db.auditLog.createMany({
      data: Array.from({ length: 20 }, (_, i) => ({ action: 'auth.sign_in_failed', targetId: `spray${i}@example.test`, ipAddress: '127.0.0.1' })),
    });
    const { email } = await signUp(ctx.server.url, ctx.t.db);
    expect((await signIn(ctx.server.url, email, TEST_PASSWORD)).status).toBe(429);
    await ctx.t.db.auditLog.deleteMany({ where: { action: 'auth.sign_in_failed', ipAddress: '127.0.0.1' } });
    expect((await signIn(ctx.server.url, email, TEST_PASSWORD)).status).toBe(200);
  });

  it('ignores a client-chosen address header', async () => {
    const { email } = await signUp(ctx.server.url, ctx.t.db);
    await signIn(ctx.server.url, email, 'wrong-password-x', { 'x-whetstone-client-ip': '203.0.113.9' });
    const entry = await ctx.t.db.auditLog.findFirstOrThrow({ where: { action: 'auth.sign_in_failed', targetId: email } });
    expect(entry.ipAddress).toBe('127.0.0.1');
  });

  it('refuses sign-up when it is closed, unless an invitation admits', async () => {
    await ctx.t.db.setting.upsert({ where: { key: 'signup.open' }, update: { value: false }, create: { key: 'signup.open', value: false } });
    try {
      await expect(signUp(ctx.server.url, ctx.t.db)).rejects.toThrow(/403.*invitation only/);
    } finally {
      await ctx.t.db.setting.update({ where: { key: 'signup.open' }, data: { value: true } });
    }
  });

  it('refuses a sign-up from another site (CSRF)', async () => {
    const res = await fetch(`${ctx.server.url}/api/auth/sign-up/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example', cookie: 'x=1' },
      body: JSON.stringify({ email: 'csrf@example.test', password: TEST_PASSWORD, name: 'x' }),
    });
    expect(res.status).toBe(403);
    expect(await ctx.t.db.user.count({ where: { email: 'csrf@example.test' } })).toBe(0);
  });
});
