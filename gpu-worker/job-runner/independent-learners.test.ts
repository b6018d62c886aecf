/**
 * Two independently learning agents (training.independentLearners): black and white on a small
 * gomoku, each with a policy and an optimiser of its own, through the job runner. Their rewards
 * sum to zero at every step (the game is zero-sum), both policies learn and become different,
 * each is checkpointed on its own, and a resumed attempt restores both exactly.
 */
import { beforeAll, describe, expect, test } from 'vitest';
import { testBackend } from '../test-support/engine/test-setup';
import { templateEnvironment, testAssignment } from '../test-support/job-runner/assignments';
import { GPT, type LanguageModel } from '../engine/model';
import { CharTokenizer } from '../engine/tokenizer';
import { agentRewardKey, agentWinRateKey, describeMetric, type MetricItem } from '../../sdk/live';
import { resolveJobTraining } from '../../sdk/job-config';
import { CheckpointStore } from './checkpoints';
import { runJob } from './run-job';
import { JobControl, MemorySink } from './sink';

beforeAll(async () => {
  await testBackend();
});

// 5 × 5, three in a row (as learning-gomoku.test.ts): games are decided in a few moves, so most
// episodes have a winner and GRPO's groups have a signal.
const VARIANT = `import { createGomoku } from './env';\nexport default createGomoku({ size: 5, winLength: 3, instructions: 'brief' });\n`;
const gomoku = templateEnvironment('gomoku');
const environment = {
  ...gomoku,
  files: { ...gomoku.files, 'variant.ts': VARIANT },
  entry: 'variant.ts',
  manifest: { ...gomoku.manifest, limits: { maxTurns: 13, maxTokensPerTurn: 16, maxResponseTokens: 208 } },
};
const model = { layers: 1, width: 16, heads: 2, contextLength: 256 };
const training = {
  steps: 3, batchSize: 2, groupSize: 4, checkpointEvery: 2, learningRate: 0.01, evalEpisodes: 0, warmStart: null,
  learners: ['black', 'white'], independentLearners: true, switchSeats: false, seed: 3, model,
};
const config = { environmentVersionId: 'gomoku-v1', training };

/** Largest absolute difference between two models' weights. */
function distance(a: LanguageModel, b: LanguageModel): number {
  let max = 0;
  for (const [name, w] of a.params) {
    const x = w.dataSync();
    const y = b.params.get(name)!.dataSync();
    for (let i = 0; i < x.length; i++) max = Math.max(max, Math.abs(x[i] - y[i]));
  }
  return max;
}

const at = (metrics: MetricItem[], step: number, key: string) => metrics.find((m) => m.step === step && m.key === key)?.value;

