import { createHash, randomBytes } from 'node:crypto';

/** A random secret for links, cookies and keys: 32 bytes, URL-safe. */
export function newSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Secrets are stored only as their SHA-256: a leaked table gives no usable credential. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

