/**
 * Training on a game served by another language, through the job runner as the worker runs it:
 * the documented Python example (examples/http-environments/math_server.py, FastAPI), a
 * data-dependent math game whose answer reaches the server only as the dataset row's field
 * `ground_truth`, flattened into /reset. A new policy answers no sum right; a warm start on
 * demonstrations from a dataset, then GRPO on the server's rewards, answers them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testBackend } from '../test-support/engine/test-setup';
import { testAssignment as assignment } from '../test-support/job-runner/assignments';
import { pythonAvailable, reportPythonMissing, startPythonExample } from '../test-support/python-examples';
import { runJob } from './run-job';
import { JobControl, MemorySink } from './sink';

reportPythonMissing('training on the Python HTTP environment');

const SYSTEM = 'You solve arithmetic problems.';
const SUMS: Array<[string, string]> = [
  ['What is 1 + 1?', '2'],
  ['What is 2 + 3?', '5'],
  ['What is 3 + 4?', '7'],
  ['What is 4 + 5?', '9'],
];
/** The rows the game is played on: the problem shown first, its answer for the server only. */
const ROWS = SUMS.map(([prompt, answer]) => JSON.stringify({ prompt, ground_truth: answer }));
/** The same problems as SFT demonstrations, laid out as the policy sees them (the row's prompt, then the reset observation). */
const DEMONSTRATIONS = SUMS.map(([prompt, answer]) => JSON.stringify({ system: SYSTEM, prompt: `${prompt}\n\nAnswer with the number only.`, completion: answer }));

function mathOverHttp(url: string) {
  return {
    versionId: 'http-math-v1',
    files: {},
    entry: 'env.ts',
    manifest: {
      name: 'http-math',
      version: '1.0.0',
      kind: 'single-turn',
      agents: ['agent'],
      dataset: { train: 'rows.jsonl' },
      limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 2 },
      server: { urls: [url], timeoutSeconds: 30 },
      training: { algorithm: 'grpo' },
    },
  };
}

const model = { layers: 2, width: 48, heads: 2, contextLength: 96 };
const base = { batchSize: 4, groupSize: 8, learningRate: 0.003, checkpointEvery: 1000, evalEpisodes: 0, seed: 0, model };

describe.skipIf(!pythonAvailable)('jobs on the Python math server', () => {
  let server: Awaited<ReturnType<typeof startPythonExample>> | undefined;
  beforeAll(async () => {
    await testBackend();
    server = await startPythonExample();
  }, 120_000);
  afterAll(() => server?.close());

  const run = async (jobId: string, training: Record<string, unknown>) => {
    const sink = new MemorySink();
    sink.blobs.set('datasets/rows', new TextEncoder().encode(ROWS.join('\n')));
    sink.blobs.set('datasets/demos', new TextEncoder().encode(DEMONSTRATIONS.join('\n')));
    const result = await runJob(
      assignment({ jobId, environment: mathOverHttp(server!.url), blobKeys: { rows: 'datasets/rows', demos: 'datasets/demos' }, config: { environmentVersionId: 'http-math-v1', datasetVersionId: 'rows', training } }),
      sink,
      new JobControl(),
    );
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    return sink.items('metrics').filter((m) => m.key === 'reward/mean').map((m) => m.value);
  };
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

  test('a new policy answers none: the reward the server gives is about 0', async () => {
    const rewards = await run('py-math-new', { ...base, steps: 3, warmStart: null });
    expect(rewards).toHaveLength(3);
    expect(mean(rewards)).toBeLessThan(0.1);
  }, 300_000);

  test('a warm start on a dataset of demonstrations, then GRPO on the server: the reward rises to the right answers', async () => {
    const rewards = await run('py-math-learn', { ...base, steps: 8, warmStart: { from: 'dataset', datasetVersionId: 'demos', steps: 300, batchSize: 4, learningRate: 0.01 } });
    expect(rewards).toHaveLength(8);
    // The warm start alone answers 70–100% of the problems, and which depends on float rounding:
    // on 28 Nov's native kernels seeds 0–3 gave a mean reward of 0.73–1.0 over the GRPO steps (the
    // kernels of the day before: 1.0 for seed 0, 0.41 for seed 2, where GRPO's last two steps undid
    // the warm start); a new policy answers none (the test above). So the bar is well above none,
    // not a figure that one rounding reaches and another misses.
    expect(mean(rewards)).toBeGreaterThan(0.5);
  }, 300_000);
});

describe.skipIf(!pythonAvailable)('self-play on the Python two-player game', () => {
  let server: Awaited<ReturnType<typeof startPythonExample>> | undefined;
  beforeAll(async () => {
    await testBackend();
    server = await startPythonExample('tictactoe');
  }, 120_000);
  afterAll(() => server?.close());

  test('both seats learn with one policy over HTTP: every game is played on the server, its rewards are zero-sum, and it is kept as a match', async () => {
    const environment = {
      versionId: 'http-ttt-v1',
      files: {},
      entry: 'env.ts',
      manifest: {
        name: 'http-ttt',
        version: '1.0.0',
        kind: 'multi-agent',
        agents: ['x', 'o'],
        limits: { maxTurns: 9, maxTokensPerTurn: 2, maxResponseTokens: 18 },
        server: { urls: [server!.url], timeoutSeconds: 30 },
        training: { algorithm: 'grpo' },
      },
    };
    const sink = new MemorySink();
    const training = { steps: 2, batchSize: 2, groupSize: 4, checkpointEvery: 100, evalEpisodes: 0, warmStart: null, learners: ['x', 'o'], model: { layers: 1, width: 16, heads: 2, contextLength: 256 } };
    const result = await runJob(assignment({ jobId: 'py-ttt', environment, config: { environmentVersionId: 'http-ttt-v1', training } }), sink, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    const keys = new Set(sink.items('metrics').map((m) => m.key));
    expect(keys).toContain('reward/x');
    expect(keys).toContain('reward/o');
    const at = (key: string, step: number) => sink.items('metrics').find((m) => m.key === key && m.step === step)!.value;
    for (const step of [1, 2]) expect(at('reward/x', step) + at('reward/o', step)).toBeCloseTo(0, 6);
    expect(sink.items('matches').length).toBeGreaterThan(0);
  }, 300_000);
});