describe('independent learners on gomoku', () => {
  let full: MemorySink;

  beforeAll(async () => {
    full = new MemorySink();
    expect(await runJob(testAssignment({ config, environment }), full, new JobControl())).toEqual({ outcome: 'succeeded', reason: '' });
  }, 120_000);

  test("the two agents' rewards sum to zero at every step; each has its own reward and win rate", () => {
    const metrics = full.items('metrics');
    for (let step = 1; step <= 3; step++) {
      const black = at(metrics, step, agentRewardKey('black'));
      const white = at(metrics, step, agentRewardKey('white'));
      expect(black, `step ${step}`).toBeTypeOf('number');
      expect(black! + white!, `step ${step}`).toBeCloseTo(0, 10);
      const wins = [at(metrics, step, agentWinRateKey('black')), at(metrics, step, agentWinRateKey('white'))];
      expect(wins.every((w) => w !== undefined && w >= 0 && w <= 1)).toBe(true);
      expect(wins[0]! + wins[1]!).toBeLessThanOrEqual(1);
    }
    // Some games were decided: otherwise there would be nothing to learn from.
    expect(metrics.some((m) => m.key === agentRewardKey('black') && m.value !== 0)).toBe(true);
    expect(metrics.filter((m) => !describeMetric(m.key)).map((m) => m.key)).toEqual([]);
    // Both played as policies of their own.
    const seats = full.items('matches').flatMap((m) => m.agents);
    expect(new Set(seats.map((a) => `${a.name}:${a.policy}`))).toEqual(new Set(['black:black', 'white:white']));
  });

  test('one checkpoint per learner at each step, the first learner’s written last (the run’s)', () => {
    expect(full.checkpoints.map((c) => `${c.kind}@${c.step}:${c.agent}`)).toEqual([
      'TRAINING@2:white', 'TRAINING@2:black', 'TRAINING@3:white', 'TRAINING@3:black', 'SAMPLER@3:white', 'SAMPLER@3:black',
    ]);
  });

  test('both policies learned, from the same initial model, and differ from each other', async () => {
    const store = new CheckpointStore(full);
    const tok = new CharTokenizer();
    const initial = new GPT({ ...model, mlpRatio: 4, dropout: 0, tiedHead: true, vocabSize: tok.vocabSize, valueHead: false, seed: 3 });
    const [white, black] = await Promise.all(full.checkpoints.filter((c) => c.kind === 'SAMPLER').map((c) => store.load(c.storageKey)));
    try {
      expect(distance(black.model, initial)).toBeGreaterThan(1e-4);
      expect(distance(white.model, initial)).toBeGreaterThan(1e-4);
      expect(distance(black.model, white.model)).toBeGreaterThan(1e-4);
      const notes = await Promise.all(full.checkpoints.filter((c) => c.kind === 'TRAINING' && c.step === 3).map((c) => store.load(c.storageKey)));
      expect(notes.map((n) => n.note?.agent)).toEqual(['white', 'black']);
      expect(notes.every((n) => n.trainerState !== null)).toBe(true);
      notes.forEach((n) => n.model.dispose());
    } finally {
      [initial, white.model, black.model].forEach((m) => m.dispose());
      store.dispose();
    }
  });

  test('a resumed attempt restores each learner from its own checkpoint: step 3 as the uninterrupted run', async () => {
    const [white, black] = full.checkpoints.filter((c) => c.kind === 'TRAINING' && c.step === 2);
    const sink = new MemorySink();
    sink.blobs.set('w2', white.bytes);
    sink.blobs.set('b2', black.bytes);
    const agents = { white: { checkpointId: 'cw', storageKey: 'w2' }, black: { checkpointId: 'cb', storageKey: 'b2' } };
    const resumeFrom = { checkpointId: 'cw', storageKey: 'w2', step: 2, agents };
    const result = await runJob(testAssignment({ attemptId: 'att-2', attempt: 2, config, environment, resumeFrom }), sink, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    const keys = ['reward/mean', agentRewardKey('black'), agentRewardKey('white'), 'loss/total', 'optim/grad_norm'];
    const resumed = sink.items('metrics');
    expect(Math.min(...resumed.map((m) => m.step))).toBe(3);
    for (const key of keys) expect(at(resumed, 3, key), key).toBe(at(full.items('metrics'), 3, key));
    expect(sink.checkpoints.map((c) => `${c.kind}@${c.step}:${c.agent}`)).toEqual(['TRAINING@3:white', 'TRAINING@3:black', 'SAMPLER@3:white', 'SAMPLER@3:black']);

    // Without white's own checkpoint its policy would be lost: the attempt says so rather than restart it.
    const partial = new MemorySink();
    partial.blobs.set('w2', white.bytes);
    const missing = await runJob(
      testAssignment({ attemptId: 'att-3', attempt: 3, config, environment, resumeFrom: { ...resumeFrom, agents: { white: agents.white } } }),
      partial,
      new JobControl(),
    );
    expect(missing).toMatchObject({ outcome: 'failed', reason: expect.stringMatching(/cannot resume learner "black"/) });
  }, 60_000);
});

test('with PPO too: each learner has its own critic (the value head comes with the copy)', { timeout: 60_000 }, async () => {
  const sink = new MemorySink();
  const ppo = { ...training, algorithm: 'ppo', steps: 1, checkpointEvery: 1 };
  expect(await runJob(testAssignment({ config: { ...config, training: ppo }, environment }), sink, new JobControl())).toEqual({ outcome: 'succeeded', reason: '' });
  expect(sink.checkpoints.map((c) => `${c.kind}:${c.agent}`)).toEqual(['TRAINING:white', 'TRAINING:black', 'SAMPLER:white', 'SAMPLER:black']);
  const store = new CheckpointStore(sink);
  try {
    const loaded = await Promise.all(sink.checkpoints.filter((c) => c.kind === 'TRAINING').map((c) => store.load(c.storageKey)));
    expect(loaded.map((l) => [l.trainerState?.algorithm, l.model.hasValueHead])).toEqual([['ppo', true], ['ppo', true]]);
    loaded.forEach((l) => l.model.dispose());
  } finally {
    store.dispose();
  }
});

test('independentLearners is refused where it makes no sense, with what to write', () => {
  const problems = (over: Record<string, unknown>) => {
    const r = resolveJobTraining('TRAIN', { training: over }, gomoku.manifest);
    return r.ok ? [] : r.problems;
  };
  // The template's one learner and its switchSeats.
  expect(problems({ independentLearners: true })).toEqual([
    expect.stringMatching(/^independentLearners: needs two or more learners.*one learner already has a policy of its own/),
    expect.stringMatching(/^switchSeats: with independentLearners each policy keeps its own seat; set switchSeats to false/),
  ]);
  expect(problems({ independentLearners: true, learners: ['black', 'black'], switchSeats: false })).toEqual([expect.stringMatching(/^learners: an agent is named twice/)]);
  expect(problems({ independentLearners: true, learners: ['black', 'white'], switchSeats: false })).toEqual([]);
  // Off, the same learners share one policy as before.
  expect(problems({ learners: ['black', 'white'], switchSeats: false })).toEqual([]);
});
