/**
 * The security headers on every answer of the real request listener (pages, API, auth, health,
 * the service worker), the nonce handed to Next.js with the request, and Secure session cookies
 * when the server is reached over HTTPS. The pages' own scripts carrying the nonce, and no
 * CSP violation in a real browser, are checked by the e2e journeys (e2e/security.e2e.ts).
 */
import { type IncomingMessage, request, type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { useTestServer } from './test-support/test-server';

/** Stands where Next.js would: answers the CSP header the request reached it with. */
function echoNext(req: IncomingMessage, res: ServerResponse) {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<p data-csp="${String(req.headers['content-security-policy'])}">page</p>`);
}

const nonceOf = (policy: string | null) => /'nonce-([A-Za-z0-9+/=]+)'/.exec(policy ?? '')?.[1];
const directive = (policy: string, name: string) => policy.split('; ').find((d) => d.startsWith(`${name} `));

describe('security headers', () => {
  const s = useTestServer({ next: echoNext });

  it('are on every answer: pages, tRPC, auth, health, unknown API paths and the service worker', async () => {
    const paths = ['/', '/teams/x', '/api/health', '/api/trpc/system.health', '/api/auth/get-session', '/api/nope', '/sw.js'];
    const nonces = new Set<string>();
    for (const path of paths) {
      const res = await fetch(`${s.server.url}${path}`);
      const policy = res.headers.get('content-security-policy');
      expect(policy, path).toBeTruthy();
      const script = directive(policy!, 'script-src')!;
      expect(script, path).toMatch(/^script-src 'self' 'nonce-[A-Za-z0-9+/=]{24}' 'strict-dynamic'$/);
      expect(policy, path).not.toMatch(/unsafe-eval/);
      for (const expected of [
        "default-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "worker-src 'self' blob:",
        `connect-src 'self' ws://${new URL(s.server.url).host} wss://${new URL(s.server.url).host}`,
        "img-src 'self' data: blob:",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
      ]) {
        expect(policy!.split('; '), path).toContain(expected);
      }
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('referrer-policy'), path).toBe('same-origin');
      expect(res.headers.get('x-frame-options'), path).toBe('DENY');
      nonces.add(nonceOf(policy)!);
      await res.arrayBuffer();
    }
    // A fresh nonce for every answer.
    expect(nonces.size).toBe(paths.length);
  });

  it('hand Next.js the answer’s own nonce in the request, whatever the client sent', async () => {
    const res = await fetch(`${s.server.url}/some/page`, { headers: { 'content-security-policy': "script-src 'nonce-chosenbytheclient'" } });
    const page = await res.text();
    const seenByNext = /data-csp="([^"]*)"/.exec(page)?.[1] ?? null;
    expect(nonceOf(seenByNext)).toBe(nonceOf(res.headers.get('content-security-policy')));
    expect(seenByNext).not.toContain('chosenbytheclient');
  });

  it('session cookies are not Secure over plain HTTP (the local default)', async () => {
    const cookies = await signUpCookies(s.server.url, 'plain@example.test');
    expect(cookies.some((c) => c.startsWith('whetstone.session_token='))).toBe(true);
    for (const cookie of cookies) expect(cookie).not.toMatch(/; Secure/i);
  });

  it('a Host header that is not a plain host adds no WebSocket source', async () => {
    const policy = await new Promise<string>((resolve, reject) => {
      const req = request(`${s.server.url}/api/health`, { headers: { host: "evil.example; script-src *" } }, (res) => {
        res.resume();
        resolve(String(res.headers['content-security-policy']));
      });
      req.on('error', reject);
      req.end();
    });
    expect(directive(policy, 'connect-src')).toBe("connect-src 'self'");
    expect(policy).not.toContain('evil.example');
  });
});

const signUpCookies = async (url: string, email: string) => {
  const res = await fetch(`${url}/api/auth/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify({ email, password: 'correct horse battery staple', name: 'Cookie' }),
  });
  expect(res.ok).toBe(true);
  return res.headers.getSetCookie();
};

describe('session cookies', () => {
  const s = useTestServer({ secureCookies: true });

  it('are Secure when the server is reached over HTTPS (WHETSTONE_PUBLIC_URL https://…)', async () => {
    const cookies = await signUpCookies(s.server.url, 'secure@example.test');
    expect(cookies.length).toBeGreaterThan(0);
    for (const cookie of cookies) expect(cookie).toMatch(/; Secure/i);
    expect(cookies.some((c) => c.startsWith('__Secure-whetstone.session_token='))).toBe(true);
  });
});
