import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { io as connect } from 'socket.io-client';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { createUserWithTeam, startTestServer } from '../test-support/test-server';
import { SchedulerLoop, scheduleOnce } from './loop';
import { waitUntil } from '../test-support/reliability/harness';

// The scheduler loop and the worker protocol together, with a real PostgreSQL and a simulated
// worker speaking HTTP: placement, leases, fencing, idempotent streams, preemption, leadership.

type Server = Awaited<ReturnType<typeof startTestServer>>;

async function http(base: string, method: string, path: string, body?: unknown, credential?: string) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(credential ? { authorization: `Bearer ${credential}` } : {}) },
    body: body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? (body as string) : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

async function trpc(base: string, cookie: string, path: string, input: unknown) {
  const res = await fetch(`${base}/api/trpc/${path}`, {
    method: 'POST',
    headers: { cookie, origin: base, 'content-type': 'application/json' },
    body: JSON.stringify({ json: input }),
  });
  const body = (await res.json()) as any;
  if (body.error) throw new Error(body.error.json.message);
  return body.result.data.json;
}

/** The loop ticks every 100 ms here: poll often, give up sooner than the harness's default. */
const waitFor = <T,>(what: string, probe: () => Promise<T | null | undefined | false>) => waitUntil(what, probe, 10_000, 50);

