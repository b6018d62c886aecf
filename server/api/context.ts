import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Auth } from '../auth/auth';
import { CredentialRefused, resolveCaller, type Caller } from '../auth/caller';
import type { BlobStore } from '../blobs/store';
import type { Db } from '../db/client';
import type { HealthReport } from '../health';
import type { RealtimeHub } from '../realtime/gateway';
import type { DryRunPool } from '../environments/dry-run-pool';
import type { PlaySessions } from '../play/play-sessions';
import type { HubSettings } from '../models/hub-import';

export interface ServerDeps {
  db: Db;
  auth: Auth;
  blobs: BlobStore;
  realtime: RealtimeHub;
  /** Answers for the health report and the system router. */
  health: () => Promise<HealthReport>;
  /** Origins whose pages may send state-changing requests with the session cookie. */
  trustedOrigins: string[];
  /** The address users reach, for links the API hands out (invitations). */
  publicUrl: string;
  /** Gives a new team what every team starts with (the built-in environments). */
  seedTeam: (teamId: string) => Promise<void>;
  /** Where saved environments are dry-run: processes apart from this one (environments/dry-run-pool.ts). */
  dryRuns: DryRunPool;
  /** The play console's sessions: processes apart from this one (play/play-sessions.ts). */
  play: PlaySessions;
  /** Encrypts and decrypts team secrets (secrets/secret-box.ts), derived from the installation's secret. */
  secretsKey: Buffer;
  /** The Hugging Face hub models are imported from by name (HF_ENDPOINT, HF_TOKEN). */
  hub: HubSettings;
}

export interface Context {
  db: Db;
  deps: ServerDeps;
  caller: Caller | null;
  /** Why a presented credential was refused, for the UNAUTHORIZED answer. */
  authError: string | null;
  ip: string | null;
  req: IncomingMessage;
  res: ServerResponse;
}

export async function createContext(deps: ServerDeps, req: IncomingMessage, res: ServerResponse): Promise<Context> {
  const ip = req.socket.remoteAddress ?? null;
  try {
    const caller = await resolveCaller(deps.db, deps.auth, req.headers, ip);
    return { db: deps.db, deps, caller, authError: null, ip, req, res };
  } catch (error) {
    if (!(error instanceof CredentialRefused)) throw error;
    return { db: deps.db, deps, caller: null, authError: error.message, ip, req, res };
  }
}
