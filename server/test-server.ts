import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Db } from './db/client';
import { createHealthCheck } from './health';
import { createRequestListener, type NextHandler } from './http';
import { createSession } from './auth/session';
import { attachRealtime } from './realtime/gateway';

/** The real request listener and socket.io on an ephemeral port, without Next.js. */
export async function startTestServer(db: Db, next: NextHandler | null = null) {
  const deps = { db, health: createHealthCheck(db, { embedded: false, startedAt: Date.now() }), secureCookies: false };
  const server = http.createServer(createRequestListener(deps, () => next));
  const io = attachRealtime(server, db);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    close: () => new Promise<void>((resolve) => io.close(() => resolve())),
  };
}

let counter = 0;

/** A user with a team of their own and a signed-in session cookie. */
export async function createUserWithTeam(db: Db, role: 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER' = 'OWNER') {
  const n = `${Date.now().toString(36)}${(counter++).toString(36)}`;
  const user = await db.user.create({ data: { email: `u${n}@example.test`, name: `User ${n}` } });
  const team = await db.team.create({ data: { name: `Team ${n}`, slug: `team-${n}`, quota: { create: {} } } });
  await db.membership.create({ data: { teamId: team.id, userId: user.id, role } });
  const token = await createSession(db, user.id, {});
  return { user, team, cookie: `whetstone_session=${token}` };
}
