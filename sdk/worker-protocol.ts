import { z } from 'zod';
import { boardItemSchema, logItemSchema, matchItemSchema, metricItemSchema, rolloutItemSchema, SAMPLE_END_REASONS, sampleTimingSchema } from './live';

// The contract between the control plane and worker daemons (DESIGN.md, step 4). HTTP with the
// worker's own credential (`Authorization: Bearer wsw_…`), plus socket.io namespace /workers
// for pushes. Every write about a job carries the attempt's fencing token: a worker whose token
// is no longer the job's current one has lost its lease, and the server refuses its writes (409).

const deviceSchema = z.object({
  index: z.number().int().min(0).max(1023),
  kind: z.enum(['CUDA', 'WEBGPU', 'CPU', 'WASM']),
  name: z.string().max(200),
  memoryBytes: z.number().int().min(0),
});

const devicesSchema = z
  .array(deviceSchema)
  .max(64)
  .refine((d) => new Set(d.map((x) => x.index)).size === d.length, 'device indexes must be distinct');

/** POST /api/workers/register (no credential: the pool's registration token is in the body). */
export const registerRequestSchema = z.object({
  token: z.string().startsWith('wst_').max(200),
  name: z.string().trim().min(1).max(100),
  hostname: z.string().trim().min(1).max(255),
  backend: z.string().min(1).max(40),
  version: z.string().min(1).max(40),
  labels: z.record(z.string().max(64), z.string().max(256)).default({}),
  devices: devicesSchema,
});
export const registerResponseSchema = z.object({ workerId: z.string(), credential: z.string(), pool: z.enum(['team', 'shared']) });

/** A job's placement on this worker, pushed over socket.io and returned by heartbeats until started. */
export const assignmentSchema = z.object({
  attemptId: z.string(),
  /** A decimal string: bigints do not survive JSON. */
  fencingToken: z.string(),
  jobId: z.string(),
  attempt: z.number().int(),
  kind: z.enum(['TRAIN', 'SFT', 'INFERENCE', 'EVAL']),
  config: z.record(z.string(), z.unknown()),
  deviceIndexes: z.array(z.number().int()),
  leaseExpiresAt: z.string(),
  timeLimitSeconds: z.number().int().nullable(),
  /**
   * The newest training checkpoint of the job, to resume from. `agents`: in a run whose learners
   * learn independently (training.independentLearners), every learner's checkpoint written with it
   * (same attempt and step), by agent; null (or absent, from an older server) otherwise.
   */
  resumeFrom: z
    .object({
      checkpointId: z.string(),
      storageKey: z.string(),
      step: z.number().int(),
      agents: z.record(z.string(), z.object({ checkpointId: z.string(), storageKey: z.string() })).nullish(),
    })
    .nullable(),
  /** The environment the job trains or evaluates on, when it has one. */
  environment: z
    .object({ versionId: z.string(), files: z.record(z.string(), z.string()), entry: z.string(), manifest: z.record(z.string(), z.unknown()) })
    .nullable(),
  /**
   * Storage keys (for GET /api/workers/blobs/<key>) of the checkpoints and dataset versions the
   * config names by id (baseCheckpointId, datasetVersionId, checkpointId…), keyed by that id.
   * Optional extension: a job that names none needs none.
   */
  blobKeys: z.record(z.string(), z.string()).optional(),
  /**
   * The imported pretrained model the config starts from (baseModelId): its files' storage keys,
   * and the content hash a worker caches it under (fetched once per worker). Absent otherwise.
   */
  baseModel: z
    .object({
      modelId: z.string(),
      contentHash: z.string(),
      files: z.array(z.object({ path: z.string(), storageKey: z.string(), bytes: z.number() })),
    })
    .nullish(),
});
export type Assignment = z.infer<typeof assignmentSchema>;

/**
 * Event `assignment` (namespace /workers): a placement pushed to the worker. When the worker is
 * connected to the replica that placed the job, the push carries an ack, and answering it with
 * { started: true } once the job's runner is up *is* the start (ASSIGNED → RUNNING): it saves the
 * start call and its answer, a pool's most frequent messages after the finish. The worker does not
 * wait for anything after it. If the server refuses that start (the lease is gone), it sends the
 * worker `signal` { attemptId, valid: false }; if the start is not recorded at all (the connection
 * dropped with the ack), heartbeats go on listing the assignment, and the worker then calls start.
 * A push without an ack (from another replica) and an assignment from a heartbeat are started
 * with the start call.
 */
