import { describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret, SecretUnreadable, secretsKey } from './secret-box';

const key = secretsKey('installation-secret-installation-secret-0123');
const place = { teamId: 'team-a', name: 'TOKEN' };

describe('secret box', () => {
  it('round-trips a value, with a fresh IV each time', () => {
    const value = 'sk-live-ünïcode-🙂'.repeat(100);
    const a = encryptSecret(key, place, value);
    const b = encryptSecret(key, place, value);
    expect(a).not.toEqual(b);
    expect(a).not.toContain('sk-live');
    expect(decryptSecret(key, place, a)).toBe(value);
    expect(decryptSecret(key, place, b)).toBe(value);
  });

  it('derives a key apart from the installation secret, and the same one every time', () => {
    expect(secretsKey('installation-secret-installation-secret-0123')).toEqual(key);
    expect(key).toHaveLength(32);
    expect(key.toString('utf8')).not.toContain('installation-secret');
  });

  it('refuses an altered ciphertext, tag or IV', () => {
    const stored = encryptSecret(key, place, 'the value');
    const parts = stored.split('.');
    for (const i of [1, 2, 3]) {
      const bytes = Buffer.from(parts[i], 'base64url');
      bytes[0] ^= 1;
      const altered = parts.map((p, j) => (j === i ? bytes.toString('base64url') : p)).join('.');
      expect(() => decryptSecret(key, place, altered)).toThrow(SecretUnreadable);
    }
    expect(() => decryptSecret(key, place, 'v2.' + parts.slice(1).join('.'))).toThrow(SecretUnreadable);
    expect(() => decryptSecret(key, place, 'garbage')).toThrow(SecretUnreadable);
  });

  it('refuses a ciphertext moved to another team or name, or read with another key', () => {
    const stored = encryptSecret(key, place, 'the value');
    expect(() => decryptSecret(key, { ...place, teamId: 'team-b' }, stored)).toThrow(SecretUnreadable);
    expect(() => decryptSecret(key, { ...place, name: 'OTHER' }, stored)).toThrow(SecretUnreadable);
    expect(() => decryptSecret(secretsKey('another-installation-secret-0123456789'), place, stored)).toThrow(/TOKEN cannot be decrypted/);
  });
});
