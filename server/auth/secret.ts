import fs from 'node:fs';
import path from 'node:path';
import { newSecret } from './tokens';

/**
 * The key that signs session cookies: WHETSTONE_AUTH_SECRET when set (every replica must share
 * it), else one made on first start and kept in $WHETSTONE_HOME, readable by its owner only.
 */
export function authSecret(home: string, fromEnv?: string): string {
  if (fromEnv) return fromEnv;
  const file = path.join(home, 'auth-secret');
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  fs.mkdirSync(home, { recursive: true });
  const secret = newSecret(48);
  fs.writeFileSync(file, secret, { mode: 0o600 });
  return secret;
}