export const ASSIGNMENT_EVENT = 'assignment';
export const assignmentAckSchema = z.object({ started: z.literal(true) });
export type AssignmentAck = z.infer<typeof assignmentAckSchema>;
/** How long the server keeps a pushed assignment's ack open: the runner's start-up fits well within. */
export const ASSIGNMENT_ACK_TIMEOUT_MS = 10 * 60_000;

/** POST /api/workers/heartbeat: renews the leases of the attempts the worker runs. */
export const heartbeatRequestSchema = z.object({
  attempts: z.array(z.object({ attemptId: z.string().max(64), fencingToken: z.string().max(32) })).max(256).default([]),
});
const leaseStatusSchema = z.object({
  attemptId: z.string(),
  /** False: the lease is lost (expired and requeued, or superseded); stop the job, write nothing more. */
  valid: z.boolean(),
  leaseExpiresAt: z.string().nullable(),
  /** Stop now: the job was cancelled. */
  cancel: z.boolean(),
  /** Checkpoint and stop within the grace period: the job was preempted. */
  preempt: z.boolean(),
});
export const heartbeatResponseSchema = z.object({
  workerId: z.string(),
  state: z.enum(['ONLINE', 'DRAINING', 'OFFLINE', 'REVOKED']),
  leases: z.array(leaseStatusSchema),
  assignments: z.array(assignmentSchema),
  /** How often to heartbeat; a lease lasts a few of these. */
  heartbeatSeconds: z.number(),
});
export type HeartbeatAnswer = z.infer<typeof heartbeatResponseSchema>;

const fenced = { attemptId: z.string().max(64), fencingToken: z.string().max(32) };

/** POST /api/workers/attempts/start: the runner is up; the job becomes RUNNING (see ASSIGNMENT_EVENT for the ack that replaces it). */
export const startRequestSchema = z.object(fenced);

/**
 * POST /api/workers/attempts/finish: the attempt ended. `lost`: the worker's device failed under it
 * (a WebGPU device lost): the machine's fault, not the job's, so the job is requeued like after a
 * lost lease (with backoff, counted against maxAttempts).
 */
export const finishRequestSchema = z.object({
  ...fenced,
  outcome: z.enum(['succeeded', 'failed', 'preempted', 'cancelled', 'lost']),
  reason: z.string().max(4000).default(''),
  exitCode: z.number().int().nullable().default(null),
});

/**
 * Start and finish also go over the worker's socket.io connection (namespace /workers) while it
 * is up, as events with an ack, which saves an HTTP request per call: the ack carries the HTTP
 * route's status and answer (200 with { state }, 400, 401, 404, or 409: stop, the lease is lost).
 * A disconnected daemon uses HTTP. They are a pool's most frequent calls: a job runs between them.
 */
export const ATTEMPT_START_EVENT = 'attempt:start';
export const ATTEMPT_FINISH_EVENT = 'attempt:finish';
export const callAckSchema = z.object({
  status: z.number().int(),
  state: z.string().optional(),
  error: z.string().optional(),
});
export type CallAck = z.infer<typeof callAckSchema>;

/**
 * POST /api/workers/stream: one batch of one kind, its items those of sdk/live.ts. (job, attempt,
 * seq) makes it idempotent: a batch sent twice (a retry after a lost answer) changes nothing the
 * second time.
 */
export const streamBatchSchema = z.discriminatedUnion('kind', [
  z.object({ ...fenced, seq: z.number().int().min(0), kind: z.literal('metrics'), items: z.array(metricItemSchema).max(10_000) }),
  z.object({ ...fenced, seq: z.number().int().min(0), kind: z.literal('rollouts'), items: z.array(rolloutItemSchema).max(1_000) }),
  z.object({ ...fenced, seq: z.number().int().min(0), kind: z.literal('logs'), items: z.array(logItemSchema).max(10_000) }),
  z.object({ ...fenced, seq: z.number().int().min(0), kind: z.literal('matches'), items: z.array(matchItemSchema).max(200) }),
  z.object({ ...fenced, seq: z.number().int().min(0), kind: z.literal('boards'), items: z.array(boardItemSchema).max(1_000) }),
]);
export type StreamBatch = z.infer<typeof streamBatchSchema>;

