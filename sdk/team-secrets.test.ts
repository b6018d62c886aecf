import { describe, expect, it } from 'vitest';
import { httpManifest } from './http-manifest';
import { parseManifest } from './manifest';
import { resolveHeaders, secretNamesOf } from './team-secrets';

const manifest = (headers: unknown) => ({ name: 'm', version: '1.0.0', kind: 'single-turn', server: { urls: ['http://127.0.0.1:8081'], headers } });

describe('HTTP environment headers from team secrets', () => {
  it('takes a secret (with a prefix) or a plain value that is no credential', () => {
    const parsed = parseManifest(manifest({ Authorization: { secret: 'API_TOKEN', prefix: 'Bearer ' }, 'X-Api-Key': { secret: 'API_TOKEN' }, 'X-Client': 'whetstone' }));
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(secretNamesOf(parsed.manifest.server?.headers)).toEqual(['API_TOKEN']);
  });

  it('refuses a credential written in clear, telling to use a team secret', () => {
    for (const header of ['Authorization', 'x-api-key', 'Cookie', 'X-Auth-Token', 'X-Client-Secret']) {
      const parsed = parseManifest(manifest({ [header]: 'Bearer abc' }));
      expect(parsed.ok, header).toBe(false);
      if (!parsed.ok) expect(parsed.problems.join('\n')).toMatch(new RegExp(`server\\.headers\\.${header}: ${header} carries a credential: never write it in the manifest; put it in a team secret`));
    }
  });

  it("the IDE's and the CLI's answers name a token secret as a bearer Authorization header", () => {
    const parsed = parseManifest(httpManifest({ name: 'guarded', urls: ['http://127.0.0.1:8081'], kind: 'single-turn', tokenSecret: 'GAME_TOKEN' }));
    expect(parsed.ok && parsed.manifest.server?.headers).toEqual({ Authorization: { secret: 'GAME_TOKEN', prefix: 'Bearer ' } });
  });

  it('refuses bad secret names and header names', () => {
    for (const headers of [{ Authorization: { secret: 'lower' } }, { Authorization: { secret: '1X' } }, { 'Bad Header': 'x' }, { 'X-A': 'two\nlines' }, { Authorization: { secret: 'T', extra: 1 } }]) {
      expect(parseManifest(manifest(headers)).ok, JSON.stringify(headers)).toBe(false);
    }
  });

  it('resolves values, and names what is missing or unsendable without quoting values', () => {
    const headers = { Authorization: { secret: 'TOKEN', prefix: 'Bearer ' }, 'X-Other': { secret: 'OTHER' }, 'X-Client': 'whetstone' };
    expect(resolveHeaders(headers, { TOKEN: 't0k', OTHER: 'o', UNUSED: 'u' })).toEqual({ ok: true, headers: { Authorization: 'Bearer t0k', 'X-Other': 'o', 'X-Client': 'whetstone' } });
    expect(resolveHeaders(headers, { TOKEN: 't0k' })).toEqual({ ok: false, problem: expect.stringMatching(/^The environment's headers use the team secret OTHER, which is not set: a team admin sets it under the team's Secrets/) });
    expect(resolveHeaders(headers, {})).toMatchObject({ problem: expect.stringContaining('the team secrets TOKEN, OTHER, which are not set') });
    const broken = resolveHeaders(headers, { TOKEN: 'line\nbreak-value', OTHER: 'o' });
    expect(broken).toMatchObject({ ok: false, problem: expect.stringContaining('The team secret TOKEN cannot be sent as the header Authorization') });
    expect(JSON.stringify(broken)).not.toContain('break-value');
    expect(resolveHeaders(undefined, {})).toEqual({ ok: true, headers: {} });
  });
});
