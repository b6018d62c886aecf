import type { Server as HttpServer } from 'node:http';
import type pg from 'pg';
import { type Namespace, Server, type Socket } from 'socket.io';
import type { z } from 'zod';
import { type ClientToServerEvents, type LiveBatch, runRoom, type ServerToClientEvents, subscribeSchema, teamRoom } from '../../sdk/live';
import {
  type Assignment,
  ASSIGNMENT_ACK_TIMEOUT_MS,
  ASSIGNMENT_EVENT,
  assignmentAckSchema,
  ATTEMPT_FINISH_EVENT,
  ATTEMPT_START_EVENT,
  finishRequestSchema,
  type SampleRequest,
  sampleDoneSchema,
  sampleTokenSchema,
  type ServerToWorkerEvents,
  startRequestSchema,
  STREAM_EVENT,
  streamBatchSchema,
  type WorkerSignal,
  type WorkerToServerEvents,
} from '../../sdk/worker-protocol';
import type { Auth } from '../auth/auth';
import { CredentialRefused, resolveCaller, type Caller } from '../auth/caller';
import type { Db } from '../db/client';
import { ingestBatch } from '../streams/ingest';
import { coalesceJobChanges } from '../scheduler/job-changes';
import { authenticateWorker } from '../workers/api';
import { type AttemptCalls, createAttemptCalls } from '../workers/attempts';
import { Refusal } from '../workers/refusal';
import { createReplicaAdapter } from './replica-adapter';

/** What a connection carries once authenticated: a browser its caller, a worker daemon its id. */
interface SocketData {
  caller: Caller;
  workerId: string;
}
/** The worker namespace's own events (sdk/worker-protocol.ts); socket.io types every namespace like the server's default one. */
type WorkerNamespace = Namespace<WorkerToServerEvents, ServerToWorkerEvents, Record<string, never>, Pick<SocketData, 'workerId'>>;
/** The push with its ack: socket.io's typings give a timeout's error argument only to an ack the event map requires. */
type AckedPush = Socket<WorkerToServerEvents, { [ASSIGNMENT_EVENT](assignment: Assignment, ack: (answer: unknown) => void): void }>;

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
   * Ctrl-C in a terminal reaches the embedded PostgreSQL too, which may stop first).
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
 * A worker event answered in its ack: the payload parsed with `schema` (else 400), then `run`'s
 * answer with status 200; a Refusal's status and message; or, for anything else, 500 with
 * `retry` (logged as `failed`), after which the worker sends it again.
 */