/**
 * The same batch over the worker's socket.io connection (namespace /workers): event `stream`
 * with the batch and an ack, which saves an HTTP request and a credential lookup per batch. The
 * ack comes once the batch is stored and carries the HTTP route's status and answer: 200 with
 * { accepted, duplicate }, 400, 404, 409 (stop: the lease is lost) or 500 (retry the same seq).
 * Batches larger than STREAM_SOCKET_MAX_BYTES go over HTTP.
 */
export const STREAM_EVENT = 'stream';
export const STREAM_SOCKET_MAX_BYTES = 512_000;
/**
 * How many batches of an attempt a worker keeps under way over the socket. Each is published to
 * the run's watchers as soon as it is fenced, so a slow commit does not hold up the next one; a
 * worker that gets a failure sends again from the failed batch, in order (the server counts on
 * that: server/streams/stored-marks.ts). Over HTTP, one at a time.
 */
export const STREAM_WINDOW = 4;
export const streamAckSchema = z.object({
  status: z.number().int(),
  accepted: z.boolean().optional(),
  duplicate: z.boolean().optional(),
  error: z.string().optional(),
});
export type StreamAck = z.infer<typeof streamAckSchema>;

/**
 * PUT /api/workers/checkpoints?attemptId=…&fencingToken=…&kind=TRAINING|SAMPLER&step=N[&adapter=1][&agent=…]
 * with the checkpoint file as the body (application/octet-stream); answers { checkpointId, storageKey }.
 */
export const checkpointQuerySchema = z.object({
  ...fenced,
  kind: z.enum(['TRAINING', 'SAMPLER']),
  step: z.coerce.number().int().min(0),
  adapter: z.enum(['0', '1']).default('0'),
  /** Whose policy it is, in a run whose learners learn independently (training.independentLearners). */
  agent: z.string().min(1).max(64).optional(),
});
export const checkpointResponseSchema = z.object({ checkpointId: z.string(), storageKey: z.string() });

/**
 * POST /api/workers/attempts/secrets { attemptId, fencingToken }: the values of the team secrets
 * that the attempt's environment names in its headers (sdk/team-secrets.ts), for the worker that
 * holds the attempt only, asked when the job opens its environment; answers { secrets: { NAME: value } },
 * leaving out names the team has not set. Never kept in the assignment, a job row or a log.
 */
export const ENVIRONMENT_SECRETS_ROUTE = '/api/workers/attempts/secrets';

/**
 * A daemon about to exit (drained, or idle with --idle-exit) says so: it is marked OFFLINE at once
 * and whatever was placed on it meanwhile goes back to the queue, instead of waiting for its
 * heartbeats to stop and its leases to expire. No body.
 */
export const LEAVE_ROUTE = '/api/workers/leave';

/**
 * A worker whose devices changed says so: after a device was lost (a WebGPU device lost mid-job)
 * it probes its machine again in a fresh process and advertises what it finds now, none if the
 * GPU is gone; the scheduler places by the new list from its next round. Answers how many devices
 * the worker has now.
 */
export const DEVICES_ROUTE = '/api/workers/devices';
export const devicesRequestSchema = z.object({ backend: z.string().min(1).max(40), devices: devicesSchema });
export const environmentSecretsRequestSchema = z.object({ ...fenced });
export const environmentSecretsResponseSchema = z.object({ secrets: z.record(z.string(), z.string()) });

/** GET /api/workers/blobs/<key>: a checkpoint or dataset the worker's job may read. */
export const BLOB_ROUTE = '/api/workers/blobs/';

/**
 * Inference sessions (socket.io namespace /workers). The server sends `sample` to the worker
 * holding an INFERENCE attempt; the worker answers with `sample:token` events as tokens are
 * produced and one `sample:done`. Answers name the attempt: the server relays them to the run's
 * browsers only if this worker holds that attempt and it is still active.
 */
