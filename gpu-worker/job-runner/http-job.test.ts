/**
 * TRAIN and EVAL jobs on an HTTP environment (its manifest's `server`), through the job runner as
 * the worker runs it: a colour-to-arm game served by a Node HTTP server speaking the protocol of
 * docs/http-environments.md, and one that is down.
 */
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testBackend } from '../test-support/engine/test-setup';
import { startHttpBandit } from '../test-support/http-bandit-server';
import { testAssignment as assignment } from '../test-support/job-runner/assignments';
import { runJob } from './run-job';
import { JobControl, MemorySink } from './sink';

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

let bandit: Awaited<ReturnType<typeof startHttpBandit>>;
let calls: typeof bandit.calls;
let url = '';

beforeAll(async () => {
  await testBackend();
  bandit = await startHttpBandit();
  ({ calls, url } = bandit);
});
afterAll(() => bandit?.close());

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

  // GRPO from a new policy learns the game through the server alone: the reward the server gives
  // rises from what guessing gets (measured: 0.03 → 0.8–1.0 over 80 steps, 40 s at load 4).
  test('GRPO learns the game over HTTP: the reward rises', async () => {
    const sink = new MemorySink();
    const learning = { steps: 60, batchSize: 8, groupSize: 8, learningRate: 0.003, checkpointEvery: 1000, evalEpisodes: 0, warmStart: null, seed: 0, model: { layers: 2, width: 64, heads: 2, contextLength: 72 } };
    const result = await runJob(assignment({ jobId: 'http-learn', environment: httpEnvironment([url]), config: { environmentVersionId: 'http-bandit-v1', training: learning } }), sink, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    const rewards = sink.items('metrics').filter((m) => m.key === 'reward/mean').map((m) => m.value);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(rewards).toHaveLength(60);
    expect(mean(rewards.slice(0, 10))).toBeLessThan(0.25);
    expect(mean(rewards.slice(-10))).toBeGreaterThan(0.5);
  }, 600_000);

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

  test("headers from team secrets: the job asks for its team's values and sends them with every call; a missing one fails the job, naming it", async () => {
    const guarded = await startHttpBandit({ token: 'tok-0123456789' });
    try {
      const environment = httpEnvironment([guarded.url]);
      const server = { urls: [guarded.url], timeoutSeconds: 30, headers: { Authorization: { secret: 'BANDIT_TOKEN', prefix: 'Bearer ' }, 'X-Client': 'whetstone-test' } };
      environment.manifest.server = server as typeof environment.manifest.server;
      const config = { environmentVersionId: 'http-bandit-v1', training: { ...training, steps: 1 } };
      const sink = new MemorySink();
      sink.secrets = { BANDIT_TOKEN: 'tok-0123456789', UNRELATED: 'x' };
      expect(await runJob(assignment({ environment, config }), sink, new JobControl())).toEqual({ outcome: 'succeeded', reason: '' });
      expect([...guarded.calls.authorizations]).toEqual(['Bearer tok-0123456789']);
      expect(guarded.calls.steps).toBe(16);

      const unset = await runJob(assignment({ environment, config }), new MemorySink(), new JobControl());
      expect(unset.outcome).toBe('failed');
      expect(unset.reason).toMatch(/the team secret BANDIT_TOKEN, which is not set: a team admin sets it under the team's Secrets/);
      expect(guarded.calls.steps).toBe(16);

      // A wrong value: the server's refusal is the job's failure, without the value.
      const wrong = new MemorySink();
      wrong.secrets = { BANDIT_TOKEN: 'not-the-token' };
      const refused = await runJob(assignment({ environment, config }), wrong, new JobControl());
      expect(refused).toMatchObject({ outcome: 'failed', reason: expect.stringContaining('/health answered HTTP 401') });
      expect(refused.reason).not.toContain('not-the-token');
      expect(JSON.stringify(wrong.batches)).not.toContain('not-the-token');
    } finally {
      await guarded.close();
    }
  });

  test('a warm start, which imitates bots, is refused with the way out', async () => {
    const result = await runJob(
      assignment({ environment: httpEnvironment([url]), config: { environmentVersionId: 'http-bandit-v1', training: { ...training, warmStart: { from: 'bot', bot: 'oracle', episodes: 4, steps: 1 } } } }),
      new MemorySink(),
      new JobControl(),
    );
    expect(result).toMatchObject({ outcome: 'failed', reason: expect.stringMatching(/an HTTP environment has none: warm-start from a dataset of demonstrations/) });
  });
});
