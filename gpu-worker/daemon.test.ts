/**
 * The worker daemon against a small fake control plane implementing sdk/worker-protocol.ts over
 * real HTTP and socket.io: registration and the saved credential, an assignment pushed over
 * socket.io and one handed out by a heartbeat, start / stream / checkpoint / finish, a 409 that
 * kills the job, SIGTERM and SIGUSR1 draining a real daemon process, and --idle-exit. Also the
 * command line: the token from a file, the Slurm labels and name.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server as IoServer, type Socket } from 'socket.io';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadTemplate } from '../env-templates/load-template';
import {
  type Assignment,
  ATTEMPT_FINISH_EVENT,
  ATTEMPT_START_EVENT,
  checkpointQuerySchema,
  finishRequestSchema,
  heartbeatRequestSchema,
  registerRequestSchema,
  startRequestSchema,
  type StreamBatch,
  streamBatchSchema,
  LEAVE_ROUTE,
  DEVICES_ROUTE,
  devicesRequestSchema,
} from '../sdk/worker-protocol';
import { parseArgs, slurmIdentity, WorkerDaemon } from './daemon';

const CREDENTIAL = 'wsw_test_credential';
const TOKEN = 'wst_test_token';

interface Event {
  type: string;
  attemptId?: string;
  detail?: unknown;
  /** For stream batches: how it came. */
  via?: 'socket' | 'http';
}

class FakeControlPlane {
  readonly http: HttpServer;
  readonly io: IoServer;
  url = '';
  registrations = 0;
  heartbeats = 0;
  readonly events: Event[] = [];
  readonly batches = new Map<string, Map<number, StreamBatch>>();
  readonly checkpoints: { attemptId: string; kind: string; step: number; bytes: number }[] = [];
  readonly finishes: { attemptId: string; outcome: string; reason: string }[] = [];
  /** Handed out by the next heartbeat (the polling fallback). */
  readonly pollAssignments: Assignment[] = [];
  /** Attempts whose lease was taken over: their writes get 409, and heartbeats say so. */
  readonly fenced = new Set<string>();
  /** Attempts whose writes get 409 while heartbeats still renew them (a lease lost between two). */
  readonly writesFenced = new Set<string>();
  readonly sockets: Socket[] = [];
  /** Sockets are refused (the daemon must stream over HTTP). */
  refuseSockets = false;
  private isDown = false;
  /** While true every request fails at the network level (the connection is dropped), sockets too. */
  get down(): boolean {
    return this.isDown;
  }
  set down(value: boolean) {
    this.isDown = value;
    if (value) this.dropSockets();
  }

  /** Closes every connection as a network failure would (the daemon reconnects, as it would not after a server-side disconnect). */
  dropSockets(): void {
    // engine.io keeps its connections in a protected map; closing one looks like a dropped network to the client.
    const clients = (this.io.engine as unknown as { clients: Record<string, { close(): void }> }).clients;
    for (const client of Object.values(clients)) client.close();
  }

