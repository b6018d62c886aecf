import fs from 'node:fs';
import path from 'node:path';
import { audit } from './auth/audit';
import { API_KEY_PREFIX } from './auth/caller';
import { hashSecret, newSecret } from './auth/tokens';
import type { Db } from './db/client';
import { repoRoot } from './paths';
import { DISPLAY_PREFIX_LENGTH, WORKER_TOKEN_PREFIX } from './workers/credentials';
import { supervise, type Supervised } from './supervise';

// Local mode (`npm start`): one worker daemon beside the server, registered into the shared
// pool, and credentials for the CLI, both kept in WHETSTONE_HOME (readable by its owner only)
// so that `npx whetstone …` works with no flag on the machine that runs Whetstone.

interface LocalCredentials {
  workerToken: string;
  apiKey: string;
  teamId: string;
}

const CREDENTIALS_FILE = 'local-credentials.json';

function readSaved(home: string): Partial<LocalCredentials> {
  try {
    return JSON.parse(fs.readFileSync(path.join(home, CREDENTIALS_FILE), 'utf8')) as Partial<LocalCredentials>;
  } catch {
    return {};
  }
}

/** Reuses the saved worker token and CLI key while they are valid; makes new ones otherwise. */
export async function ensureLocalCredentials(db: Db, home: string, ownerId: string, teamId: string): Promise<LocalCredentials> {
  const saved = readSaved(home);
  let workerToken = saved.workerToken;
  const tokenRow = workerToken ? await db.workerToken.findUnique({ where: { tokenHash: hashSecret(workerToken) } }) : null;
  if (!tokenRow || tokenRow.revokedAt) {
    workerToken = `${WORKER_TOKEN_PREFIX}${newSecret()}`;
    const created = await db.workerToken.create({
      data: { teamId: null, name: 'local worker', prefix: workerToken.slice(0, DISPLAY_PREFIX_LENGTH), tokenHash: hashSecret(workerToken), createdById: ownerId },
    });
    await audit(db, { actorUserId: ownerId, action: 'worker_token.created', targetType: 'worker_token', targetId: created.id, details: { name: 'local worker', pool: 'shared' } });
  }
  let apiKey = saved.apiKey;
  const keyRow = apiKey ? await db.apiKey.findUnique({ where: { keyHash: hashSecret(apiKey) } }) : null;
  if (!keyRow || keyRow.revokedAt || keyRow.teamId !== teamId) {
    apiKey = `${API_KEY_PREFIX}${newSecret()}`;
    const created = await db.apiKey.create({
      data: { teamId, userId: ownerId, name: 'local CLI', prefix: apiKey.slice(0, API_KEY_PREFIX.length + 8), keyHash: hashSecret(apiKey) },
    });
    await audit(db, { teamId, actorUserId: ownerId, action: 'api_key.created', targetType: 'api_key', targetId: created.id, details: { name: 'local CLI' } });
  }
  const credentials = { workerToken: workerToken!, apiKey: apiKey!, teamId };
  fs.writeFileSync(path.join(home, CREDENTIALS_FILE), JSON.stringify(credentials), { mode: 0o600 });
  return credentials;
}

/**
 * The local worker daemon as a supervised child process: restarted with backoff when it exits on
 * its own (supervise.ts); stop() drains it (SIGTERM) within `graceMs`.
 */
export function startLocalWorker(opts: { url: string; home: string; token: string; log: (line: string) => void }): Supervised {
  const relay = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line.trim()) opts.log(`[worker] ${line}`);
  };
  return supervise({
    name: 'the local worker',
    command: process.execPath,
    args: ['--import', 'tsx', path.join(repoRoot, 'gpu-worker/daemon.ts'), '--server', opts.url, '--token', opts.token, '--name', 'local'],
    // The IPC channel is only there to close when this process ends, however it ends (the daemon drains then).
    spawnOptions: { cwd: repoRoot, env: { ...process.env, WHETSTONE_HOME: opts.home }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
    log: opts.log,
    onStart: (child) => {
      child.stdout!.on('data', relay);
      child.stderr!.on('data', relay);
    },
  });
}
