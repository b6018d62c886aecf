/**
 * The control plane as the reliability tests run it: `node --import tsx server/test-support/reliability/server-process.ts`
 * with DATABASE_URL, PORT and WHETSTONE_HOME. It is server/main.ts's composition — the same
 * request listener (tRPC, auth, worker API), socket.io gateway with the PostgreSQL adapter, and
 * scheduler loop, in one real process — without the Next.js web app (whose build would race the
 * tests for the two cores and the .next folder) and without a local worker.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { createAuth } from '../../auth/auth';
import { FsBlobStore } from '../../blobs/store';
import { createDb } from '../../db/client';
import { migrate } from '../../db/migrate';
import { createHealthCheck } from '../../health';
import { createRequestListener } from '../../http';
import { attachRealtime } from '../../realtime/gateway';
import { schedulerEvents } from '../../scheduler/events';
import { SchedulerLoop } from '../../scheduler/loop';
import { LEASE_SECONDS } from '../../scheduler/timing';
import { DryRunPool } from '../../environments/dry-run-pool';
import { PlaySessions } from '../../play/play-sessions';
import { secretsKey } from '../../secrets/secret-box';

const log = (line: string) => console.log(`[whetstone ${process.pid}] ${line}`);

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL is required');
  const home = process.env.WHETSTONE_HOME ?? fs.mkdtempSync('/tmp/whetstone-reliability-');
  const port = Number(process.env.PORT ?? 0);
  await migrate(databaseUrl);
  const db = createDb(databaseUrl);
  // The request listener must be in place before socket.io attaches: socket.io wraps the
  // listeners it finds so that /socket.io requests (HTTP long-polling) reach only it.
  let listener: ReturnType<typeof createRequestListener> | null = null;
  const server = http.createServer((req, res) => void listener?.(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const installationSecret = 'reliability-secret-reliability-secret-0';
  const auth = createAuth({ db, baseURL: url, secret: installationSecret, trustedOrigins: [url], secureCookies: false, seedTeam: async () => {} });
  const realtimePool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  realtimePool.on('error', () => {});
  const realtime = attachRealtime(server, db, auth, realtimePool);
  const dryRuns = new DryRunPool();
  const play = new PlaySessions();
  const deps = {
    db, auth, realtime, dryRuns, play, blobs: new FsBlobStore(path.join(home, 'blobs')),
    health: createHealthCheck(db, { embedded: false, startedAt: Date.now() }),
    trustedOrigins: [url], publicUrl: url, seedTeam: async () => {}, secretsKey: secretsKey(installationSecret),
    hub: { endpoint: 'http://127.0.0.1:1' },
  };
  listener = createRequestListener(deps, () => null);
  const scheduler = new SchedulerLoop(databaseUrl, schedulerEvents(realtime), log);
  await scheduler.start();
  log(`listening on ${url} (lease ${LEASE_SECONDS} s)`);
  const stop = async () => {
    await scheduler.stop();
    await dryRuns.close();
    await play.shutdown();
    const closed = realtime.close();
    server.closeAllConnections();
    await closed;
    await db.$disconnect().catch(() => {});
    await realtimePool.end().catch(() => {});
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
}

void main().catch((error: unknown) => {
  console.error('[whetstone] fatal:', error);
  process.exit(1);
});