  constructor() {
    this.http = createServer((req, res) => {
      if (this.down) {
        req.socket.destroy();
        return;
      }
      void this.handle(req).then(
        ([status, body]) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        },
        (e: Error) => {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: e.message }));
        },
      );
    });
    // Refused at the handshake (not by a namespace middleware, after which a client stops
    // reconnecting), so the daemon's socket comes back once the server does.
    this.io = new IoServer(this.http, { allowRequest: (_req, callback) => callback(null, !(this.down || this.refuseSockets)) });
    this.io.of('/workers').use((socket, next) => {
      if ((socket.handshake.auth as { credential?: string }).credential === CREDENTIAL) next();
      else next(new Error('unauthorised'));
    });
    this.io.of('/workers').on('connection', (socket) => {
      this.sockets.push(socket);
      socket.on('disconnect', () => this.sockets.splice(this.sockets.indexOf(socket), 1));
      socket.on('stream', (payload: unknown, ack: (answer: unknown) => void) => {
        const [status, body] = this.stream(streamBatchSchema.parse(payload), 'socket');
        ack({ status, ...(body as object) });
      });
      socket.on(ATTEMPT_START_EVENT, (payload: unknown, ack: (answer: unknown) => void) => {
        const [status, body] = this.start(startRequestSchema.parse(payload).attemptId, 'socket');
        ack({ status, ...(body as object) });
      });
      socket.on(ATTEMPT_FINISH_EVENT, (payload: unknown, ack: (answer: unknown) => void) => {
        const [status, body] = this.finish(finishRequestSchema.parse(payload), 'socket');
        ack({ status, ...(body as object) });
      });
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.http.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    await this.io.close();
  }

  push(assignment: Assignment): void {
    this.io.of('/workers').emit('assignment', assignment);
  }

  items(attemptId: string, kind: StreamBatch['kind']): Record<string, unknown>[] {
    const byseq = [...(this.batches.get(attemptId)?.values() ?? [])].sort((a, b) => a.seq - b.seq);
    return byseq.filter((b) => b.kind === kind).flatMap((b) => b.items as Record<string, unknown>[]);
  }

  private stream(batch: StreamBatch, via: 'socket' | 'http'): [number, unknown] {
    const refused = this.fenced.has(batch.attemptId) || this.writesFenced.has(batch.attemptId);
    this.events.push({ type: 'stream', attemptId: batch.attemptId, detail: refused ? 409 : 200, via });
    if (refused) return [409, { error: 'lease lost' }];
    const seqs = this.batches.get(batch.attemptId) ?? new Map<number, StreamBatch>();
    this.batches.set(batch.attemptId, seqs);
    const duplicate = seqs.has(batch.seq);
    seqs.set(batch.seq, batch);
    return [200, { accepted: true, duplicate }];
  }

  private start(attemptId: string, via: 'socket' | 'http'): [number, unknown] {
    this.events.push({ type: 'start', attemptId, via });
    return this.fenced.has(attemptId) ? [409, { error: 'lease lost' }] : [200, { state: 'RUNNING' }];
  }

  private finish(f: ReturnType<typeof finishRequestSchema.parse>, via: 'socket' | 'http'): [number, unknown] {
    this.events.push({ type: 'finish', attemptId: f.attemptId, detail: f.outcome, via });
    if (this.fenced.has(f.attemptId)) return [409, { error: 'lease lost' }];
    this.finishes.push({ attemptId: f.attemptId, outcome: f.outcome, reason: f.reason });
    return [200, { state: 'SUCCEEDED' }];
  }

  private async handle(req: IncomingMessage): Promise<[number, unknown]> {
    const url = new URL(req.url!, 'http://x');
    const body = await read(req);
    if (url.pathname === '/api/workers/register') {
      registerRequestSchema.parse(JSON.parse(body.toString()));
      this.registrations++;
      return [200, { workerId: 'worker-1', credential: CREDENTIAL, pool: 'team' }];
    }
    if (req.headers.authorization !== `Bearer ${CREDENTIAL}`) return [401, { error: 'unauthorised' }];
    const json = () => JSON.parse(body.toString()) as unknown;
    switch (url.pathname) {
      case '/api/workers/heartbeat': {
        const { attempts } = heartbeatRequestSchema.parse(json());
        this.heartbeats++;
        const leases = attempts.map((a) => ({
          attemptId: a.attemptId,
          valid: !this.fenced.has(a.attemptId),
          leaseExpiresAt: new Date(Date.now() + 30_000).toISOString(),
          cancel: false,
          preempt: false,
        }));
        return [200, { workerId: 'worker-1', state: 'ONLINE', leases, assignments: this.pollAssignments.splice(0), heartbeatSeconds: 0.3 }];
      }
      case '/api/workers/attempts/start':
        return this.start(startRequestSchema.parse(json()).attemptId, 'http');
      case '/api/workers/stream':
        return this.stream(streamBatchSchema.parse(json()), 'http');
      case '/api/workers/checkpoints': {
        const q = checkpointQuerySchema.parse(Object.fromEntries(url.searchParams));
        if (this.fenced.has(q.attemptId)) return [409, { error: 'lease lost' }];
        this.checkpoints.push({ attemptId: q.attemptId, kind: q.kind, step: q.step, bytes: body.length });
        this.events.push({ type: 'checkpoint', attemptId: q.attemptId, detail: `${q.kind}@${q.step}` });
        return [200, { checkpointId: `ck-${this.checkpoints.length}`, storageKey: `checkpoints/${this.checkpoints.length}` }];
      }
      case '/api/workers/attempts/finish':
        return this.finish(finishRequestSchema.parse(json()), 'http');
      case LEAVE_ROUTE:
        this.events.push({ type: 'leave' });
        return [200, { ok: true, requeued: 0 }];
      case DEVICES_ROUTE: {
        const advertised = devicesRequestSchema.parse(json());
        this.events.push({ type: 'devices', detail: advertised });
        return [200, { devices: advertised.devices.length }];
      }
    }
    return [404, { error: 'not found' }];
  }
}

