import type { Namespace, Socket } from 'socket.io';
import { type z } from 'zod';
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
  startRequestSchema,
  type ServerToWorkerEvents,
  STREAM_EVENT,
  streamBatchSchema,
  type WorkerToServerEvents,
} from '../../sdk/worker-protocol';
import type { RelayedSample } from '../../sdk/live';
import type { Db } from '../db/client';
import { ingestBatch, type Publish } from '../streams/ingest';
import { authenticateWorker } from './api';
import type { AttemptCalls } from './attempts';
import { Refusal } from './refusal';

// The worker protocol's socket.io side, the twin of api.ts's HTTP side: daemons connect to the
// /workers namespace with their credential, stream batches and start and finish attempts over it,
// and get assignments, stop signals and sampling requests pushed. The browser side of socket.io
// is realtime/gateway.ts, which attaches this to its server.

export interface WorkerSocketDeps {
  db: Db;
  /** Start and finish: the server's one instance, shared with the HTTP side (api.ts). */
  attempts: AttemptCalls;
  /** Fans a stream batch out to the run's watchers. */
  publish: Publish;
  /** Sends a worker's sampling answer to the run's watchers. */
  relaySample(jobId: string, sample: RelayedSample): void;
  /** Other server replicas may hold workers' connections (the PostgreSQL adapter is in place). */
  replicas: boolean;
}

/** What the rest of the server sends to connected workers. */
export interface WorkerSockets {
  /** Pushes a new assignment to a worker (polling by heartbeat is the fallback). */
  pushAssignment(workerId: string, assignment: Assignment): void;
  /** Asks a worker to stop an attempt: preempt (checkpoint first) or cancel. */
  signalWorker(workerId: string, payload: { attemptId: string; preempt?: boolean; cancel?: boolean }): void;
  /** Sends a sampling request to the worker holding an inference attempt (event "sample"). */
  requestSample(workerId: string, request: SampleRequest): void;
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

/** The push with its ack: socket.io's typings give a timeout's error argument only to an ack the event map requires. */
type AckedPush = Socket<WorkerToServerEvents, { [ASSIGNMENT_EVENT](assignment: Assignment, ack: (answer: unknown) => void): void }>;

/**
 * What one replica hands the others for workers connected elsewhere: an assignment or a signal.
 * A scheduler round may preempt or place thousands at once; each through the adapter would be its
 * own NOTIFY (and, the payload large, a row), stalling this replica's event loop for seconds, so
 * the pushes of one turn of the event loop go as one server-side message instead.
 */
type RemotePush =
  | { workerId: string; event: 'assignment'; assignment: Assignment }
  | { workerId: string; event: 'signal'; payload: Parameters<WorkerSockets['signalWorker']>[1] }
  | { workerId: string; event: 'sample'; request: SampleRequest };
const REMOTE_PUSHES = 'whetstone:worker-pushes';
/** Pushes a message carries: the adapter copies each message into a row when it is large. */
const PUSHES_PER_MESSAGE = 1_000;
interface ReplicaEvents {
  /** RemotePush[] as JSON: the adapter walks an object's every field looking for binary, and encodes each (150 ms for a round's 4,600 signals); a string it copies. */
  [REMOTE_PUSHES]: (pushes: string) => void;
}

/** The worker namespace's events (sdk/worker-protocol.ts) and what each connection carries. */
export type WorkerNamespace = Namespace<WorkerToServerEvents, ServerToWorkerEvents, ReplicaEvents, { workerId: string }>;

/** Serves worker daemons on `workers` (the /workers namespace). */
export function attachWorkerSockets(workers: WorkerNamespace, deps: WorkerSocketDeps): WorkerSockets {
  const { db, attempts } = deps;
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
  workers.on('connection', (socket) => {
    const workerId = socket.data.workerId as string;
    void socket.join(`worker:${workerId}`);
    // Stream batches, start and finish, as over HTTP (api.ts) but without a request and a
    // credential lookup each: the connection was authenticated once, and the fence checks the
    // worker again. Answered in the ack (sdk/worker-protocol.ts: StreamAck, CallAck).
    socket.on(
      STREAM_EVENT,
      acked(streamBatchSchema, 'stream batch not stored', 'The batch could not be stored: send it again', async (batch) => {
        const result = await ingestBatch(db, workerId, batch, deps.publish);
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
        const { requestId, text, logprob, alternatives } = parsed.data;
        deps.relaySample(jobId, { requestId, kind: 'token', text, logprob, ...(alternatives ? { alternatives } : {}) });
      });
    });
    socket.on('sample:done', (payload: unknown) => {
      const parsed = sampleDoneSchema.safeParse(payload);
      if (!parsed.success) return;
      inOrder(async () => {
        const jobId = await jobOf(parsed.data.attemptId);
        if (!jobId) return;
        const { requestId, reason, text, tokens, error, timing } = parsed.data;
        deps.relaySample(jobId, { requestId, kind: 'done', reason, text, tokens, ...(error ? { error } : {}), ...(timing ? { timing } : {}) });
      });
    });
  });

