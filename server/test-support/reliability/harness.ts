/**
 * Real processes for the reliability tests: control-plane servers (server-process.ts), worker
 * daemons (gpu-worker/daemon.ts), a team seeded straight into the database, and small helpers.
 * Every process a test starts is killed by `killAll()` (by pid, only those started here).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadTemplate } from '../../../env-templates/load-template';
import { type ClientToServerEvents, type LiveItem, liveBatchSchema, runRoom, type ServerToClientEvents, stepNumber } from '../../../sdk/live';
import { StreamCursor } from '../../../sdk/stream-cursor';
import { API_KEY_PREFIX } from '../../auth/caller';
import { hashSecret, newSecret } from '../../auth/tokens';
import type { Db } from '../../db/client';
import { createTestDatabase, type TestDatabase } from '../test-database';
import { repoRoot } from '../../paths';
import { WORKER_TOKEN_PREFIX } from '../../workers/credentials';
import { io as connect, type Socket } from 'socket.io-client';
import type { CatchUp } from '../../streams/positions';
import { afterAll, beforeAll } from 'vitest';

export interface Proc {
  name: string;
  child: ChildProcess;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
  /** Lines matching since the process started. */
  count(pattern: RegExp): number;
}

const started: Proc[] = [];
const dirs: string[] = [];

// PROC_NODE_ARGS: Node options for the processes started here, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
// to profile the server under a benchmark (NODE_OPTIONS refuses --cpu-prof).
function spawnProc(name: string, script: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [...(process.env.PROC_NODE_ARGS ?? '').split(' ').filter(Boolean), '--import', 'tsx', script, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const waiters = new Set<() => void>();
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (process.env.RELIABILITY_VERBOSE) process.stderr.write(chunk.toString().replace(/^/gm, `  [${name}] `));
    for (const w of waiters) w();
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const proc: Proc = {
    name,
    child,
    output: () => output,
    count: (pattern) => output.split('\n').filter((l) => pattern.test(l)).length,
    exited,
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = output.match(pattern);
          if (m) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(m);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${name}: timed out waiting for ${pattern}; output:\n${output.slice(-4000)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
  started.push(proc);
  return proc;
}

export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  dirs.push(dir);
  return dir;
}

/** A control-plane process; resolves once it listens. */
export async function startServer(opts: { databaseUrl: string; port?: number; home?: string; leaseSeconds?: number; name?: string; startTimeoutMs?: number }) {
  const proc = spawnProc(opts.name ?? 'server', 'server/test-support/reliability/server-process.ts', [], {
    DATABASE_URL: opts.databaseUrl,
    PORT: String(opts.port ?? 0),
    WHETSTONE_HOME: opts.home ?? tempDir('whetstone-rel-home-'),
    WHETSTONE_LEASE_SECONDS: String(opts.leaseSeconds ?? 30),
  });
  const [, url] = await proc.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+) /, opts.startTimeoutMs ?? 60_000);
  return { url, proc };
}

/** A real worker daemon process with one device. */
export function startWorker(opts: { url: string; token: string; name: string; home: string; backend?: string }): Proc {
  return spawnProc(opts.name, 'gpu-worker/daemon.ts', ['--server', opts.url, '--token', opts.token, '--name', opts.name], {
    WHETSTONE_HOME: opts.home,
    WHETSTONE_BACKEND: opts.backend ?? process.env.RELIABILITY_BACKEND ?? 'cpu',
  });
}

/** Stops a process as an operator would (SIGTERM: a daemon drains), killing it if it takes over 10 s. */
export async function stopGracefully(proc: Proc): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill('SIGTERM');
  const kill = setTimeout(() => proc.child.kill('SIGKILL'), 10_000);
  await proc.exited;
  clearTimeout(kill);
}