function read(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function until(what: string, check: () => boolean, timeoutMs = 45_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const bandit = loadTemplate('bandit');
function banditAssignment(attemptId: string, steps: number, checkpointEvery: number): Assignment {
  return {
    attemptId,
    fencingToken: '7',
    jobId: `job-${attemptId}`,
    attempt: 1,
    kind: 'TRAIN',
    config: {
      environmentVersionId: 'bandit-v1',
      training: { steps, batchSize: 2, groupSize: 2, checkpointEvery, model: { layers: 1, width: 16, heads: 2, contextLength: 72 } },
    },
    deviceIndexes: [0],
    leaseExpiresAt: new Date(Date.now() + 60_000).toISOString(),
    timeLimitSeconds: null,
    resumeFrom: null,
    environment: { versionId: 'bandit-v1', files: bandit.source.files, entry: bandit.source.entry, manifest: bandit.rawManifest },
  };
}

function alive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('worker daemon', () => {
  const server = new FakeControlPlane();
  let home: string;
  let daemon: WorkerDaemon;
  const logs: string[] = [];

  beforeAll(async () => {
    await server.listen();
    home = mkdtempSync(path.join(tmpdir(), 'whetstone-daemon-'));
    daemon = new WorkerDaemon({ server: server.url, token: TOKEN, name: 'test-worker', home, backend: 'wasm', heartbeatSeconds: 0.3, log: (l, m) => logs.push(`${l}: ${m}`) });
    await daemon.start();
  });

  afterAll(async () => {
    const spare = daemon?.spareRunnerPid;
    await daemon?.stop();
    // Stopping kills the spare runner too.
    await until('the spare runner gone', () => !alive(spare), 5000);
    await server.close();
    rmSync(home, { recursive: true, force: true });
  });

  test('registers once, keeps the credential, and a restart reuses it', async () => {
    expect(server.registrations).toBe(1);
    const saved = JSON.parse(readFileSync(path.join(home, 'worker-test-worker.json'), 'utf8')) as { credential: string; workerId: string };
    expect(saved).toMatchObject({ credential: CREDENTIAL, workerId: 'worker-1' });
    const again = new WorkerDaemon({ server: server.url, name: 'test-worker', home, heartbeatSeconds: 0.3, log: () => undefined });
    const before = server.heartbeats;
    await again.start();
    await until('a heartbeat of the restarted daemon', () => server.heartbeats >= before + 2);
    await again.stop();
    expect(server.registrations).toBe(1);
  });

  test('after a device loss, probes the machine again in a fresh process and advertises what it finds', async () => {
    await daemon.reprobeDevices();
    const advertised = server.events.filter((e) => e.type === 'devices');
    expect(advertised).toHaveLength(1);
    expect(advertised[0].detail).toMatchObject({ backend: 'wasm', devices: [{ index: 0, kind: 'WASM', name: expect.stringMatching(/^wasm/) }] });
    expect(logs.some((l) => /devices probed again after a device loss: 1 wasm device/.test(l))).toBe(true);
  });

  test('runs a pushed assignment: start, ordered fenced batches, checkpoints, finish', async () => {
    await until('the push channel', () => server.sockets.length > 0);
    server.push(banditAssignment('a1', 3, 2));
    await until('the finish of a1', () => server.finishes.some((f) => f.attemptId === 'a1'));
    expect(server.finishes.find((f) => f.attemptId === 'a1')).toMatchObject({ outcome: 'succeeded' });
    // Connected: every batch, the start and the finish went over the socket, none as an HTTP
    // request (checkpoints are files: always HTTP).
    expect(new Set(server.events.filter((e) => e.attemptId === 'a1' && e.type !== 'checkpoint').map((e) => e.via))).toEqual(new Set(['socket']));

    const mine = server.events.filter((e) => e.attemptId === 'a1');
    expect(mine[0].type).toBe('start');
    expect(mine.at(-1)!.type).toBe('finish');
    const seqs = [...server.batches.get('a1')!.keys()].sort((a, b) => a - b);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    const rewards = server.items('a1', 'metrics').filter((m) => m.key === 'reward/mean');
    expect(rewards.map((m) => m.step)).toEqual([1, 2, 3]);
    expect(server.items('a1', 'rollouts').length).toBeGreaterThan(0);
    expect(server.items('a1', 'logs').length).toBeGreaterThan(0);
    expect(server.checkpoints.filter((c) => c.attemptId === 'a1').map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@2', 'TRAINING@3', 'SAMPLER@3']);
    expect(server.checkpoints.every((c) => c.bytes > 1000)).toBe(true);
    // The daemon forgets the attempt once its runner has exited, which may come just after the finish.
    await until('the daemon to forget a1', () => daemon.jobs.size === 0);
  });

  test('an assignment from a heartbeat whose stream gets 409: the runner is killed and nothing more is sent', async () => {
    // a1's end left a runner forked for its devices: a2, on the same ones, takes it.
    await until('a spare runner', () => daemon.spareRunnerPid !== undefined);
    const spare = daemon.spareRunnerPid;
    server.pollAssignments.push(banditAssignment('a2', 200, 1000));
    let pid: number | undefined;
    await until('a2 running', () => {
      pid = daemon.jobs.get('a2')?.runner?.pid;
      return server.events.some((e) => e.attemptId === 'a2' && e.type === 'stream');
    });
    expect(pid).toBe(spare);
    expect(alive(pid)).toBe(true);
    server.writesFenced.add('a2');
    await until('a2 dropped', () => !daemon.jobs.has('a2'));
    await until('its runner gone', () => !alive(pid), 5000);
    const refusedAt = server.events.findIndex((e) => e.attemptId === 'a2' && e.type === 'stream' && e.detail === 409);
    expect(refusedAt).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 1000));
    // After the refused one, at most the batches already under way with it (refused too), and
    // nothing else: no new batch, checkpoint or finish.
    const after = server.events.slice(refusedAt + 1).filter((e) => e.attemptId === 'a2');
    expect(after.length).toBeLessThan(4);
    expect(after.every((e) => e.type === 'stream' && e.detail === 409)).toBe(true);
    expect(server.finishes.some((f) => f.attemptId === 'a2')).toBe(false);
    expect(logs.some((l) => l.includes('attempt a2: lease lost'))).toBe(true);
  });
});

describe('worker daemon: outages and signals', () => {
  const server = new FakeControlPlane();
  let home: string;
  let daemon: WorkerDaemon;

  beforeAll(async () => {
    await server.listen();
    home = mkdtempSync(path.join(tmpdir(), 'whetstone-daemon-'));
    daemon = new WorkerDaemon({ server: server.url, token: TOKEN, name: 'w2', home, backend: 'wasm', heartbeatSeconds: 0.3, log: () => undefined });
    await daemon.start();
    await until('the push channel', () => server.sockets.length > 0);
  });

  afterAll(async () => {
    await daemon?.stop();
    await server.close();
    rmSync(home, { recursive: true, force: true });
  });

  test('the server goes away mid-run: the job keeps running, batches wait and arrive in order, once', async () => {
    server.push(banditAssignment('o1', 12, 1000));
    await until('the first metrics', () => server.items('o1', 'metrics').length > 0);
    server.down = true;
    const stepsBefore = Math.max(...server.items('o1', 'metrics').map((m) => m.step as number));
    // Buffered while the server is away (the next step's batch, however long it takes to come).
    await until('a batch buffered', () => (daemon.jobs.get('o1')?.outbox.queue.length ?? 0) > 0);
    server.down = false;
    await until('the finish of o1', () => server.finishes.some((f) => f.attemptId === 'o1'));
    expect(server.finishes.find((f) => f.attemptId === 'o1')?.outcome).toBe('succeeded');
    const seqs = [...server.batches.get('o1')!.keys()].sort((a, b) => a - b);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    const steps = server.items('o1', 'metrics').filter((m) => m.key === 'reward/mean').map((m) => m.step);
    expect(steps).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(stepsBefore).toBeLessThan(12);
  });

  test('without the socket, batches, start and finish go over HTTP', async () => {
    server.refuseSockets = true;
    server.dropSockets();
    server.pollAssignments.push(banditAssignment('h1', 3, 1000));
    await until('the finish of h1', () => server.finishes.some((f) => f.attemptId === 'h1'));
    const batches = server.events.filter((e) => e.attemptId === 'h1' && e.type === 'stream');
    expect(batches.length).toBeGreaterThan(0);
    expect(new Set(server.events.filter((e) => e.attemptId === 'h1' && e.type !== 'checkpoint').map((e) => e.via))).toEqual(new Set(['http']));
    server.refuseSockets = false;
    await until('the push channel again', () => server.sockets.length > 0, 40_000);
  });

  test('a cancel pushed over socket.io stops the job at once, without a checkpoint', async () => {
    server.push(banditAssignment('c1', 500, 1000));
    await until('the first metrics', () => server.items('c1', 'metrics').length > 0);
    server.io.of('/workers').emit('signal', { attemptId: 'c1', cancel: true });
    await until('the finish of c1', () => server.finishes.some((f) => f.attemptId === 'c1'), 10_000);
    expect(server.finishes.find((f) => f.attemptId === 'c1')?.outcome).toBe('cancelled');
    expect(server.checkpoints.filter((c) => c.attemptId === 'c1')).toEqual([]);
    expect(Math.max(...server.items('c1', 'metrics').map((m) => m.step as number))).toBeLessThan(50);
  });
});

describe('worker daemon process', () => {
  const server = new FakeControlPlane();
  let home: string;
  let child: ChildProcess | null = null;

  beforeAll(async () => {
    await server.listen();
    home = mkdtempSync(path.join(tmpdir(), 'whetstone-daemon-'));
  });

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await server.close();
    rmSync(home, { recursive: true, force: true });
  });

  test('SIGTERM drains: the running job checkpoints, is reported preempted, and the daemon exits 0', async () => {
    const daemonPath = fileURLToPath(new URL('./daemon.ts', import.meta.url));
    child = spawn(process.execPath, ['--import', 'tsx', daemonPath, '--server', server.url, '--token', TOKEN, '--name', 'drainer'], {
      env: { ...process.env, WHETSTONE_HOME: home, WHETSTONE_BACKEND: 'wasm' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    await until('the daemon to connect', () => server.sockets.length > 0);
    expect(existsSync(path.join(home, 'worker-drainer.json'))).toBe(true);
    server.push(banditAssignment('d1', 1_000_000, 1_000_000));
    await until('the first metrics', () => server.items('d1', 'metrics').length > 0);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);

    expect(server.finishes).toEqual([expect.objectContaining({ attemptId: 'd1', outcome: 'preempted' })]);
    const training = server.checkpoints.filter((c) => c.kind === 'TRAINING');
    expect(training).toHaveLength(1);
    const lastStep = Math.max(...server.items('d1', 'metrics').map((m) => m.step as number));
    // The checkpoint is after the last step streamed (steps count from 1): a resumed attempt runs the next one.
    expect(training[0].step).toBe(lastStep);
    expect(training[0].step).toBeLessThan(500);
    // Every batch reached the server before the finish.
    const order = server.events.filter((e) => e.attemptId === 'd1').map((e) => e.type);
    expect(order.at(-1)).toBe('finish');
    // Then, before exiting, it told the server it leaves (nothing more is placed on it).
    const last = server.events.map((e) => e.type);
    expect(last.lastIndexOf('leave')).toBeGreaterThan(last.lastIndexOf('finish'));
  });
});

describe('daemon command line', () => {
  const SECRET = 'wst_cmdline_secret_0123456789';
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'whetstone-args-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const tokenFile = (name: string, mode: number, text = `${SECRET}\n`) => {
    const file = path.join(dir, name);
    writeFileSync(file, text, { mode });
    chmodSync(file, mode); // whatever the umask
    return file;
  };
  const refusal = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      return (e as Error).message;
    }
    throw new Error('not refused');
  };
  const noEnv = {};

  test('flags, and their environment variables', () => {
    expect(parseArgs(['--server', 'http://s:1', '--token', TOKEN, '--name', 'n', '--label', 'a=b', '--idle-exit', '30'], noEnv)).toEqual({
      server: 'http://s:1', token: TOKEN, name: 'n', labels: { a: 'b' }, idleExitSeconds: 30,
    });
    expect(parseArgs([], { WHETSTONE_URL: 'http://e:2', WHETSTONE_WORKER_TOKEN: TOKEN, WHETSTONE_IDLE_EXIT_SECONDS: '600' })).toEqual({
      server: 'http://e:2', token: TOKEN, labels: {}, idleExitSeconds: 600,
    });
    expect(parseArgs(['--idle-exit=5'], noEnv).idleExitSeconds).toBe(5);
    expect(parseArgs([], noEnv)).toEqual({ server: 'http://127.0.0.1:3000', labels: {} });
    expect(refusal(() => parseArgs(['--idle-exit', 'soon'], noEnv))).toMatch(/--idle-exit takes seconds/);
    expect(refusal(() => parseArgs(['--idle-exit', '0'], noEnv))).toMatch(/--idle-exit: more than 0/);
    expect(refusal(() => parseArgs(['--idle-exit', '1.5'], noEnv))).toMatch(/--idle-exit: whole seconds/);
    expect(refusal(() => parseArgs(['--idle-exit'], noEnv))).toMatch(/--idle-exit needs a value/);
    expect(refusal(() => parseArgs(['--bogus'], noEnv))).toMatch(/unknown argument "--bogus"/);
  });

  test('the token from a file of its owner only; refused otherwise, and never in a message', () => {
    const good = tokenFile('token', 0o600);
    expect(parseArgs(['--token-file', good], noEnv).token).toBe(SECRET);
    expect(parseArgs([], { WHETSTONE_WORKER_TOKEN_FILE: good }).token).toBe(SECRET);
    expect(parseArgs(['--token-file', tokenFile('ro', 0o400)], noEnv).token).toBe(SECRET);
    // A flag wins over the environment.
    expect(parseArgs(['--token-file', good], { WHETSTONE_WORKER_TOKEN: 'wst_other' }).token).toBe(SECRET);
    expect(parseArgs(['--token', 'wst_flag'], { WHETSTONE_WORKER_TOKEN_FILE: good }).token).toBe('wst_flag');

    const refusals = [
      [() => parseArgs(['--token-file', tokenFile('group', 0o640)], noEnv), /may be read or written by group or others \(mode 0640\): chmod 600/],
      [() => parseArgs(['--token-file', tokenFile('others', 0o604)], noEnv), /group or others \(mode 0604\)/],
      [() => parseArgs(['--token-file', tokenFile('gw', 0o620)], noEnv), /group or others \(mode 0620\)/],
      [() => parseArgs(['--token-file', path.join(dir, 'missing')], noEnv), /the token file .*missing does not exist/],
      [() => parseArgs(['--token-file', dir], noEnv), /is not a regular file/],
      [() => parseArgs(['--token-file', tokenFile('empty', 0o600, '\n')], noEnv), /is empty/],
      [() => parseArgs(['--token-file', tokenFile('bad', 0o600, 'not-a-token secret\n')], noEnv), /does not hold a registration token/],
      [() => parseArgs(['--token', SECRET, '--token-file', good], noEnv), /--token or --token-file, not both/],
      [() => parseArgs([], { WHETSTONE_WORKER_TOKEN: SECRET, WHETSTONE_WORKER_TOKEN_FILE: good }), /not both/],
      [() => parseArgs(['--token', 'nope'], noEnv), /a registration token starts with wst_/],
    ] as const;
    for (const [f, message] of refusals) {
      const m = refusal(f);
      expect(m).toMatch(message);
      expect(m).not.toContain(SECRET);
      expect(m).not.toContain('not-a-token');
    }
  });

  test('under Slurm: labels slurm.jobId and slurm.cluster, and the name <hostname>-slurm-<jobid>', () => {
    expect(slurmIdentity(noEnv)).toBeNull();
    expect(slurmIdentity({ SLURM_JOB_ID: '42' }, 'node7')).toEqual({ labels: { 'slurm.jobId': '42' }, name: 'node7-slurm-42' });
    expect(() => slurmIdentity({ SLURM_JOB_ID: '42; x' })).toThrow(/not a Slurm job id/);

    const env = { SLURM_JOB_ID: '1234', SLURM_CLUSTER_NAME: 'lab' };
    expect(parseArgs(['--label', 'zone=a'], env)).toEqual({
      server: 'http://127.0.0.1:3000',
      name: `${hostname()}-slurm-1234`,
      labels: { zone: 'a', 'slurm.jobId': '1234', 'slurm.cluster': 'lab' },
    });
    // A name given wins; the job's labels win over a --label of the same key (they tie the worker to its job).
    expect(parseArgs(['--name', 'mine', '--label', 'slurm.jobId=9'], env)).toMatchObject({ name: 'mine', labels: { 'slurm.jobId': '1234' } });
  });
});

