import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Team secrets at rest: AES-256-GCM under a key derived (HKDF-SHA256) from the installation's
 * secret, the one that signs sessions (auth/secret.ts), so an installation has one secret to keep
 * and back up, while a leaked session key and a leaked secrets key are still not the same bytes.
 * The team and the secret's name are the authenticated data: a ciphertext copied to another row
 * (another team's, or another name) does not decrypt.
 */

const VERSION = 'v1';
const IV_BYTES = 12;

/** The key that encrypts team secrets, derived from the installation's secret. */
export function secretsKey(installationSecret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', installationSecret, 'whetstone', 'team-secrets v1', 32));
}

/** Where a secret belongs: bound into its ciphertext. */
export interface SecretPlace {
  teamId: string;
  name: string;
}

const aad = (place: SecretPlace) => Buffer.from(`${place.teamId}\n${place.name}`, 'utf8');

export function encryptSecret(key: Buffer, place: SecretPlace, value: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(place));
  const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return [VERSION, iv, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

/** A stored secret that does not decrypt: altered, moved, or encrypted under another installation secret. */
export class SecretUnreadable extends Error {
  constructor(readonly secretName: string) {
    super(`The team secret ${secretName} cannot be decrypted (was the installation's secret, WHETSTONE_AUTH_SECRET, changed?): an admin sets it again under the team's Secrets`);
  }
}

export function decryptSecret(key: Buffer, place: SecretPlace, stored: string): string {
  const [version, iv, tag, ciphertext] = stored.split('.');
  if (version !== VERSION || iv === undefined || tag === undefined || ciphertext === undefined) throw new SecretUnreadable(place.name);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(aad(place));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretUnreadable(place.name);
  }
}