  // Pushes for workers not connected here, sent to the other replicas together at the end of
  // this turn of the event loop; each replica delivers those whose worker it holds.
  let outbox: RemotePush[] = [];
  const sendLater = (push: RemotePush) => {
    // Alone, no other replica holds it: it learns of the change by its next heartbeat.
    if (!deps.replicas) return;
    if (outbox.length === 0) setImmediate(flush);
    outbox.push(push);
  };
  const flush = () => {
    const pushes = outbox;
    outbox = [];
    for (let i = 0; i < pushes.length; i += PUSHES_PER_MESSAGE) workers.serverSideEmit(REMOTE_PUSHES, JSON.stringify(pushes.slice(i, i + PUSHES_PER_MESSAGE)));
  };
  workers.on(REMOTE_PUSHES, (message: string) => {
    for (const push of JSON.parse(message) as RemotePush[]) {
      if (!workers.adapter.rooms.has(`worker:${push.workerId}`)) continue;
      if (push.event === 'assignment') sockets.pushAssignment(push.workerId, push.assignment);
      else if (push.event === 'signal') sockets.signalWorker(push.workerId, push.payload);
      else sockets.requestSample(push.workerId, push.request);
    }
  });

  const here = (workerId: string) => workers.adapter.rooms.get(`worker:${workerId}`);
  const sockets: WorkerSockets = {
    pushAssignment(workerId, assignment) {
      const room = `worker:${workerId}`;
      const connected = here(workerId);
      if (!connected) return sendLater({ workerId, event: 'assignment', assignment });
      // Connected here: straight to its socket, with the ack that starts the attempt
      // (sdk/worker-protocol.ts, ASSIGNMENT_EVENT).
      const fence = { attemptId: assignment.attemptId, fencingToken: assignment.fencingToken };
      const started = (error: unknown, answer: unknown) => {
        if (error || !assignmentAckSchema.safeParse(answer).success) return; // then heartbeats list it until started
        attempts.start({ workerId }, fence).catch((refused: unknown) => {
          if (refused instanceof Refusal && (refused.status === 409 || refused.status === 404)) {
            workers.to(room).emit('signal', { attemptId: assignment.attemptId, valid: false });
          } else if (!(refused instanceof Refusal)) console.error('[realtime] start by ack not recorded:', (refused as Error).message);
        });
      };
      for (const id of connected) (workers.sockets.get(id) as AckedPush | undefined)?.timeout(ASSIGNMENT_ACK_TIMEOUT_MS).emit(ASSIGNMENT_EVENT, assignment, started);
    },
    signalWorker(workerId, payload) {
      if (!here(workerId)) return sendLater({ workerId, event: 'signal', payload });
      workers.local.to(`worker:${workerId}`).emit('signal', payload);
    },
    requestSample(workerId, request) {
      if (!here(workerId)) return sendLater({ workerId, event: 'sample', request });
      workers.local.to(`worker:${workerId}`).emit('sample', request);
    },
  };
  return sockets;
}