function acked<T, A extends object>(schema: z.ZodType<T>, failed: string, retry: string, run: (input: T) => Promise<A>) {
  return async (payload: unknown, ack?: (answer: { status: number; error?: string } | ({ status: 200 } & A)) => void) => {
    const reply = typeof ack === 'function' ? ack : () => {};
    const parsed = schema.safeParse(payload);
    if (!parsed.success) return reply({ status: 400, error: 'Invalid request' });
    try {
      reply({ status: 200, ...(await run(parsed.data)) });
    } catch (error) {
      if (error instanceof Refusal) return reply({ status: error.status, error: error.message });
      console.error(`[realtime] ${failed}:`, (error as Error).message);
      reply({ status: 500, error: retry });
    }
  };
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

  const workers = io.of('/workers') as unknown as WorkerNamespace;
  workers.use(async (socket, next) => {
    try {
      const credential = (socket.handshake.auth as { credential?: unknown })?.credential;
      const worker = await authenticateWorker(db, typeof credential === 'string' ? `Bearer ${credential}` : undefined);
      socket.data.workerId = worker.id;
      next();
    } catch {
      next(new Error('UNAUTHORIZED: unknown or revoked worker credential'));
    }
  });
  const publishRun = (job: { id: string }, batch: LiveBatch) => void io.to(runRoom(job.id)).emit('stream', batch);
  const jobsChanged: RealtimeHub['jobsChanged'] = (teamId, jobIds) => void io.to([teamRoom(teamId), ...jobIds.map(runRoom)]).emit('job', { jobIds });
  const attempts = createAttemptCalls(db, coalesceJobChanges(jobsChanged));
  workers.on('connection', (socket) => {
    const workerId = socket.data.workerId;
    void socket.join(`worker:${workerId}`);
    // Stream batches, start and finish, as over HTTP (server/workers/api.ts) but without a request
    // and a credential lookup each: the connection was authenticated once, and the fence checks
    // the worker again. Answered in the ack (sdk/worker-protocol.ts: StreamAck, CallAck).
    socket.on(
      STREAM_EVENT,
      acked(streamBatchSchema, 'stream batch not stored', 'The batch could not be stored: send it again', async (batch) => {
        const result = await ingestBatch(db, workerId, batch, publishRun);
        return { accepted: !result.duplicate, duplicate: result.duplicate };
      }),
    );
    socket.on(ATTEMPT_START_EVENT, acked(startRequestSchema, 'attempt call failed', 'The call failed: send it again', (input) => attempts.start({ workerId }, input)));
    socket.on(ATTEMPT_FINISH_EVENT, acked(finishRequestSchema, 'attempt call failed', 'The call failed: send it again', (input) => attempts.finish({ workerId }, input)));
    // A worker answers only for attempts it holds and that are still active; the answer goes to
    // the run's room. Checked against the database, remembered for a few seconds per attempt.
    const held = new Map<string, { jobId: string | null; at: number }>();
    const jobOf = async (attemptId: string): Promise<string | null> => {
      const known = held.get(attemptId);
      if (known && Date.now() - known.at < 3000) return known.jobId;
      const attempt = await db.jobAttempt.findFirst({ where: { id: attemptId, workerId, state: 'ACTIVE' }, select: { jobId: true } }).catch(() => null);
      if (held.size > 1000) held.clear();
      held.set(attemptId, { jobId: attempt?.jobId ?? null, at: Date.now() });
      return attempt?.jobId ?? null;
    };
    // Relayed in arrival order: a token must not overtake the one before it while a check waits.
    let chain: Promise<void> = Promise.resolve();
    const inOrder = (work: () => Promise<void>) => void (chain = chain.then(work).catch(() => undefined));
    socket.on('sample:token', (payload: unknown) => {
      const parsed = sampleTokenSchema.safeParse(payload);
      if (!parsed.success) return;
      inOrder(async () => {
        const jobId = await jobOf(parsed.data.attemptId);
        if (!jobId) return;
        const { requestId, text, logprob } = parsed.data;
        io.to(runRoom(jobId)).emit('sample', { jobId, requestId, kind: 'token', text, logprob });
      });
    });
    socket.on('sample:done', (payload: unknown) => {
      const parsed = sampleDoneSchema.safeParse(payload);
      if (!parsed.success) return;
      inOrder(async () => {
        const jobId = await jobOf(parsed.data.attemptId);
        if (!jobId) return;
        const { requestId, reason, text, error } = parsed.data;
        io.to(runRoom(jobId)).emit('sample', { jobId, requestId, kind: 'done', reason, text, ...(error ? { error } : {}) });
      });
    });
  });

  return {
    io,
    publishRun,
    jobsChanged,
    attempts,
    pushAssignment(workerId, assignment) {
      const room = `worker:${workerId}`;
      const here = workers.adapter.rooms.get(room);
      // Connected to another replica: through the adapter, without an ack (the worker calls start).
      if (!here) return void workers.to(room).emit(ASSIGNMENT_EVENT, assignment);
      // Connected here: straight to its socket (the adapter's every emit is first a NOTIFY), with
      // the ack that starts the attempt (sdk/worker-protocol.ts, ASSIGNMENT_EVENT).
      const fence = { attemptId: assignment.attemptId, fencingToken: assignment.fencingToken };
      const started = (error: unknown, answer: unknown) => {
        if (error || !assignmentAckSchema.safeParse(answer).success) return; // then heartbeats list it until started
        attempts.start({ workerId }, fence).catch((refused: unknown) => {
          if (refused instanceof Refusal && (refused.status === 409 || refused.status === 404)) {
            workers.to(room).emit('signal', { attemptId: assignment.attemptId, valid: false });
          } else if (!(refused instanceof Refusal)) console.error('[realtime] start by ack not recorded:', (refused as Error).message);
        });
      };
      for (const id of here) (workers.sockets.get(id) as AckedPush | undefined)?.timeout(ASSIGNMENT_ACK_TIMEOUT_MS).emit(ASSIGNMENT_EVENT, assignment, started);
    },
    signalWorker: (workerId, payload) => void workers.to(`worker:${workerId}`).emit('signal', payload),
    requestSample: (workerId, request) => void workers.to(`worker:${workerId}`).emit('sample', request),
    close: () => {
      closing = true;
      return new Promise<void>((resolve) => io.close(() => resolve()));
    },
    stopping: () => {
      closing = true;
    },
  };
}