/**
 * A conversation in the policy's chat format (system message, then turns): the worker turns it
 * into tokens with the rollouts' own prompt builder, so a playground prompt is exactly what the
 * policy read in training (role markers are tokens, not text a raw prompt could spell).
 */
export const chatPromptSchema = z.object({
  system: z.string().max(100_000),
  messages: z.array(z.object({ role: z.enum(['user', 'tool', 'assistant']), text: z.string().max(100_000) })).min(1).max(256),
});
export type ChatPrompt = z.infer<typeof chatPromptSchema>;

/** What a sampling request asks for: one schema for the API's input and the worker's request. */
export const sampleParamsSchema = z.object({
  /** Raw text after BOS; ignored when `chat` is given. */
  prompt: z.string().max(100_000).default(''),
  chat: chatPromptSchema.optional(),
  maxTokens: z.number().int().min(1).max(512).default(64),
  temperature: z.number().min(0).max(10).default(1),
  topK: z.number().int().min(0).max(100_000).optional(),
  topP: z.number().gt(0).max(1).optional(),
  stop: z.array(z.string().min(1).max(100)).max(16).optional(),
  seed: z.number().int().min(0).optional(),
  /** Send each token's likeliest alternatives (up to this many) with it. Default 0: none. */
  alternatives: z.number().int().min(0).max(10).default(0),
});

export const sampleRequestSchema = sampleParamsSchema.extend({
  requestId: z.string().min(1).max(64),
  attemptId: z.string().min(1).max(64),
});
export type SampleRequest = z.infer<typeof sampleRequestSchema>;
export const sampleTokenSchema = z.object({
  requestId: z.string().min(1).max(64),
  attemptId: z.string().min(1).max(64),
  text: z.string().max(10_000),
  logprob: z.number(),
  /** The likeliest tokens at this position (the chosen one among them when it is), most likely first. */
  alternatives: z.array(z.object({ text: z.string().max(1000), logprob: z.number() })).max(10).optional(),
});
export type SampleToken = z.infer<typeof sampleTokenSchema>;
export const sampleDoneSchema = z.object({
  requestId: z.string().min(1).max(64),
  attemptId: z.string().min(1).max(64),
  /** eos, stop, length; cancelled (the session stopped); error (with `error`). */
  reason: z.enum(SAMPLE_END_REASONS),
  /** The whole completion: the concatenation of the token texts. */
  text: z.string().max(1_000_000).default(''),
  /** The sampled tokens in order (the end-of-sequence token left out): id, its own text, log-probability. */
  tokens: z.array(z.object({ id: z.number().int().min(0), text: z.string().max(1000), logprob: z.number() })).max(1024).default([]),
  error: z.string().max(2000).optional(),
  timing: sampleTimingSchema.optional(),
});
export type SampleDone = z.infer<typeof sampleDoneSchema>;

/** Event `signal` (namespace /workers): stop an attempt (preempt: checkpoint first; cancel), or its lease is gone (valid: false). */
export interface WorkerSignal {
  attemptId: string;
  preempt?: boolean;
  cancel?: boolean;
  valid?: boolean;
}

/**
 * Namespace /workers, server to daemon, for socket.io's typed events (browsers' events are in
 * sdk/live.ts). An assignment pushed by the replica the worker is connected to carries an ack.
 */
export interface ServerToWorkerEvents {
  [ASSIGNMENT_EVENT](assignment: Assignment, ack?: (answer: AssignmentAck) => void): void;
  signal(payload: WorkerSignal): void;
  sample(request: SampleRequest): void;
}

/** Namespace /workers, daemon to server: payloads are parsed with the schemas above, answers come in the ack. */
export interface WorkerToServerEvents {
  [STREAM_EVENT](batch: StreamBatch, ack: (answer: StreamAck) => void): void;
  [ATTEMPT_START_EVENT](call: z.input<typeof startRequestSchema>, ack: (answer: CallAck) => void): void;
  [ATTEMPT_FINISH_EVENT](call: z.input<typeof finishRequestSchema>, ack: (answer: CallAck) => void): void;
  'sample:token'(token: SampleToken): void;
  'sample:done'(done: z.input<typeof sampleDoneSchema>): void;
}
