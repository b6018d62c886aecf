import type { Server as HttpServer } from 'node:http';
import type pg from 'pg';
import { Server } from 'socket.io';
import { type ClientToServerEvents, type LiveBatch, runRoom, type ServerToClientEvents, subscribeSchema, teamRoom } from '../../sdk/live';
import type { Assignment, SampleRequest, WorkerSignal } from '../../sdk/worker-protocol';
import type { Auth } from '../auth/auth';
import { CredentialRefused, resolveCaller, type Caller } from '../auth/caller';
import type { Db } from '../db/client';
import { coalesceJobChanges } from '../scheduler/job-changes';
import { type AttemptCalls, createAttemptCalls } from '../workers/attempts';
import { attachWorkerSockets, type WorkerNamespace } from '../workers/socket';
import { createReplicaAdapter } from './replica-adapter';

/** What a browser's connection carries once authenticated. */
interface SocketData {
  caller: Caller;
}

/** What the rest of the server sends to live clients: browsers in rooms, and worker daemons. */
export interface RealtimeHub {
  io: Server<ClientToServerEvents, ServerToClientEvents, Record<string, never>, SocketData>;
  /** A stream batch of a run, to its watchers (event "stream"), as soon as it is fenced and claimed. */
  publishRun(job: { id: string; teamId: string }, batch: LiveBatch): void;
  /**
   * Jobs of the team changed state: one event "job" with { jobIds } to the team's room and the
   * runs' rooms, for live job lists and run pages (coalesced: scheduler/job-changes.ts).
   */
  jobsChanged(teamId: string, jobIds: string[]): void;
  /**
   * Start and finish of attempts, the server's one instance: daemons call them over their
   * connection here, and over HTTP (workers/api.ts, given this same instance by http.ts).
   */
  attempts: AttemptCalls;
  /** Pushes a new assignment to a worker (polling by heartbeat is the fallback). */
  pushAssignment(workerId: string, assignment: Assignment): void;
  /** Asks a worker to stop an attempt: preempt (checkpoint first) or cancel. */
  signalWorker(workerId: string, payload: WorkerSignal): void;
  /** Sends a sampling request to the worker holding an inference attempt (event "sample"). */
  requestSample(workerId: string, request: SampleRequest): void;
  /** Closes socket.io and the HTTP server under it; connections the database ends afterwards are not errors. */
  close(): Promise<void>;
  /**
   * The server is stopping: from now on a lost database connection is expected, not an error (a
   * Ctrl-C in a terminal may reach the database too).
   */
  stopping(): void;
}

async function mayJoin(db: Db, caller: Caller, room: string): Promise<boolean> {
  const [kind, id] = room.split(':');
  const teamId = kind === 'team' ? id : (await db.job.findUnique({ where: { id }, select: { teamId: true } }))?.teamId;
  if (!teamId) return false;
  if (caller.apiKey && caller.apiKey.teamId !== teamId) return false;
  return Boolean(await db.membership.findUnique({ where: { teamId_userId: { teamId, userId: caller.user.id } } }));
}

/**
 * socket.io on the same HTTP server, at /socket.io. Browsers (default namespace) need a valid
 * session or API key; `subscribe` joins a room only if the caller belongs to its team, checked
 * the same way tRPC team procedures check it. Worker daemons use the /workers namespace with
 * their credential.
 */
export function attachRealtime(httpServer: HttpServer, db: Db, auth: Auth, pool?: pg.Pool): RealtimeHub {
  let closing = false;
  const io = new Server<ClientToServerEvents, ServerToClientEvents, Record<string, never>, SocketData>(httpServer, {
    path: '/socket.io',
    serveClient: false,
    // Same origin only: the browser app is served by this server.
    cors: { origin: false },
    maxHttpBufferSize: 1_000_000,
  });
  // Across server replicas, emits reach clients connected to any of them (NOTIFY under the hood;
  // this server's own clients first, see replica-adapter.ts).
  if (pool) {
    // The adapter holds one pool client for LISTEN and reconnects when it ends, but attaches no
    // 'error' listener to it: without this one, a database restart ("terminating connection")
    // was an unhandled 'error' event that killed the server.
    pool.on('connect', (client) => client.on('error', (e) => closing || console.error('[realtime] database connection lost:', e.message)));
    if (pool.listenerCount('error') === 0) pool.on('error', () => {});
    io.adapter(createReplicaAdapter(pool, { tableName: 'socket_io_attachments', errorHandler: (e) => closing || console.error('[realtime]', e.message) }));
  }
  io.use(async (socket, next) => {
    try {
      const caller = await resolveCaller(db, auth, socket.request.headers, socket.handshake.address);
      if (!caller) return next(new Error('UNAUTHORIZED: sign in first'));
      socket.data.caller = caller;
      next();
    } catch (error) {
      next(new Error(error instanceof CredentialRefused ? `UNAUTHORIZED: ${error.message}` : 'INTERNAL: could not check the session'));
    }
  });
  io.on('connection', (socket) => {
    const caller = socket.data.caller;
    socket.on('subscribe', async (payload: unknown, ack?: Parameters<ClientToServerEvents['subscribe']>[1]) => {
      const reply = typeof ack === 'function' ? ack : () => {};
      const parsed = subscribeSchema.safeParse(payload);
      if (!parsed.success) return reply({ ok: false, error: 'BAD_REQUEST: room must look like run:<id> or team:<id>' });
      // Another team's room and a missing one look the same.
      if (!(await mayJoin(db, caller, parsed.data.room))) return reply({ ok: false, error: 'NOT_FOUND: no such run' });
      await socket.join(parsed.data.room);
      reply({ ok: true });
    });
    socket.on('unsubscribe', async (payload: unknown) => {
      const parsed = subscribeSchema.safeParse(payload);
      if (parsed.success) await socket.leave(parsed.data.room);
    });
  });

  const publishRun = (job: { id: string }, batch: LiveBatch) => void io.to(runRoom(job.id)).emit('stream', batch);
  const jobsChanged: RealtimeHub['jobsChanged'] = (teamId, jobIds) => void io.to([teamRoom(teamId), ...jobIds.map(runRoom)]).emit('job', { jobIds });
  const attempts = createAttemptCalls(db, coalesceJobChanges(jobsChanged));
  // Worker daemons: the worker protocol's socket.io side (server/workers/socket.ts).
  // The worker namespace has events of its own (sdk/worker-protocol.ts); socket.io types every namespace like the default one.
  const workers = attachWorkerSockets(io.of('/workers') as unknown as WorkerNamespace, {
    db,
    attempts,
    publish: publishRun,
    relaySample: (jobId, sample) => void io.to(runRoom(jobId)).emit('sample', { jobId, ...sample }),
    replicas: Boolean(pool),
  });

  return {
    io,
    publishRun,
    jobsChanged,
    attempts,
    pushAssignment: workers.pushAssignment,
    signalWorker: workers.signalWorker,
    requestSample: workers.requestSample,
    close: () => {
      closing = true;
      return new Promise<void>((resolve) => io.close(() => resolve()));
    },
    stopping: () => {
      closing = true;
    },
  };
}
