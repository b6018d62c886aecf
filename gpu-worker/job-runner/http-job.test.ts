/**
 * TRAIN and EVAL jobs on an HTTP environment (its manifest's `server`), through the job runner as
 * the worker runs it: a colour-to-arm game served by a Node HTTP server speaking the protocol of
 * docs/http-environments.md, and one that is down.
 */
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testBackend } from '../test-support/engine/test-setup';
import { testAssignment as assignment } from '../test-support/job-runner/assignments';
import { runJob } from './run-job';
import { JobControl, MemorySink } from './sink';

const COLOURS = ['red', 'green', 'blue', 'yellow'];
const ARM: Record<string, string> = { red: 'C', green: 'A', blue: 'D', yellow: 'B' };

/** The bandit template's game, over HTTP: task_seed picks the colour; the paying arm earns 1. */
function banditServer() {
  const games = new Map<string, string>();
  const calls = { resets: 0, steps: 0, finalized: 0, statsResets: [] as string[] };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
      const send = (value: unknown, status = 200) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.url === '/health') return send({ status: 'healthy' });
      if (req.url?.startsWith('/stats/reset')) return (calls.statsResets.push(new URL(req.url, 'http://x').searchParams.get('job_id') ?? ''), send({}));
      if (req.url === '/reset') {
        calls.resets++;
        const colour = COLOURS[Number(body.task_seed) % COLOURS.length];
        games.set(String(body.instance_id), colour);
        return send({ observation: `colour: ${colour}\narm:`, system_prompt: 'Answer with one letter: A, B, C or D.' });
      }
      if (req.url === '/step') {
        calls.steps++;
        const colour = games.get(String(body.instance_id));
        if (!colour) return send({ detail: 'Call /reset first.' }, 404);
        const arm = String(body.action).trim().charAt(0).toUpperCase();
        return send({ observation: '', reward: arm === ARM[colour] ? 1 : 0, done: true, info: { arm } });
      }
      if (req.url === '/finalize') {
        calls.finalized++;
        games.delete(String(body.instance_id));
        return send({});
      }
      send({ detail: 'no such route' }, 404);
    });
  });
  return { server, calls };
}

/** The environment version a job gets: a manifest naming the servers, and no code to run. */
function httpEnvironment(urls: string[]) {
  return {
    versionId: 'http-bandit-v1',
    files: { 'README.md': 'Served over HTTP.' },
    entry: 'env.ts',
    manifest: {
      name: 'http-bandit',
      version: '1.0.0',
      kind: 'single-turn',
      agents: ['agent'],
      limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 2 },
      server: { urls, timeoutSeconds: 30 },
      training: { algorithm: 'grpo' },
    },
  };
}

const training = { steps: 3, batchSize: 4, groupSize: 4, checkpointEvery: 100, evalEpisodes: 0, warmStart: null, model: { layers: 1, width: 16, heads: 2, contextLength: 72 } };

let server: Server;
let calls: ReturnType<typeof banditServer>['calls'];
let url = '';

beforeAll(async () => {
  await testBackend();
  ({ server, calls } = banditServer());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('jobs on an HTTP environment', () => {
  let trained: MemorySink;

  test('TRAIN: every episode is played on the server (reset, step, finalize), rewards and rollouts are the job’s', async () => {
    trained = new MemorySink();
    const result = await runJob(assignment({ jobId: 'http-job-1', environment: httpEnvironment([url]), config: { environmentVersionId: 'http-bandit-v1', training } }), trained, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    // 3 steps of 4 tasks × 4 samples, each one episode of one step; statistics started once, for this job.
    expect(calls).toMatchObject({ resets: 48, steps: 48, finalized: 48, statsResets: ['http-job-1'] });
    const rewards = trained.items('metrics').filter((m) => m.key === 'reward/mean');
    expect(rewards.map((m) => m.step)).toEqual([1, 2, 3]);
    for (const r of rewards) expect(r.value).toBeGreaterThanOrEqual(0);
    const sample = trained.items('rollouts')[0];
    expect(sample.segments.find((s) => s.role === 'user')?.text).toMatch(/^colour: \w+\narm:$/);
    expect(sample.segments.find((s) => s.role === 'system')?.text).toBe('Answer with one letter: A, B, C or D.');
    expect(trained.checkpoints.some((c) => c.kind === 'SAMPLER')).toBe(true);
  });

  test('EVAL of its checkpoint on the same server', async () => {
    const sampler = trained.checkpoints.find((c) => c.kind === 'SAMPLER')!;
    const sink = new MemorySink();
    sink.blobs.set('k', sampler.bytes);
    const before = calls.steps;
    const result = await runJob(
      assignment({ kind: 'EVAL', jobId: 'http-eval-1', environment: httpEnvironment([url]), blobKeys: { c1: 'k' }, config: { checkpointId: 'c1', environmentVersionId: 'http-bandit-v1', games: 8 } }),
      sink,
      new JobControl(),
    );
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    expect(calls.steps - before).toBe(8);
    expect(sink.items('metrics').some((m) => m.key.startsWith('eval/'))).toBe(true);
  });

  test('a server that is down fails the job at its start, naming the URL', async () => {
    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const goneUrl = `http://127.0.0.1:${(gone.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => gone.close(() => resolve()));
    const environment = httpEnvironment([goneUrl]);
    environment.manifest.server = { urls: [goneUrl], timeoutSeconds: 30, retries: 0 } as typeof environment.manifest.server;
    const result = await runJob(assignment({ environment, config: { environmentVersionId: 'http-bandit-v1', training } }), new MemorySink(), new JobControl());
    expect(result.outcome).toBe('failed');
    expect(result.reason).toMatch(new RegExp(`the environment's server does not answer: environment service ${goneUrl}/health is unavailable: cannot connect \\(ECONNREFUSED\\)`));
  });

  test('a warm start, which imitates bots, is refused with the way out', async () => {
    const result = await runJob(
      assignment({ environment: httpEnvironment([url]), config: { environmentVersionId: 'http-bandit-v1', training: { ...training, warmStart: { from: 'bot', bot: 'oracle', episodes: 4, steps: 1 } } } }),
      new MemorySink(),
      new JobControl(),
    );
    expect(result).toMatchObject({ outcome: 'failed', reason: expect.stringMatching(/an HTTP environment has none: start from a checkpoint/) });
  });
});
