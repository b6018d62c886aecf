/**
 * The job runner against an in-memory sink: a tiny GRPO run on the bandit template, its streams,
 * its checkpoints, exact resume, preempt and cancel; an SFT run; an evaluation of gomoku games.
 */
import { beforeAll, describe, expect, test } from 'vitest';
import { testBackend } from '../test-support/engine/test-setup';
import { loadTemplate } from '../../env-templates/load-template';
import { templateEnvironment as environment, testAssignment as assignment } from '../test-support/job-runner/assignments';
import { describeMetric, matchItemSchema, type MetricItem, streamItemSchemas } from '../../sdk/live';
import { resolveJobTraining, trainJobConfigSchema } from '../../sdk/job-config';
import { manifestTraining } from '../../sdk/manifest';
import { GRPO_DEFAULTS } from '../engine/grpo';
import { CheckpointStore } from './checkpoints';
import { capText, MAX_STORED_TEXT } from '../../sdk/limits';
import { USER_LOG_BUDGET } from './emit';
import { wilson } from './scores';
import { runJob } from './run-job';
import { JobControl, MemorySink } from './sink';

beforeAll(async () => {
  await testBackend();
});

const banditConfig = {
  environmentVersionId: 'bandit-v1',
  training: { steps: 6, batchSize: 4, groupSize: 4, checkpointEvery: 2, learningRate: 0.01, model: { layers: 1, width: 16, heads: 2, contextLength: 72 } },
};

/** Metrics that depend only on the computation (not on timing). */
const DETERMINISTIC = ['reward/mean', 'loss/total', 'loss/policy', 'optim/grad_norm', 'policy/entropy', 'reward/batch_mean', 'episode/response_tokens'];

function series(items: MetricItem[]): Map<string, number> {
  return new Map(items.filter((m) => DETERMINISTIC.includes(m.key)).map((m) => [`${m.step}:${m.key}`, m.value]));
}

test('a job keeps only the training fields it sets, and the manifest gives the rest when it runs', () => {
  const template = loadTemplate('bandit');
  const config = trainJobConfigSchema.parse({ environmentVersionId: 'bandit-v1', training: { algorithm: 'grpo', steps: 5 } });
  expect(config.training).toEqual({ algorithm: 'grpo', steps: 5 });
  const resolved = resolveJobTraining('TRAIN', config, template.rawManifest);
  if (!resolved.ok || resolved.config.algorithm !== 'grpo') throw new Error('bandit resolves to GRPO');
  const manifest = manifestTraining(template.manifest);
  if (manifest.algorithm !== 'grpo') throw new Error('bandit trains with GRPO');
  expect(resolved.config).toMatchObject({ steps: 5, learningRate: manifest.learningRate, batchSize: manifest.batchSize, groupSize: manifest.groupSize });
  // The template's own settings, not the documented defaults, which differ from them.
  expect(resolved.config.learningRate).not.toBe(GRPO_DEFAULTS.learningRate);
  expect(resolveJobTraining('TRAIN', trainJobConfigSchema.parse({ environmentVersionId: 'bandit-v1' }), template.rawManifest)).toEqual({ ok: true, config: manifest });
});