/** Kills every process these tests started (SIGKILL; a stopped one is continued first). */
export async function killAll(): Promise<void> {
  for (const p of started.splice(0)) {
    if (p.child.exitCode !== null || p.child.signalCode !== null) continue;
    try {
      p.child.kill('SIGCONT');
      p.child.kill('SIGKILL');
    } catch {
      // already gone
    }
    await Promise.race([p.exited, sleep(5_000)]);
  }
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function waitUntil<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A team with an owner, an API key, a worker registration token and the bandit environment. */
export async function seedTeam(db: Db, opts: { maxConcurrentDevices?: number } = {}) {
  const n = newSecret(6);
  const user = await db.user.create({ data: { email: `rel-${n}@example.test`, name: 'Reliability', emailVerified: true } });
  const team = await db.team.create({ data: { name: `rel ${n}`, slug: `rel-${n.toLowerCase()}`, quota: { create: { maxConcurrentDevices: opts.maxConcurrentDevices ?? 8 } } } });
  await db.membership.create({ data: { teamId: team.id, userId: user.id, role: 'OWNER' } });
  const apiKey = `${API_KEY_PREFIX}${newSecret()}`;
  await db.apiKey.create({ data: { teamId: team.id, userId: user.id, name: 'tests', prefix: apiKey.slice(0, 12), keyHash: hashSecret(apiKey) } });
  const workerToken = `${WORKER_TOKEN_PREFIX}${newSecret()}`;
  await db.workerToken.create({ data: { teamId: team.id, name: 'tests', prefix: workerToken.slice(0, 8), tokenHash: hashSecret(workerToken), createdById: user.id } });
  const t = loadTemplate('bandit');
  const env = await db.environment.create({
    data: {
      teamId: team.id, name: 'bandit', template: 'bandit',
      versions: { create: { version: 1, contentHash: `bandit-${n}`, files: t.source.files, entry: t.source.entry, manifest: t.manifest as object, validationStatus: 'VALID' } },
    },
    include: { versions: true },
  });
  return { teamId: team.id, userId: user.id, apiKey, workerToken, envVersionId: env.versions[0].id };
}

export type Team = Awaited<ReturnType<typeof seedTeam>>;

/**
 * A worker of the team's pool registered straight into the database (with the team's
 * registration token), with `devices` WASM devices of 1 GiB numbered from 0.
 */
export async function seedWorker(db: Db, team: Team, opts: { name?: string; devices?: number; state?: 'ONLINE' | 'OFFLINE' } = {}) {
  const token = await db.workerToken.findFirstOrThrow({ where: { teamId: team.teamId } });
  return db.worker.create({
    data: {
      teamId: team.teamId, tokenId: token.id, name: opts.name ?? 'w', hostname: 'h', backend: 'wasm', version: '0', labels: {},
      credentialHash: `hash-${newSecret(8)}`, state: opts.state,
      devices: { create: Array.from({ length: opts.devices ?? 1 }, (_, index) => ({ index, kind: 'WASM' as const, name: 'wasm', memoryBytes: BigInt(1 << 30) })) },
    },
  });
}

/** A tiny bandit TRAIN config: a few steps of GRPO with a checkpoint every `checkpointEvery`. */
function banditConfig(team: Team, steps: number, checkpointEvery: number) {
  return {
    environmentVersionId: team.envVersionId,
    training: { steps, batchSize: 4, groupSize: 4, checkpointEvery, learningRate: 0.01, model: { layers: 1, width: 16, heads: 2, contextLength: 72 } },
  };
}

export async function trpc<T = unknown>(url: string, apiKey: string, procedure: string, input: unknown, kind: 'query' | 'mutation' = 'mutation'): Promise<T> {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const res =
    kind === 'mutation'
      ? await fetch(`${url}/api/trpc/${procedure}`, { method: 'POST', headers, body: JSON.stringify({ json: input }) })
      : await fetch(`${url}/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify({ json: input }))}`, { headers });
  const body = (await res.json()) as { error?: { json: { message: string } }; result?: { data: { json: unknown } } };
  if (body.error) throw new Error(`${procedure}: ${body.error.json.message}`);
  return body.result!.data.json as T;
}

export async function submitTrain(url: string, team: Team, steps: number, checkpointEvery: number, extra: Record<string, unknown> = {}) {
  return trpc<{ id: string }>(url, team.apiKey, 'jobs.submit', { teamId: team.teamId, kind: 'TRAIN', config: banditConfig(team, steps, checkpointEvery), ...extra });
}

/** Every metric step of a job, per key: each step must be there exactly once. */
export async function stepsOf(db: Db, jobId: string, key = 'reward/mean'): Promise<number[]> {
  const rows = await db.metricPoint.findMany({ where: { jobId, key }, select: { step: true }, orderBy: { step: 'asc' } });
  return rows.map((r) => r.step);
}

/** The step numbers of an n-step run: 1 to n (sdk/live.ts, stepNumber). */
export function stepNumbers(n: number): number[] {
  return Array.from({ length: n }, (_, i) => stepNumber(i));
}

export async function jobState(db: Db, jobId: string) {
  return (await db.job.findUniqueOrThrow({ where: { id: jobId } })).state;
}

/**
 * A browser watching a run over socket.io: it subscribes on every (re)connect and then asks
 * runs.since for everything after what it holds (sdk/stream-cursor.ts), as the CLI does. Metrics are keyed by `key:step`, as a chart keeps them.
 */
export function watchRun(url: string, team: Team, jobId: string) {
  const metrics = new Map<string, LiveItem<'metrics'>>();
  const cursor = new StreamCursor();
  let connects = 0;
  let caughtUp = 0;
  const socket: Socket<ServerToClientEvents, ClientToServerEvents> = connect(url, { path: '/socket.io', transports: ['websocket'], extraHeaders: { authorization: `Bearer ${team.apiKey}` }, reconnectionDelay: 200, reconnectionDelayMax: 1000 });
  socket.on('stream', (payload) => {
    // Parsed, not trusted: these tests check what the server really publishes.
    const batch = liveBatchSchema.parse(payload);
    if (batch.jobId !== jobId) return;
    cursor.saw(batch);
    if (batch.kind === 'metrics') for (const m of batch.items) metrics.set(`${m.key}:${m.step}`, m);
  });
  socket.on('connect', () => {
    connects++;
    void (async () => {
      const ack = await socket.emitWithAck('subscribe', { room: runRoom(jobId) });
      if (!ack.ok) throw new Error(ack.error);
      let after = cursor.after;
      for (;;) {
        const got = await trpc<Pick<CatchUp, 'metrics' | 'through' | 'complete'>>(url, team.apiKey, 'runs.since', { teamId: team.teamId, jobId, after }, 'query');
        for (const m of got.metrics) {
          metrics.set(`${m.key}:${m.step}`, { step: m.step, key: m.key, value: m.value });
          cursor.saw(m);
        }
        if (got.complete || !got.through) break;
        after = got.through;
      }
      caughtUp++;
    })().catch(() => {});
  });
  return {
    socket,
    metrics,
    connects: () => connects,
    caughtUp: () => caughtUp,
    close: () => socket.close(),
  };
}

/** Every stored metric of a job as `key:step`, the way watchRun keys them. */
export async function metricKeys(db: Db, jobId: string): Promise<string[]> {
  return (await db.metricPoint.findMany({ where: { jobId }, select: { key: true, step: true }, orderBy: { id: 'asc' } })).map((r) => `${r.key}:${r.step}`);
}

/**
 * A test file's own database, dropped afterwards, and every process the file started killed.
 * Read `.t` inside tests.
 */
/**
 * A server with a short lease, two worker daemons ('a' and 'b') online, and a bandit TRAIN job that
 * has uploaded its first training checkpoint: the starting point of the worker-loss scenarios.
 * Returns the worker holding the job and its runner processes' pids, for the test to kill or stop.
 */
export async function twoWorkersMidRun(db: Db, databaseUrl: string, opts: { leaseSeconds: number; steps: number; checkpointEvery: number }) {
  const team = await seedTeam(db);
  const { url } = await startServer({ databaseUrl, leaseSeconds: opts.leaseSeconds });
  const home = tempDir('whetstone-rel-workers-');
  const workers = { a: startWorker({ url, token: team.workerToken, name: 'a', home }), b: startWorker({ url, token: team.workerToken, name: 'b', home }) };
  await waitUntil('two workers online', async () => (await db.worker.count({ where: { teamId: team.teamId, state: 'ONLINE' } })) === 2);
  const job = await submitTrain(url, team, opts.steps, opts.checkpointEvery);
  const checkpoint = await waitUntil('a training checkpoint', () =>
    db.checkpoint.findFirst({ where: { jobId: job.id, kind: 'TRAINING' }, include: { attempt: { include: { worker: true } } } }), 60_000, 50);
  const attempt = checkpoint.attempt!;
  const holderName = attempt.worker!.name as 'a' | 'b';
  const holder = workers[holderName];
  const runnerPids = execFileSync('pgrep', ['-P', String(holder.child.pid)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  return { team, url, home, workers, job, checkpoint, attempt, holderName, holder, runnerPids };
}

export function useReliabilityDatabase() {
  const state = {} as { t: TestDatabase };
  beforeAll(async () => {
    state.t = await createTestDatabase();
  });
  afterAll(async () => {
    await killAll();
    await state.t?.drop();
  });
  return state;
}