describe('worker daemon process: SIGUSR1 and --idle-exit', () => {
  const server = new FakeControlPlane();
  let home: string;
  const children: ChildProcess[] = [];
  const daemonPath = fileURLToPath(new URL('./daemon.ts', import.meta.url));

  beforeAll(async () => {
    await server.listen();
    home = mkdtempSync(path.join(tmpdir(), 'whetstone-daemon-'));
  });

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await server.close();
    rmSync(home, { recursive: true, force: true });
  });

  function startDaemon(args: string[], env: Record<string, string>) {
    const child = spawn(process.execPath, ['--import', 'tsx', daemonPath, '--server', server.url, ...args], {
      env: { ...process.env, WHETSTONE_HOME: home, WHETSTONE_BACKEND: 'wasm', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.once('exit', (code) => resolve({ code, at: Date.now() })));
    return { child, exited, output: () => output };
  }

  test('SIGUSR1 (Slurm\'s notice) drains: the running job checkpoints, is reported preempted, and the daemon exits 0', async () => {
    // The token from a 0600 file: in no argv and no log.
    const file = path.join(home, 'token');
    writeFileSync(file, `${TOKEN}\n`, { mode: 0o600 });
    const sockets = server.sockets.length;
    const d = startDaemon(['--token-file', file, '--name', 'usr1'], {});
    await until('the daemon to connect', () => server.sockets.length > sockets);
    expect(server.registrations).toBe(1);
    server.push(banditAssignment('u1', 1_000_000, 1_000_000));
    await until('the first metrics', () => server.items('u1', 'metrics').length > 0);
    d.child.kill('SIGUSR1');
    expect((await d.exited).code).toBe(0);

    expect(server.finishes.filter((f) => f.attemptId === 'u1')).toEqual([expect.objectContaining({ outcome: 'preempted' })]);
    const training = server.checkpoints.filter((c) => c.attemptId === 'u1' && c.kind === 'TRAINING');
    expect(training).toHaveLength(1);
    expect(training[0].step).toBe(Math.max(...server.items('u1', 'metrics').map((m) => m.step as number)));
    expect(training[0].step).toBeLessThan(500);
    expect(d.output()).toMatch(/SIGUSR1: draining/);
    expect(d.output()).not.toContain(TOKEN);
    expect(d.child.spawnargs.join(' ')).not.toContain(TOKEN);
  });

  test('--idle-exit: no exit while a job runs; after the idle time since its end, it drains and exits 0', async () => {
    const IDLE_S = 2;
    const sockets = server.sockets.length;
    const d = startDaemon(['--name', 'idler', '--idle-exit', String(IDLE_S)], { WHETSTONE_WORKER_TOKEN: TOKEN });
    let exitedAt: number | null = null;
    void d.exited.then((e) => (exitedAt = e.at));
    await until('the daemon to connect', () => server.sockets.length > sockets);
    // A job that outlasts the idle time: the daemon keeps running it.
    server.push(banditAssignment('i1', 1_000_000, 1_000_000)); // far longer than the test: it is cancelled
    await until('the first metrics', () => server.items('i1', 'metrics').length > 0);
    const firstMetricsAt = Date.now();
    await until(`${IDLE_S + 1} s of the job`, () => Date.now() - firstMetricsAt > (IDLE_S + 1) * 1000);
    expect(exitedAt).toBeNull();
    expect(server.finishes.some((f) => f.attemptId === 'i1')).toBe(false);
    server.io.of('/workers').emit('signal', { attemptId: 'i1', cancel: true });
    await until('the finish of i1', () => server.finishes.some((f) => f.attemptId === 'i1'), 10_000);
    const finishedAt = Date.now();
    const { code, at } = await d.exited;
    expect(code).toBe(0);
    // Counted from the job's end (the finish reaches the server just before the runner is gone).
    expect(at - finishedAt).toBeGreaterThanOrEqual(IDLE_S * 1000 - 250);
    expect(d.output()).toMatch(/no job for 2 s \(--idle-exit\): draining and exiting/);
    expect(d.output()).not.toContain(TOKEN);
  });

  test('--idle-exit 1 with no job at all: the daemon exits 0 on its own', async () => {
    const registrations = server.registrations;
    const startedAt = Date.now();
    const d = startDaemon(['--name', 'idle-at-once', '--idle-exit', '1'], { WHETSTONE_WORKER_TOKEN: TOKEN });
    const { code, at } = await d.exited;
    expect(code).toBe(0);
    expect(server.registrations).toBe(registrations + 1);
    expect(at - startedAt).toBeGreaterThanOrEqual(1000);
    expect(d.output()).toMatch(/registered as worker/);
    expect(d.output()).toMatch(/no job for 1 s \(--idle-exit\): draining and exiting/);
  });
});
