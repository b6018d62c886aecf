import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Db } from '../db/client';
import { sessionFromRequest, type SessionUser } from '../auth/session';

export interface ServerDeps {
  db: Db;
  /** Answers for the health report and the system router. */
  health: () => Promise<HealthReport>;
  secureCookies: boolean;
}

export interface HealthReport {
  status: 'ok' | 'degraded';
  version: string;
  database: { reachable: boolean; latencyMs: number | null; embedded: boolean };
  migrations: { applied: number; pending: number; latest: string | null };
  workers: { online: number };
  uptimeSeconds: number;
}

export interface Context {
  db: Db;
  deps: ServerDeps;
  user: SessionUser | null;
  sessionId: string | null;
  req: IncomingMessage;
  res: ServerResponse;
}

export async function createContext(deps: ServerDeps, req: IncomingMessage, res: ServerResponse): Promise<Context> {
  const session = await sessionFromRequest(deps.db, req);
  return { db: deps.db, deps, user: session?.user ?? null, sessionId: session?.sessionId ?? null, req, res };
}