describe('job runner: TRAIN', () => {
  let full: MemorySink;

  beforeAll(async () => {
    full = new MemorySink();
    const result = await runJob(assignment({ config: banditConfig }), full, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
  });

  test('emits every step exactly once (numbered from 1), valid items, checkpoints at 2, 4 and the end', () => {
    const metrics = full.items('metrics');
    for (let step = 1; step <= 6; step++) {
      const keys = metrics.filter((m) => m.step === step).map((m) => m.key);
      expect(new Set(keys).size, `step ${step}`).toBe(keys.length);
      expect(keys).toEqual(expect.arrayContaining(['reward/mean', 'loss/total', 'reward/batch_mean', 'optim/grad_norm', 'optim/lr', 'perf/step_s', 'episode/count', 'env/valid']));
    }
    expect(new Set(metrics.map((m) => m.step))).toEqual(new Set([1, 2, 3, 4, 5, 6]));
    expect(metrics.find((m) => m.key === 'episode/count')?.value).toBe(16);
    // Every key is the live contract's: catalogued, or of a family (sdk/live.ts).
    expect(metrics.filter((m) => !describeMetric(m.key)).map((m) => m.key)).toEqual([]);
    // Every item is valid on the wire.
    for (const batch of full.batches) for (const item of batch.items) streamItemSchemas[batch.kind].parse(item);
    expect(full.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@2', 'TRAINING@4', 'TRAINING@6', 'SAMPLER@6']);

    const samples = full.items('rollouts');
    expect(samples.filter((s) => s.step === 1)).toHaveLength(4);
    const sample = samples[0];
    expect(sample.segments.some((s) => s.trainable && s.role === 'assistant')).toBe(true);
    expect(sample.segments.find((s) => !s.trainable && s.role === 'user')?.text).toMatch(/^colour: \w+\narm:$/);
    expect(sample.segments.find((s) => s.role === 'system')?.text).toBe('Answer with one letter: A, B, C or D.');
    expect([0, 1]).toContain(sample.reward);
    // The policy's tokens carry the sampler's log-probabilities (the viewer's heat map); the rest do not.
    const written = sample.segments.filter((s) => s.trainable).flatMap((s) => s.tokens ?? []);
    expect(written.length).toBeGreaterThan(0);
    expect(written.every((t) => Number.isFinite(t.logprob) && t.logprob <= 0)).toBe(true);
    expect(written.some((t) => t.logprob < 0)).toBe(true);
    for (const seg of sample.segments) expect(seg.trainable ? seg.tokens?.map((t) => t.text).join('') : seg.tokens).toBe(seg.trainable ? seg.text : undefined);

    const logs = full.items('logs');
    expect(logs.map((l) => l.line)).toEqual(logs.map((_, i) => i));
    // The log numbers steps as the metrics do (sdk/live.ts, stepNumber).
    expect(logs.filter((l) => /^step \d+ of 6: reward/.test(l.message)).map((l) => Number(/^step (\d+)/.exec(l.message)![1]))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  test('checkpoints carry the resolved config: a job without clipHigh trains with the documented 0.28', async () => {
    // An environment whose manifest sets no training option (bandit's sets clipHigh).
    const sink = new MemorySink();
    const env = customEnvironment('plain', 'return completion.length > 0 ? 1 : 0;');
    const result = await runJob(assignment({ config: { ...tinyRun, training: { ...tinyRun.training, steps: 1, learningRate: 0.01 } }, environment: env }), sink, new JobControl());
    expect(result.outcome).toBe('succeeded');
    const store = new CheckpointStore(sink);
    try {
      const ckpt = await store.load(sink.checkpoints.find((c) => c.kind === 'TRAINING')!.storageKey);
      expect(ckpt.note?.training).toMatchObject({ algorithm: 'grpo', clipHigh: 0.28, learningRate: 0.01, model: { layers: 1, width: 16, contextLength: 48 } });
      expect(ckpt.trainerState?.config).toMatchObject({ clipHigh: 0.28, learningRate: 0.01 });
      ckpt.model.dispose();
    } finally {
      store.dispose();
    }
  });

  test('the options a job sets reach the trainer (as its checkpoint records them)', async () => {
    const set = { epochs: 2, miniBatches: 2, entropyCoef: 0.01, dropZeroVarianceGroups: false, warmupSteps: 3, weightDecay: 0.01, gradClip: 0.5, clipHigh: 0.3 };
    const sink = new MemorySink();
    const result = await runJob(assignment({ config: { ...banditConfig, training: { ...banditConfig.training, steps: 1, ...set } } }), sink, new JobControl());
    expect(result.outcome).toBe('succeeded');
    const store = new CheckpointStore(sink);
    try {
      const ckpt = await store.load(sink.checkpoints.find((c) => c.kind === 'TRAINING')!.storageKey);
      expect(ckpt.trainerState?.config).toMatchObject(set);
      expect(ckpt.note?.training).toMatchObject(set);
      ckpt.model.dispose();
    } finally {
      store.dispose();
    }
  });

  test('resumes from the step-2 checkpoint exactly: same step numbers, same metrics', async () => {
    const ckpt = full.checkpoints.find((c) => c.kind === 'TRAINING' && c.step === 2)!;
    const sink = new MemorySink();
    sink.blobs.set('ck/2', ckpt.bytes);
    const result = await runJob(
      assignment({ attemptId: 'att-2', attempt: 2, config: banditConfig, resumeFrom: { checkpointId: 'c2', storageKey: 'ck/2', step: 2 } }),
      sink,
      new JobControl(),
    );
    expect(result.outcome).toBe('succeeded');
    const resumed = sink.items('metrics');
    expect(Math.min(...resumed.map((m) => m.step))).toBe(3);
    const expected = new Map([...series(full.items('metrics'))].filter(([k]) => Number(k.split(':')[0]) >= 3));
    expect(series(resumed)).toEqual(expected);
    expect(sink.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@4', 'TRAINING@6', 'SAMPLER@6']);
  });

  test('preempt: checkpoints at the next step boundary, then stops', async () => {
    const sink = new MemorySink();
    const control = new JobControl();
    sink.onBatch = (kind, items) => {
      if (kind === 'metrics' && (items as MetricItem[]).some((m) => m.step === 3)) control.preempt();
    };
    const result = await runJob(assignment({ config: { ...banditConfig, training: { ...banditConfig.training, checkpointEvery: 100, steps: 20 } } }), sink, control);
    expect(result.outcome).toBe('preempted');
    expect(sink.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@3']);
    expect(Math.max(...sink.items('metrics').map((m) => m.step))).toBe(3);

    // And the checkpoint resumes with step 4.
    const next = new MemorySink();
    next.blobs.set('k', sink.checkpoints[0].bytes);
    const resumed = await runJob(
      assignment({ attempt: 2, config: { ...banditConfig, training: { ...banditConfig.training, steps: 4 } }, resumeFrom: { checkpointId: 'c', storageKey: 'k', step: 3 } }),
      next,
      new JobControl(),
    );
    expect(resumed.outcome).toBe('succeeded');
    expect([...new Set(next.items('metrics').map((m) => m.step))]).toEqual([4]);
  });

  test('cancel: stops without a checkpoint', async () => {
    const sink = new MemorySink();
    const control = new JobControl();
    sink.onBatch = (kind, items) => {
      if (kind === 'metrics' && (items as MetricItem[]).some((m) => m.step === 1)) control.cancel();
    };
    const result = await runJob(assignment({ config: { ...banditConfig, training: { ...banditConfig.training, steps: 20, checkpointEvery: 100 } } }), sink, control);
    expect(result.outcome).toBe('cancelled');
    expect(sink.checkpoints).toEqual([]);
    expect(Math.max(...sink.items('metrics').map((m) => m.step))).toBe(1);
  });

  test('a bad config fails with a reason naming the field', async () => {
    const sink = new MemorySink();
    const result = await runJob(assignment({ config: { ...banditConfig, training: { ...banditConfig.training, model: { layers: 1, width: 16, heads: 3, contextLength: 72 } } } }), sink, new JobControl());
    expect(result.outcome).toBe('failed');
    expect(result.reason).toContain('model.heads');
    expect(sink.items('logs').at(-1)?.level).toBe('error');
  });
});

describe('job runner: SFT and EVAL', () => {
  test('SFT on prompt/completion rows lowers the loss and checkpoints', async () => {
    const rows = ['red:C', 'green:A', 'blue:D', 'yellow:B'].map((p) => {
      const [colour, arm] = p.split(':');
      return JSON.stringify({ prompt: `colour: ${colour}`, completion: arm });
    });
    const sink = new MemorySink();
    sink.blobs.set('datasets/d1', new TextEncoder().encode(rows.join('\n')));
    const result = await runJob(
      assignment({
        kind: 'SFT',
        environment: null,
        blobKeys: { d1: 'datasets/d1' },
        config: { datasetVersionId: 'd1', training: { model: { layers: 1, width: 16, heads: 2, contextLength: 32 }, steps: 30, batchSize: 8, learningRate: 0.01, checkpointEvery: 20 } },
      }),
      sink,
      new JobControl(),
    );
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    const loss = sink.items('metrics').filter((m) => m.key === 'loss/total');
    expect(sink.items('metrics').filter((m) => !describeMetric(m.key)).map((m) => m.key)).toEqual([]);
    expect(loss).toHaveLength(30);
    expect(loss[29].value).toBeLessThan(loss[0].value * 0.5);
    expect(sink.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@20', 'TRAINING@30', 'SAMPLER@30']);
  });

  test('EVAL of a checkpoint on gomoku: matches against the bot, a score', async () => {
    // A policy to evaluate: the sampler checkpoint of a 1-step run (it plays badly, which is fine).
    const trained = new MemorySink();
    await runJob(
      assignment({ config: { environmentVersionId: 'g', training: { steps: 1, batchSize: 1, groupSize: 2, warmStart: null, model: { layers: 1, width: 16, heads: 2, contextLength: 512 } } }, environment: environment('gomoku') }),
      trained,
      new JobControl(),
    );
    expect(trained.items('matches').length).toBeGreaterThan(0);
    expect(trained.items('boards').length).toBeGreaterThan(0);
    const sampler = trained.checkpoints.find((c) => c.kind === 'SAMPLER')!;
    const sink = new MemorySink();
    sink.blobs.set('k', sampler.bytes);
    const result = await runJob(
      assignment({ kind: 'EVAL', environment: environment('gomoku'), blobKeys: { c1: 'k' }, config: { checkpointId: 'c1', environmentVersionId: 'g', against: 'random', games: 4 } }),
      sink,
      new JobControl(),
    );
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    const matches = sink.items('matches');
    expect(matches).toHaveLength(4);
    for (const m of matches) matchItemSchema.parse(m);
    expect(matches[0].agents).toEqual([{ name: 'black', policy: 'policy' }, { name: 'white', policy: 'bot:random' }]);
    expect(matches[1].agents).toEqual([{ name: 'black', policy: 'bot:random' }, { name: 'white', policy: 'policy' }]);
    expect(matches[0].moves.length).toBeGreaterThan(0);
    const metrics = Object.fromEntries(sink.items('metrics').map((m) => [m.key, m.value]));
    expect(metrics['eval/games'] + metrics['eval/errors']).toBe(4);
    expect(metrics['eval/score']).toBe(metrics['eval/win_rate']);
    expect(Object.keys(metrics)).toEqual(expect.arrayContaining(['eval/win_rate/black', 'eval/win_rate/white']));
    expect(Object.keys(metrics).filter((k) => !describeMetric(k))).toEqual([]);
    // Wins, draws and losses add up; the template offers its legal moves and the policy is held to them.
    expect(metrics['eval/wins'] + metrics['eval/draws'] + metrics['eval/losses']).toBe(metrics['eval/games']);
    expect(metrics['eval/legal_move_rate']).toBe(1);
    expect(metrics['eval/mean_length']).toBeGreaterThanOrEqual(1);
    expect(matches.every((m) => !/invalid move/.test(endReasonOf(m)))).toBe(true);
  });
});

test('a pool:policy opponent plays past snapshots of the learner, both colours, every move legal', { timeout: 300_000 }, async () => {
  const sink = new MemorySink();
  const training = {
    steps: 3, batchSize: 2, groupSize: 2, evalEpisodes: 0, warmStart: null, opponents: { 'pool:policy': 1 }, poolEvery: 1, poolSize: 2,
    model: { layers: 1, width: 16, heads: 2, contextLength: 192 },
  };
  const result = await runJob(assignment({ config: { environmentVersionId: 'g', training }, environment: environment('gomoku') }), sink, new JobControl(), { matchesPerStep: 4 });
  expect(result).toEqual({ outcome: 'succeeded', reason: '' });
  const matches = sink.items('matches');
  expect(matches.length).toBeGreaterThan(0);
  const opponents = matches.flatMap((m) => m.agents.map((a) => a.policy)).filter((p) => p !== 'policy');
  expect(opponents).toHaveLength(matches.length);
  // A snapshot before each step (0, 1, 2), at most 2 kept: the last step no longer plays step 0's.
  expect(opponents.every((p) => /^pool:policy@[0-2]$/.test(p))).toBe(true);
  expect(matches.filter((m) => m.step === 3).flatMap((m) => m.agents.map((a) => a.policy))).not.toContain('pool:policy@0');
  // switchSeats is the template's default: the learner played both colours.
  expect(new Set(matches.flatMap((m) => m.agents.filter((a) => a.policy === 'policy').map((a) => a.name)))).toEqual(new Set(['black', 'white']));
  expect(matches.every((m) => !/invalid move/.test(endReasonOf(m)))).toBe(true);
});

test('a checkpoint:<id> opponent is a saved checkpoint that plays the other colour, never learning, every move legal', { timeout: 300_000 }, async () => {
  const model = { layers: 1, width: 16, heads: 2, contextLength: 192 };
  // The opponent: the sampler checkpoint of a 1-step run (it plays badly, which is fine).
  const earlier = new MemorySink();
  await runJob(assignment({ config: { environmentVersionId: 'g', training: { steps: 1, batchSize: 1, groupSize: 2, warmStart: null, evalEpisodes: 0, model } }, environment: environment('gomoku') }), earlier, new JobControl());
  const opponent = earlier.checkpoints.find((c) => c.kind === 'SAMPLER')!;
  const sink = new MemorySink();
  sink.blobs.set('k', opponent.bytes);
  const training = { steps: 2, batchSize: 2, groupSize: 2, evalEpisodes: 0, warmStart: null, learners: ['black'], switchSeats: false, opponents: { 'checkpoint:c1': 1 }, model };
  const job = (config: Record<string, unknown>, on: MemorySink) =>
    runJob(assignment({ config: { environmentVersionId: 'g', training: config }, environment: environment('gomoku'), blobKeys: { c1: 'k' } }), on, new JobControl(), { matchesPerStep: 4 });
  expect(await job(training, sink)).toEqual({ outcome: 'succeeded', reason: '' });
  const matches = sink.items('matches');
  expect(matches.length).toBeGreaterThan(0);
  for (const m of matches) expect(m.agents).toEqual([{ name: 'black', policy: 'policy' }, { name: 'white', policy: 'checkpoint:c1' }]);
  expect(matches.every((m) => m.moves.some((move) => move.agent === 'white' && !move.byBot))).toBe(true);
  expect(matches.every((m) => !/invalid move/.test(endReasonOf(m)))).toBe(true);

  // A checkpoint whose context is shorter than the policy's cannot read its prompts: the job says so.
  const longer = new MemorySink();
  longer.blobs.set('k', opponent.bytes);
  expect(await job({ ...training, model: { ...model, contextLength: 256 } }, longer)).toMatchObject({
    outcome: 'failed', reason: expect.stringMatching(/opponent "checkpoint:c1" has a context of 192 tokens, shorter than the policy's 256/),
  });
});

/** Why a match ended, as the environment's final info says (gomoku: "5 in a row", "invalid move by …"). */
function endReasonOf(m: { result: Record<string, unknown> }): string {
  const reason = (m.result.info as Record<string, unknown> | null)?.reason;
  expect(typeof reason).toBe('string');
  return reason as string;
}

/** A single-turn environment whose reward is `reward` (source text), on a 1-layer policy. */
function customEnvironment(name: string, reward: string) {
  const code = `import { defineSingleTurn } from 'whetstone';
export default defineSingleTurn<{ n: number }>({
  name: '${name}',
  systemPrompt: 'Say anything.',
  sample: (rng) => ({ n: rng.int(0, 10) }),
  prompt: (task) => 'n ' + task.n,
  reward: (_prompt, completion, task) => { ${reward} },
});
`;
  return { versionId: `${name}-v1`, files: { 'env.ts': code }, entry: 'env.ts', manifest: { name, version: '1.0.0', kind: 'single-turn', limits: { maxTurns: 1, maxTokensPerTurn: 2, maxResponseTokens: 2 } } };
}

const tinyRun = { environmentVersionId: 'x', training: { steps: 12, batchSize: 4, groupSize: 4, checkpointEvery: 100, model: { layers: 1, width: 16, heads: 2, contextLength: 48 } } };

describe('job runner: honest outcomes', () => {
  test('a run whose episodes mostly fail ends FAILED naming the most frequent error, at the user line', async () => {
    const sink = new MemorySink();
    const env = customEnvironment('flaky', "if (task.n < 8) throw new Error('reward exploded'); return 0;");
    const result = await runJob(assignment({ config: tinyRun, environment: env }), sink, new JobControl());
    expect(result.outcome).toBe('failed');
    expect(result.reason).toMatch(/^\d+% of episodes failed by step 1 \(more than maxEpisodeErrorShare 0.5\); most frequent: "step threw Error: reward exploded \(env\.ts:7:\d+\)" \(×\d+\)$/);
  });

  test("a bad reward in training is reported at the user's return statement", async () => {
    const body = "return (task.n >= 0 ? 'high' : 0) as number;";
    const env = customEnvironment('bad-return', body);
    const line = env.files['env.ts'].split('\n').findIndex((l) => l.includes(body));
    const column = env.files['env.ts'].split('\n')[line].indexOf('return') + 1;
    const result = await runJob(assignment({ config: tinyRun, environment: env }), new MemorySink(), new JobControl());
    expect(result.outcome).toBe('failed');
    expect(result.reason).toContain(`"step returned reward "high"; a reward must be a finite number (env.ts:${line + 1}:${column})"`);
  });

  test('a run where every group gets equal rewards is warned, with what to try', async () => {
    const sink = new MemorySink();
    const env = customEnvironment('flat', 'return 1;');
    const result = await runJob(assignment({ config: { ...tinyRun, training: { ...tinyRun.training, steps: 3, flatRewardWarnSteps: 3 } }, environment: env }), sink, new JobControl());
    expect(result.outcome).toBe('succeeded');
    const warnings = sink.items('logs').filter((l) => l.level === 'warn').map((l) => l.message);
    expect(warnings).toEqual([expect.stringMatching(/^in each of the first 3 steps every group's episodes got the same reward, so GRPO had nothing to learn from .*warm start/)]);
  });

  test('a log-flooding environment keeps its budget, and the log says how many lines were dropped', async () => {
    const sink = new MemorySink();
    const env = customEnvironment('chatty', "for (let i = 0; i < 150; i++) console.log('x'.repeat(1500) + i); return 0;");
    const result = await runJob(assignment({ config: { ...tinyRun, training: { ...tinyRun.training, steps: 3, flatRewardWarnSteps: 0, evalEpisodes: 0 } }, environment: env }), sink, new JobControl());
    expect(result.outcome).toBe('succeeded');
    const logs = sink.items('logs');
    const fromEnv = logs.filter((l) => l.message.startsWith('[env'));
    // 16 episodes × 150 lines a step were written; 200 a step are kept.
    expect(fromEnv.length).toBeLessThanOrEqual(3 * USER_LOG_BUDGET.perFlush);
    const notices = logs.filter((l) => / environment log lines dropped /.test(l.message));
    expect(notices.length).toBeGreaterThanOrEqual(3);
    const dropped = notices.map((l) => Number(/^(\d+) environment log lines dropped/.exec(l.message)![1])).reduce((a, b) => a + b, 0);
    expect(dropped + fromEnv.length).toBe(3 * 16 * 150);
  });

  test('an evaluation whose games all fail is FAILED', async () => {
    const trained = new MemorySink();
    const env = customEnvironment('breaks', "if (completion === '\\u0000never') return 1; throw new Error('no reward today');");
    const train = { ...tinyRun, training: { ...tinyRun.training, steps: 1, maxEpisodeErrorShare: 1 } };
    expect((await runJob(assignment({ config: train, environment: env }), trained, new JobControl())).outcome).toBe('succeeded');
    const sampler = trained.checkpoints.find((c) => c.kind === 'SAMPLER')!;
    const sink = new MemorySink();
    sink.blobs.set('k', sampler.bytes);
    const result = await runJob(
      assignment({ kind: 'EVAL', environment: env, blobKeys: { c1: 'k' }, config: { checkpointId: 'c1', environmentVersionId: 'x', games: 6 } }),
      sink,
      new JobControl(),
    );
    expect(result).toMatchObject({ outcome: 'failed', reason: expect.stringMatching(/^every one of the 6 games failed; most frequent: "step threw Error: no reward today \(env\.ts:7:\d+\)" \(×6\)$/) });
  });
});

test('texts stored in rollouts, matches and boards are cut with a marker past MAX_STORED_TEXT', () => {
  const long = 'x'.repeat(MAX_STORED_TEXT + 5000);
  expect(capText(long)).toBe(`${'x'.repeat(MAX_STORED_TEXT)}… [5000 more characters not stored]`);
  expect(capText('short')).toBe('short');
});

test('evaluation intervals: Wilson for rates', () => {
  const [low, high] = wilson(8, 10);
  expect(low).toBeCloseTo(0.4902, 3);
  expect(high).toBeCloseTo(0.9433, 3);
  expect(wilson(0, 0)).toEqual([0, 0]);
  expect(wilson(50, 50)[1]).toBe(1);
});

test('a single-agent evaluation reports mean return and success with intervals, not win rates', async () => {
  const trained = new MemorySink();
  expect((await runJob(assignment({ config: { ...banditConfig, training: { ...banditConfig.training, steps: 1 } } }), trained, new JobControl())).outcome).toBe('succeeded');
  const sink = new MemorySink();
  sink.blobs.set('k', trained.checkpoints.find((c) => c.kind === 'SAMPLER')!.bytes);
  const result = await runJob(assignment({ kind: 'EVAL', blobKeys: { c1: 'k' }, config: { checkpointId: 'c1', environmentVersionId: 'bandit-v1', games: 12 } }), sink, new JobControl());
  expect(result.outcome).toBe('succeeded');
  const keys = sink.items('metrics').map((m) => m.key);
  expect(keys).toEqual(expect.arrayContaining(['eval/mean_return', 'eval/mean_return_low', 'eval/mean_return_high', 'eval/success_rate', 'eval/success_rate_low', 'eval/success_rate_high']));
  expect(keys.some((k) => k.startsWith('eval/win'))).toBe(false);
  expect(sink.items('logs').some((l) => /^mean return [\d.-]+ \(95% [\d.-]+–[\d.-]+\), success [\d.]+ \(95% [\d.]+–[\d.]+\) over 12 episodes/.test(l.message))).toBe(true);
});

test('a data-dependent environment is evaluated on its held-out rows; without them the job says what it needs', async () => {
  // (Without the template's warm start, warmStart null: these runs are about evaluation.)
  const math = loadTemplate('math');
  const trained = new MemorySink();
  trained.blobs.set('train', new TextEncoder().encode(math.datasetFiles['data/train.jsonl']));
  const train = { environmentVersionId: 'math-v1', datasetVersionId: 'dtrain', training: { warmStart: null, steps: 1, batchSize: 2, groupSize: 2, model: { layers: 1, width: 16, heads: 2, contextLength: 48 } } };
  expect((await runJob(assignment({ config: train, environment: environment('math'), blobKeys: { dtrain: 'train' } }), trained, new JobControl())).outcome).toBe('succeeded');
  const checkpoint = trained.checkpoints.find((c) => c.kind === 'SAMPLER')!.bytes;

  const sink = new MemorySink();
  sink.blobs.set('k', checkpoint);
  sink.blobs.set('held', new TextEncoder().encode(math.datasetFiles['data/held-out.jsonl']));
  const evalConfig = { checkpointId: 'c1', environmentVersionId: 'math-v1', games: 6, datasetVersionId: 'dheld' };
  const result = await runJob(assignment({ kind: 'EVAL', environment: environment('math'), blobKeys: { c1: 'k', dheld: 'held' }, config: evalConfig }), sink, new JobControl());
  expect(result.outcome).toBe('succeeded');
  expect(sink.items('metrics').find((m) => m.key === 'eval/games')?.value).toBe(6);

  const without = new MemorySink();
  without.blobs.set('k', checkpoint);
  const refused = await runJob(assignment({ kind: 'EVAL', environment: environment('math'), blobKeys: { c1: 'k' }, config: { ...evalConfig, datasetVersionId: undefined } }), without, new JobControl());
  expect(refused).toMatchObject({ outcome: 'failed', reason: expect.stringMatching(/math reads dataset rows: the eval config needs datasetVersionId \(its held-out split, data\/held-out\.jsonl\)/) });
});

test('a training run evaluates its policy every evalEvery steps and after the last, as eval/ metrics', async () => {
  const sink = new MemorySink();
  const config = { ...banditConfig, training: { ...banditConfig.training, steps: 4, evalEvery: 3, evalEpisodes: 8 } };
  expect((await runJob(assignment({ config }), sink, new JobControl())).outcome).toBe('succeeded');
  const evals = sink.items('metrics').filter((m) => m.key === 'eval/success_rate');
  expect(evals.map((m) => m.step)).toEqual([3, 4]);
  expect(sink.items('metrics').filter((m) => m.key === 'eval/games').map((m) => m.value)).toEqual([8, 8]);
  expect(sink.items('logs').filter((l) => l.message.startsWith('evaluation after step')).length).toBe(2);

  // A data-dependent environment without held-out rows says so and trains on.
  const math = loadTemplate('math');
  const mathSink = new MemorySink();
  mathSink.blobs.set('train', new TextEncoder().encode(math.datasetFiles['data/train.jsonl']));
  const mathRun = { environmentVersionId: 'math-v1', datasetVersionId: 'dtrain', training: { warmStart: null, steps: 1, batchSize: 2, groupSize: 2, model: { layers: 1, width: 16, heads: 2, contextLength: 48 } } };
  expect((await runJob(assignment({ config: mathRun, environment: environment('math'), blobKeys: { dtrain: 'train' } }), mathSink, new JobControl())).outcome).toBe('succeeded');
  expect(mathSink.items('logs').some((l) => l.level === 'warn' && /no evaluation during training: this environment reads dataset rows and the job names no held-out rows \(evalDatasetVersionId\)/.test(l.message))).toBe(true);
});
