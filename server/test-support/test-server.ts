import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { createAuth } from '../auth/auth';
import { createTestDatabase, type TestDatabase } from './test-database';
import { FsBlobStore } from '../blobs/store';
import type { Db } from '../db/client';
import { createHealthCheck } from '../health';
import { createRequestListener, type NextHandler } from '../http';
import { attachRealtime } from '../realtime/gateway';
import { schedulerEvents } from '../scheduler/events';
import { SchedulerLoop } from '../scheduler/loop';
import { DryRunPool, type DryRunPoolOptions } from '../environments/dry-run-pool';
import { PlaySessions, type PlaySessionsOptions } from '../play/play-sessions';
import { secretsKey } from '../secrets/secret-box';
import type { HubSettings } from '../models/hub-import';

/**
 * The real request listener, better-auth, socket.io and (when given the database URL) the
 * scheduler loop, on an ephemeral port, without Next.js.
 */
export async function startTestServer(
  db: Db,
  opts: { next?: NextHandler | null; databaseUrl?: string; tickMs?: number; pool?: pg.Pool; dryRuns?: DryRunPoolOptions; play?: PlaySessionsOptions; secureCookies?: boolean; hub?: HubSettings } = {},
) {
  // The app's listener must exist before socket.io attaches: socket.io takes over the server's
  // request listeners and calls them only for paths that are not its own.
  let listener: ReturnType<typeof createRequestListener> | null = null;
  const server = http.createServer((req, res) => void listener?.(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const blobRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-test-blobs-'));
  // Teams start empty here; server/environments/templates.test.ts covers seeding.
  const seedTeam = async () => {};
  const installationSecret = 'test-secret-test-secret-test-secret-0123';
  const auth = createAuth({ db, baseURL: url, secret: installationSecret, trustedOrigins: [url], secureCookies: opts.secureCookies ?? false, seedTeam });
  const realtime = attachRealtime(server, db, auth, opts.pool);
  const dryRuns = new DryRunPool(opts.dryRuns);
  const play = new PlaySessions(opts.play);
  const deps = {
    db, auth, realtime, dryRuns, play, blobs: new FsBlobStore(blobRoot),
    health: createHealthCheck(db, { embedded: false, startedAt: Date.now() }),
    trustedOrigins: [url], publicUrl: url, seedTeam, secretsKey: secretsKey(installationSecret),
    // Tests that import from a hub start their own (hub-import.test.ts); elsewhere none is reachable.
    hub: opts.hub ?? { endpoint: 'http://127.0.0.1:1' },
  };
  listener = createRequestListener(deps, () => opts.next ?? null);
  const scheduler = opts.databaseUrl ? new SchedulerLoop(opts.databaseUrl, schedulerEvents(realtime), () => {}, opts.tickMs ?? 200) : null;
  await scheduler?.start();
  return {
    url,
    auth,
    realtime,
    scheduler,
    blobs: deps.blobs,
    /** The blob store's folder (what tests inspect to see that nothing was left behind). */
    blobRoot,
    play,
    close: async () => {
      await scheduler?.stop();
      await realtime.close();
      await dryRuns.close();
      await play.shutdown();
      fs.rmSync(blobRoot, { recursive: true, force: true });
    },
  };
}

let counter = 0;
export const TEST_PASSWORD = 'correct horse battery staple';

/** Signs up through the real auth endpoint; returns the session cookie and the user's own team. */
export async function signUp(url: string, db: Db, opts: { email?: string; headers?: Record<string, string> } = {}) {
  const n = `${Date.now().toString(36)}${(counter++).toString(36)}`;
  const email = opts.email ?? `u${n}@example.test`;
  const res = await fetch(`${url}/api/auth/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url, ...opts.headers },
    body: JSON.stringify({ email, password: TEST_PASSWORD, name: `User ${n}` }),
  });
  if (!res.ok) throw new Error(`sign-up failed: ${res.status} ${await res.text()}`);
  const cookie = res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const user = await db.user.findUniqueOrThrow({ where: { email } });
  const membership = await db.membership.findFirst({ where: { userId: user.id }, include: { team: true } });
  return { user, cookie, email, team: membership?.team ?? null };
}

/** A signed-up user with a team of their own (role OWNER there). */
export async function createUserWithTeam(url: string, db: Db) {
  const u = await signUp(url, db);
  return { ...u, team: u.team! };
}

/** Adds a user to a team with a role; returns their cookie. */
export async function addMember(url: string, db: Db, teamId: string, role: 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER') {
  const u = await signUp(url, db);
  await db.membership.create({ data: { teamId, userId: u.user.id, role } });
  return u;
}

/**
 * A describe block's own database and server: created before its tests, dropped after. Read
 * `.db`, `.server` inside tests (they are set by then).
 */
export function useTestServer(opts: NonNullable<Parameters<typeof startTestServer>[1]> & { withScheduler?: boolean } = {}) {
  const state = {} as { t: TestDatabase; server: Awaited<ReturnType<typeof startTestServer>> };
  beforeAll(async () => {
    state.t = await createTestDatabase();
    state.server = await startTestServer(state.t.db, { ...opts, databaseUrl: opts.withScheduler ? state.t.url : undefined });
  });
  afterAll(async () => {
    await state.server?.close();
    await state.t?.drop();
  });
  return state;
}