describe('scheduler loop and worker protocol', () => {
  let t: TestDatabase;
  let server: Server;
  let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
  let envVersionId: string;

  async function newWorker(devices = 1) {
    const { token } = await trpc(server.url, owner.cookie, 'workerTokens.create', { teamId: owner.team.id, name: `pool-${Math.random()}` });
    const reg = await http(server.url, 'POST', '/api/workers/register', {
      token, name: 'sim', hostname: 'sim-host', backend: 'wasm', version: '0.1.0',
      devices: Array.from({ length: devices }, (_, index) => ({ index, kind: 'WASM', name: 'wasm', memoryBytes: 1 << 30 })),
    });
    expect(reg.status).toBe(201);
    return reg.body as { workerId: string; credential: string };
  }
  const submit = (config: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
    trpc(server.url, owner.cookie, 'jobs.submit', { teamId: owner.team.id, kind: 'TRAIN', config: { environmentVersionId: envVersionId, ...config }, ...extra });
  const heartbeat = (w: { credential: string }, attempts: Array<{ attemptId: string; fencingToken: string }> = []) =>
    http(server.url, 'POST', '/api/workers/heartbeat', { attempts }, w.credential);

  beforeAll(async () => {
    t = await createTestDatabase();
    server = await startTestServer(t.db, { databaseUrl: t.url, tickMs: 100 });
    owner = await createUserWithTeam(server.url, t.db);
    await t.db.teamQuota.upsert({ where: { teamId: owner.team.id }, update: { maxConcurrentDevices: 8 }, create: { teamId: owner.team.id, maxConcurrentDevices: 8 } });
    const env = await t.db.environment.create({
      data: { teamId: owner.team.id, name: 'bandit', versions: { create: { version: 1, contentHash: 'h', files: { 'env.ts': 'export default 1' }, entry: 'env.ts', manifest: { name: 'bandit' } } } },
      include: { versions: true },
    });
    envVersionId = env.versions[0].id;
  });
  afterAll(async () => {
    await server?.close();
    await t?.drop();
  });
  // Each test starts from an empty pool and queue, whatever the one before left behind.
  beforeEach(async () => {
    await t.db.worker.updateMany({ data: { state: 'REVOKED' } });
    await t.db.job.updateMany({ where: { state: { in: ['QUEUED', 'ASSIGNED', 'RUNNING'] } }, data: { state: 'CANCELLED' } });
    await t.db.jobAttempt.updateMany({ where: { state: 'ACTIVE' }, data: { state: 'ENDED', exitReason: 'test reset' } });
  });

  it('places a job on a worker, streams idempotently, keeps checkpoints, and finishes', async () => {
    const worker = await newWorker();
    // Pushes arrive over socket.io; heartbeats are the fallback, and both must carry the assignment.
    const socket = connect(`${server.url}/workers`, { path: '/socket.io', transports: ['websocket'], auth: { credential: worker.credential } });
    const pushed = new Promise<any>((resolve) => socket.on('assignment', resolve));
    const job = await submit();
    // Only a push resolves this (this worker has not heartbeated yet): placing notified the worker.
    const assignment = await pushed;
    socket.close();
    expect(assignment).toMatchObject({ jobId: job.id, attempt: 1, kind: 'TRAIN', environment: { versionId: envVersionId, entry: 'env.ts' }, resumeFrom: null });
    const hb = await heartbeat(worker);
    expect(hb.body.assignments.map((a: any) => a.attemptId)).toEqual([assignment.attemptId]);
    const fence = { attemptId: assignment.attemptId, fencingToken: assignment.fencingToken };

    expect((await http(server.url, 'POST', '/api/workers/attempts/start', fence, worker.credential)).body.state).toBe('RUNNING');
    const metrics = { ...fence, seq: 0, kind: 'metrics', items: [{ step: 1, key: 'reward/mean', value: 0.25 }, { step: 2, key: 'reward/mean', value: 0.5 }] };
    expect((await http(server.url, 'POST', '/api/workers/stream', metrics, worker.credential)).body).toEqual({ accepted: true, duplicate: false });
    expect((await http(server.url, 'POST', '/api/workers/stream', metrics, worker.credential)).body).toEqual({ accepted: false, duplicate: true });
    // A token past the bigint column's range is refused like any wrong one (not a 500).
    expect((await http(server.url, 'POST', '/api/workers/stream', { ...metrics, seq: 99, fencingToken: '9999999999999999999' }, worker.credential)).status).toBe(409);
    const ckpt = await fetch(`${server.url}/api/workers/checkpoints?attemptId=${fence.attemptId}&fencingToken=${fence.fencingToken}&kind=TRAINING&step=2`, {
      method: 'PUT', headers: { authorization: `Bearer ${worker.credential}` }, body: Buffer.from('weights-at-step-2'),
    });
    expect(ckpt.status).toBe(201);
    const checkpoint = await t.db.checkpoint.findFirstOrThrow({ where: { jobId: job.id } });
    expect(checkpoint).toMatchObject({ step: 2, kind: 'TRAINING', metrics: { 'reward/mean': 0.5 } });
    const blob = await fetch(`${server.url}/api/workers/blobs/${checkpoint.storageKey}`, { headers: { authorization: `Bearer ${worker.credential}` } });
    expect(Buffer.from(await blob.arrayBuffer()).toString()).toBe('weights-at-step-2');
    // An imported model's files: its job's team's, streamed; another team's model file is not found.
    const stranger = await createUserWithTeam(server.url, t.db);
    const modelFile = async (teamId: string, bytes: string) => {
      const stored = await server.blobs.put(Buffer.from(bytes), 'model-files');
      await t.db.pretrainedModel.create({
        data: { teamId, name: `m-${stored.sha256.slice(0, 8)}`, family: 'llama', card: {}, files: [{ path: 'model.safetensors', storageKey: stored.key, bytes: stored.bytes, sha256: stored.sha256 }], contentHash: stored.sha256, bytes: BigInt(stored.bytes) },
      });
      return stored.key;
    };
    const own = await modelFile(owner.team.id, 'weights of a model of this team');
    const foreign = await modelFile(stranger.team.id, 'weights of a model of another team');
    const read = (key: string) => fetch(`${server.url}/api/workers/blobs/${key}`, { headers: { authorization: `Bearer ${worker.credential}` } });
    const ownBlob = await read(own);
    expect([ownBlob.status, Buffer.from(await ownBlob.arrayBuffer()).toString()]).toEqual([200, 'weights of a model of this team']);
    expect((await read(foreign)).status).toBe(404);

    const finished = await http(server.url, 'POST', '/api/workers/attempts/finish', { ...fence, outcome: 'succeeded', reason: 'done' }, worker.credential);
    expect(finished.body.state).toBe('SUCCEEDED');
    expect(await t.db.metricPoint.count({ where: { jobId: job.id } })).toBe(2);
    const events = await t.db.jobEvent.findMany({ where: { jobId: job.id }, orderBy: { id: 'asc' } });
    expect(events.map((e) => e.toState)).toEqual(['QUEUED', 'ASSIGNED', 'RUNNING', 'SUCCEEDED']);
    // A finished attempt's writes are refused.
    expect((await http(server.url, 'POST', '/api/workers/stream', { ...metrics, seq: 1 }, worker.credential)).status).toBe(409);
    await t.db.worker.update({ where: { id: worker.workerId }, data: { state: 'REVOKED' } });
  });

  it('starts and finishes over the worker socket as over HTTP: acked, fenced, many at once, a retried start counted once', async () => {
    const worker = await newWorker(4);
    const other = await newWorker(1);
    const socket = connect(`${server.url}/workers`, { path: '/socket.io', transports: ['websocket'], auth: { credential: worker.credential } });
    const otherSocket = connect(`${server.url}/workers`, { path: '/socket.io', transports: ['websocket'], auth: { credential: other.credential } });
    const assignments: any[] = [];
    socket.on('assignment', (a: any) => assignments.push(a));
    await waitFor('the sockets', async () => socket.connected && otherSocket.connected);
    await t.db.worker.update({ where: { id: other.workerId }, data: { state: 'DRAINING' } }); // takes no work
    const jobs = await Promise.all([0, 1, 2, 3].map(() => submit()));
    await waitFor('four assignments', async () => assignments.length === 4);
    const call = (s: typeof socket, event: string, body: unknown) => s.timeout(5_000).emitWithAck(event, body) as Promise<any>;
    const fence = (a: any) => ({ attemptId: a.attemptId, fencingToken: a.fencingToken });
    try {
      // Refused like over HTTP: a bad body (400), another worker's attempt (404), a stale token (409).
      expect(await call(socket, 'attempt:start', { attemptId: 42 })).toMatchObject({ status: 400 });
      expect(await call(otherSocket, 'attempt:start', fence(assignments[0]))).toMatchObject({ status: 404 });
      expect(await call(socket, 'attempt:start', { ...fence(assignments[0]), fencingToken: String(BigInt(assignments[0].fencingToken) + 1000n) })).toMatchObject({ status: 409 });

      // Four starts at once, one of them twice (a retry), then four finishes at once.
      const starts = await Promise.all([...assignments, assignments[0]].map((a) => call(socket, 'attempt:start', fence(a))));
      expect(starts).toEqual(starts.map(() => ({ status: 200, state: 'RUNNING' })));
      const finishes = await Promise.all(assignments.map((a, i) => call(socket, 'attempt:finish', { ...fence(a), outcome: 'succeeded', reason: `done ${i}`, exitCode: 0 })));
      expect(finishes).toEqual(finishes.map(() => ({ status: 200, state: 'SUCCEEDED' })));
      for (const [i, a] of assignments.entries()) {
        const job = await t.db.job.findUniqueOrThrow({ where: { id: a.jobId }, include: { events: { orderBy: { id: 'asc' } }, jobAttempts: true } });
        expect(job.state).toBe('SUCCEEDED');
        expect(job.events.map((e) => e.toState)).toEqual(['QUEUED', 'ASSIGNED', 'RUNNING', 'SUCCEEDED']);
        expect(job.events[3]).toMatchObject({ actorType: 'WORKER', actorId: worker.workerId, reason: `done ${i}` });
        expect(job.jobAttempts[0]).toMatchObject({ state: 'ENDED', exitReason: `succeeded: done ${i}`, exitCode: 0 });
      }
      expect(jobs.map((j) => j.id).sort()).toEqual(assignments.map((a) => a.jobId).sort());
      // A finished attempt is fenced: a late finish is refused, and a failed one goes the full way.
      expect(await call(socket, 'attempt:finish', { ...fence(assignments[0]), outcome: 'succeeded' })).toMatchObject({ status: 409 });
      // A revoked worker's socket is refused too, even though it connected before.
      await t.db.worker.update({ where: { id: worker.workerId }, data: { state: 'REVOKED' } });
      expect(await call(socket, 'attempt:start', fence(assignments[1]))).toMatchObject({ status: 401 });
    } finally {
      socket.close();
      otherSocket.close();
    }
  });

  it("starts an attempt by the push's ack: RUNNING recorded, a finish sent at once recorded after it, a superseded attempt told it is gone", async () => {
    const worker = await newWorker(3);
    const socket = connect(`${server.url}/workers`, { path: '/socket.io', transports: ['websocket'], auth: { credential: worker.credential } });
    const jobState = async (id: string) => (await t.db.job.findUniqueOrThrow({ where: { id } })).state;
    const pushes: Array<{ a: any; ack: ((answer: unknown) => void) | undefined }> = [];
    socket.on('assignment', (a: any, ack?: (answer: unknown) => void) => pushes.push({ a, ack }));
    const signals: any[] = [];
    socket.on('signal', (s: any) => signals.push(s));
    try {
      await waitFor('the socket', async () => socket.connected);
      const jobs = await Promise.all([0, 1, 2].map(() => submit()));
      await waitFor('three pushes', async () => pushes.length === 3);
      expect(pushes.every((p) => typeof p.ack === 'function')).toBe(true);
      const [short, unanswered, superseded] = pushes;
      const fence = (a: any) => ({ attemptId: a.attemptId, fencingToken: a.fencingToken });

      // Acked and finished at once, as a short job does: the finish is recorded after the start.
      short.ack!({ started: true });
      const finished = await (socket.timeout(5_000).emitWithAck('attempt:finish', { ...fence(short.a), outcome: 'succeeded', reason: 'quick' }) as Promise<any>);
      expect(finished).toMatchObject({ status: 200, state: 'SUCCEEDED' });
      const job = await t.db.job.findUniqueOrThrow({ where: { id: short.a.jobId }, include: { events: { orderBy: { id: 'asc' } } } });
      expect(job.events.map((e) => e.toState)).toEqual(['QUEUED', 'ASSIGNED', 'RUNNING', 'SUCCEEDED']);
      expect(job.events[2]).toMatchObject({ actorType: 'WORKER', actorId: worker.workerId, reason: expect.stringMatching(/^attempt 1 started on /) });

      // Not answered (yet): still ASSIGNED, and heartbeats list it until it is started.
      expect(await jobState(unanswered.a.jobId)).toBe('ASSIGNED');
      expect((await heartbeat(worker)).body.assignments.map((a: any) => a.attemptId).sort()).toEqual([unanswered.a.attemptId, superseded.a.attemptId].sort());
      // An answer that is not a start starts nothing.
      unanswered.ack!({ started: 'maybe' });

      // The attempt ended meanwhile (here by hand, as a lease expiry does): its ack gets a signal.
      await t.db.jobAttempt.update({ where: { id: superseded.a.attemptId }, data: { state: 'ENDED', exitReason: 'lease expired' } });
      superseded.ack!({ started: true });
      await waitFor('the signal', async () => signals.find((s) => s.attemptId === superseded.a.attemptId));
      expect(signals).toEqual([{ attemptId: superseded.a.attemptId, valid: false }]);
      expect(await jobState(superseded.a.jobId)).toBe('ASSIGNED');
      expect(await jobState(unanswered.a.jobId)).toBe('ASSIGNED');
      expect(jobs.map((j) => j.id).sort()).toEqual(pushes.map((p) => p.a.jobId).sort());
    } finally {
      socket.close();
    }
  });

  it('requeues a job whose lease expired, resumes it from its checkpoint, and fences the stale worker out', async () => {
    const stale = await newWorker();
    const job = await submit();
    const first = (await waitFor('an assignment', async () => (await heartbeat(stale)).body.assignments.find((a: any) => a.jobId === job.id))) as any;
    const fence1 = { attemptId: first.attemptId, fencingToken: first.fencingToken };
    await http(server.url, 'POST', '/api/workers/attempts/start', fence1, stale.credential);
    await fetch(`${server.url}/api/workers/checkpoints?attemptId=${fence1.attemptId}&fencingToken=${fence1.fencingToken}&kind=TRAINING&step=5`, {
      method: 'PUT', headers: { authorization: `Bearer ${stale.credential}` }, body: Buffer.from('step-5'),
    });
    await http(server.url, 'POST', '/api/workers/stream', { ...fence1, seq: 0, kind: 'metrics', items: [5, 6, 7].map((step) => ({ step, key: 'loss/total', value: step })) }, stale.credential);
    // The worker goes silent: its lease runs out and it stops counting as online.
    await t.db.jobAttempt.update({ where: { id: first.attemptId }, data: { leaseExpiresAt: new Date(Date.now() - 1000) } });
    await t.db.worker.update({ where: { id: stale.workerId }, data: { lastHeartbeatAt: new Date(Date.now() - 120_000) } });
    await waitFor('the requeue', async () => (await t.db.job.findUnique({ where: { id: job.id } }))?.state === 'QUEUED');
    const requeued = await t.db.job.findUniqueOrThrow({ where: { id: job.id } });
    expect(requeued.notBefore!.getTime()).toBeGreaterThan(Date.now());
    await t.db.job.update({ where: { id: job.id }, data: { notBefore: null } }); // skip the backoff wait

    const fresh = await newWorker();
    const second = (await waitFor('a second assignment', async () => (await heartbeat(fresh)).body.assignments.find((a: any) => a.jobId === job.id))) as any;
    expect(second).toMatchObject({ jobId: job.id, attempt: 2, resumeFrom: { step: 5 } });
    expect(BigInt(second.fencingToken)).toBeGreaterThan(BigInt(first.fencingToken));
    const fence2 = { attemptId: second.attemptId, fencingToken: second.fencingToken };

    // The stale worker wakes up: its lease is invalid and its writes are refused.
    const staleBeat = await heartbeat(stale, [fence1]);
    expect(staleBeat.body.leases[0]).toMatchObject({ valid: false });
    expect((await http(server.url, 'POST', '/api/workers/stream', { ...fence1, seq: 1, kind: 'metrics', items: [{ step: 8, key: 'loss/total', value: 999 }] }, stale.credential)).status).toBe(409);
    // The new attempt replays steps 6 and 7 from the checkpoint: each step still exists once.
    await http(server.url, 'POST', '/api/workers/attempts/start', fence2, fresh.credential);
    await http(server.url, 'POST', '/api/workers/stream', { ...fence2, seq: 0, kind: 'metrics', items: [6, 7, 8].map((step) => ({ step, key: 'loss/total', value: step + 0.5 })) }, fresh.credential);
    const points = await t.db.metricPoint.findMany({ where: { jobId: job.id, key: 'loss/total' }, orderBy: { step: 'asc' } });
    expect(points.map((p) => [p.step, p.value, p.attempt])).toEqual([[5, 5, 1], [6, 6.5, 2], [7, 7.5, 2], [8, 8.5, 2]]);
    await http(server.url, 'POST', '/api/workers/attempts/finish', { ...fence2, outcome: 'succeeded' }, fresh.credential);
    for (const w of [stale, fresh]) await t.db.worker.update({ where: { id: w.workerId }, data: { state: 'REVOKED' } });
  });

  it('preempts a low-priority job for a high-priority one on a full pool; the low one resumes later', async () => {
    const worker = await newWorker(1);
    const low = await submit({}, { priority: 0 });
    const a1 = (await waitFor('low placed', async () => (await heartbeat(worker)).body.assignments.find((a: any) => a.jobId === low.id))) as any;
    const fence = { attemptId: a1.attemptId, fencingToken: a1.fencingToken };
    await http(server.url, 'POST', '/api/workers/attempts/start', fence, worker.credential);
    await fetch(`${server.url}/api/workers/checkpoints?attemptId=${fence.attemptId}&fencingToken=${fence.fencingToken}&kind=TRAINING&step=3`, {
      method: 'PUT', headers: { authorization: `Bearer ${worker.credential}` }, body: Buffer.from('low-step-3'),
    });
    const high = await submit({}, { priority: 50 });
    const lease = await waitFor('a preempt request', async () => {
      const l = (await heartbeat(worker, [fence])).body.leases[0];
      return l.preempt ? l : null;
    });
    expect(lease).toMatchObject({ valid: true, preempt: true, cancel: false });
    // The waiting reason is written in the same round, just after the preemption request.
    const reason = await waitFor('the waiting reason', async () => (await t.db.job.findUniqueOrThrow({ where: { id: high.id } })).waitingReason);
    expect(reason).toMatch(/preempting job .* to make room|being freed .* held for this job/);
    // The runner checkpoints and stops; the job goes back to the queue, the high one runs.
    await http(server.url, 'POST', '/api/workers/attempts/finish', { ...fence, outcome: 'preempted', reason: 'checkpointed at step 3' }, worker.credential);
    const a2 = (await waitFor('high placed', async () => (await heartbeat(worker)).body.assignments.find((a: any) => a.jobId === high.id))) as any;
    const lowEvents = await t.db.jobEvent.findMany({ where: { jobId: low.id }, orderBy: { id: 'asc' } });
    expect(lowEvents.map((e) => e.toState)).toEqual(['QUEUED', 'ASSIGNED', 'RUNNING', 'RUNNING', 'PREEMPTED', 'QUEUED']);
    await http(server.url, 'POST', '/api/workers/attempts/finish', { attemptId: a2.attemptId, fencingToken: a2.fencingToken, outcome: 'succeeded' }, worker.credential);
    const a3 = (await waitFor('low resumed', async () => (await heartbeat(worker)).body.assignments.find((a: any) => a.jobId === low.id))) as any;
    expect(a3).toMatchObject({ jobId: low.id, attempt: 2, resumeFrom: { step: 3 } });
    await http(server.url, 'POST', '/api/workers/attempts/finish', { attemptId: a3.attemptId, fencingToken: a3.fencingToken, outcome: 'succeeded' }, worker.credential);
    await t.db.worker.update({ where: { id: worker.workerId }, data: { state: 'REVOKED' } });
  });

  it('cancelling a running job reaches its worker', async () => {
    const worker = await newWorker(1);
    const job = await submit();
    const a = (await waitFor('placed', async () => (await heartbeat(worker)).body.assignments.find((x: any) => x.jobId === job.id))) as any;
    const fence = { attemptId: a.attemptId, fencingToken: a.fencingToken };
    await http(server.url, 'POST', '/api/workers/attempts/start', fence, worker.credential);
    expect(await trpc(server.url, owner.cookie, 'jobs.cancel', { teamId: owner.team.id, jobId: job.id })).toMatchObject({ cancelRequested: true });
    expect((await heartbeat(worker, [fence])).body.leases[0]).toMatchObject({ valid: true, cancel: true });
    expect((await http(server.url, 'POST', '/api/workers/attempts/finish', { ...fence, outcome: 'cancelled' }, worker.credential)).body.state).toBe('CANCELLED');
    await t.db.worker.update({ where: { id: worker.workerId }, data: { state: 'REVOKED' } });
  });

  it('stops a job at its time limit and fails it with that reason', async () => {
    const worker = await newWorker(1);
    const job = await submit({}, { timeLimitSeconds: 1 });
    const a = (await waitFor('placed', async () => (await heartbeat(worker)).body.assignments.find((x: any) => x.jobId === job.id))) as any;
    const fence = { attemptId: a.attemptId, fencingToken: a.fencingToken };
    await http(server.url, 'POST', '/api/workers/attempts/start', fence, worker.credential);
    const lease = await waitFor('the stop', async () => {
      const l = (await heartbeat(worker, [fence])).body.leases[0];
      return l.cancel ? l : null;
    });
    expect(lease).toMatchObject({ valid: true, cancel: true });
    expect((await http(server.url, 'POST', '/api/workers/attempts/finish', { ...fence, outcome: 'cancelled' }, worker.credential)).body.state).toBe('FAILED');
    expect(await t.db.job.findUniqueOrThrow({ where: { id: job.id } })).toMatchObject({ state: 'FAILED', failureReason: 'time limit of 1 s reached' });
    await t.db.worker.update({ where: { id: worker.workerId }, data: { state: 'REVOKED' } });
  });

  it('start and finish check the credential and the fence in the statement that makes the change', async () => {
    const worker = await newWorker(1);
    const other = await newWorker(1);
    const job = await submit();
    const a = (await waitFor('placed', async () => (await heartbeat(worker)).body.assignments.find((x: any) => x.jobId === job.id))) as any;
    const fence = { attemptId: a.attemptId, fencingToken: a.fencingToken };
    const start = (body: unknown, credential?: string) => http(server.url, 'POST', '/api/workers/attempts/start', body, credential);
    const finish = (body: unknown, credential?: string) => http(server.url, 'POST', '/api/workers/attempts/finish', body, credential);
    // Refused, and nothing changes: no credential, an unknown one, another worker's attempt, a stale token, a bad body.
    expect((await start(fence)).status).toBe(401);
    expect((await start(fence, 'wsw_not-a-worker')).status).toBe(401);
    expect((await start({ nonsense: true }, 'wsw_not-a-worker')).status).toBe(401);
    expect((await start({ nonsense: true }, worker.credential)).status).toBe(400);
    expect((await start(fence, other.credential)).status).toBe(404);
    expect((await start({ ...fence, fencingToken: String(BigInt(a.fencingToken) + 1n) }, worker.credential)).status).toBe(409);
    expect((await start({ ...fence, fencingToken: 'x' }, worker.credential)).status).toBe(409);
    expect((await finish({ ...fence, outcome: 'succeeded' }, other.credential)).status).toBe(404);
    expect((await t.db.job.findUniqueOrThrow({ where: { id: job.id } })).state).toBe('ASSIGNED');
    // Started twice (a retried request): one RUNNING event.
    expect((await start(fence, worker.credential)).body).toEqual({ state: 'RUNNING' });
    expect((await start(fence, worker.credential)).body).toEqual({ state: 'RUNNING' });
    expect((await finish({ ...fence, outcome: 'succeeded', reason: 'all steps done', exitCode: 0 }, worker.credential)).body).toEqual({ state: 'SUCCEEDED' });
    // Finished: the attempt is over, so a repeat is refused.
    expect((await finish({ ...fence, outcome: 'succeeded' }, worker.credential)).status).toBe(409);
    const events = await t.db.jobEvent.findMany({ where: { jobId: job.id }, orderBy: { id: 'asc' } });
    expect(events.map((e) => [e.fromState, e.toState, e.actorType, e.actorId, e.reason])).toEqual([
      [null, 'QUEUED', 'USER', owner.user.id, 'submitted'],
      ['QUEUED', 'ASSIGNED', 'SCHEDULER', null, expect.stringMatching(/^placed on worker/)],
      ['ASSIGNED', 'RUNNING', 'WORKER', worker.workerId, 'attempt 1 started on sim'],
      ['RUNNING', 'SUCCEEDED', 'WORKER', worker.workerId, 'all steps done'],
    ]);
    const attempt = await t.db.jobAttempt.findUniqueOrThrow({ where: { id: a.attemptId } });
    expect(attempt).toMatchObject({ state: 'ENDED', exitReason: 'succeeded: all steps done', exitCode: 0 });
    expect(await t.db.job.findUniqueOrThrow({ where: { id: job.id } })).toMatchObject({ state: 'SUCCEEDED', finishedAt: expect.any(Date), startedAt: expect.any(Date) });
    for (const w of [worker, other]) await t.db.worker.update({ where: { id: w.workerId }, data: { state: 'REVOKED' } });
    // A revoked worker is refused outright.
    expect((await start(fence, worker.credential)).status).toBe(401);
  });

  it('exactly one of two schedulers leads, and the other takes over when it stops', async () => {
    const events = { assigned: () => {}, signal: () => {}, jobChanged: () => {} };
    const a = new SchedulerLoop(t.url, events, () => {}, 100);
    const b = new SchedulerLoop(t.url, events, () => {}, 100);
    // The test server's own loop leads already; stop it so these two compete.
    await server.scheduler!.stop();
    await a.start();
    await b.start();
    await waitFor('a leader', async () => a.isLeader || b.isLeader);
    await new Promise((r) => setTimeout(r, 300));
    expect([a.isLeader, b.isLeader].filter(Boolean)).toHaveLength(1);
    const [leader, other] = a.isLeader ? [a, b] : [b, a];
    await leader.stop();
    await waitFor('the other to take over', async () => other.isLeader);
    await other.stop();
  });

  it('a planning round is a no-op when nothing changed', async () => {
    const events = { assigned: () => {}, signal: () => {}, jobChanged: () => {} };
    expect(await scheduleOnce(t.db, events)).toEqual({ placed: 0, preempted: 0 });
  });
});
