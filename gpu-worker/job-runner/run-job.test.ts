/**
 * The job runner against an in-memory sink: a tiny GRPO run on the bandit template, its streams,
 * its checkpoints, exact resume, preempt and cancel; an SFT run; an evaluation of gomoku games.
 */
import { beforeAll, describe, expect, test } from 'vitest';
import { type z } from 'zod';
import { testBackend } from '../test-support/engine/test-setup';
import { loadTemplate, type TemplateName } from '../../env-templates/load-template';
import { type Assignment, logItemSchema, matchItemSchema, metricItemSchema, rolloutItemSchema } from '../../sdk/worker-protocol';
import { trainJobConfigSchema } from '../../sdk/job-config';
import { trainingDefaultsSchema } from '../../sdk/manifest';
import { runJob } from './run-job';
import { mergeTraining } from './train';
import { JobControl, MemorySink, type MetricItem } from './sink';

beforeAll(async () => {
  await testBackend();
});

function environment(name: TemplateName) {
  const t = loadTemplate(name);
  return { versionId: `${name}-v1`, files: t.source.files, entry: t.source.entry, manifest: t.manifest as unknown as Record<string, unknown> };
}

function assignment(over: Partial<Assignment> & { config: Record<string, unknown> }): Assignment {
  return {
    attemptId: 'att-1',
    fencingToken: '1',
    jobId: 'job-1',
    attempt: 1,
    kind: 'TRAIN',
    deviceIndexes: [0],
    leaseExpiresAt: new Date(Date.now() + 60_000).toISOString(),
    timeLimitSeconds: null,
    resumeFrom: null,
    environment: environment('bandit'),
    ...over,
  };
}

const banditConfig = {
  environmentVersionId: 'bandit-v1',
  model: { layers: 1, width: 16, heads: 2, context: 72 },
  training: { steps: 6, batchSize: 4, groupSize: 4, checkpointEvery: 2, learningRate: 0.01 },
};

/** Metrics that depend only on the computation (not on timing). */
const DETERMINISTIC = ['reward', 'loss', 'policyLoss', 'gradNorm', 'entropy', 'rewardMean', 'responseTokens'];

function series(items: MetricItem[]): Map<string, number> {
  return new Map(items.filter((m) => DETERMINISTIC.includes(m.key)).map((m) => [`${m.step}:${m.key}`, m.value]));
}

function schemaOf(kind: string) {
  return { metrics: metricItemSchema, rollouts: rolloutItemSchema, logs: logItemSchema, matches: matchItemSchema }[kind] as z.ZodType | undefined;
}

test('a job keeps only the training fields it sets, and the manifest gives the rest when it runs', () => {
  const manifest = loadTemplate('bandit').manifest;
  const config = trainJobConfigSchema.parse({ environmentVersionId: 'bandit-v1', training: { algorithm: 'grpo', steps: 5 } });
  expect(config.training).toEqual({ algorithm: 'grpo', steps: 5 });
  const training = mergeTraining(manifest, config.training);
  expect(training).toMatchObject({ steps: 5, learningRate: manifest.training.learningRate, batchSize: manifest.training.batchSize, groupSize: manifest.training.groupSize });
  // The template's own settings, not the documented defaults, which differ from them.
  expect(training.learningRate).not.toBe(trainingDefaultsSchema.parse({}).learningRate);
  expect(mergeTraining(manifest, trainJobConfigSchema.parse({ environmentVersionId: 'bandit-v1' }).training)).toEqual(manifest.training);
});

describe('job runner: TRAIN', () => {
  let full: MemorySink;

  beforeAll(async () => {
    full = new MemorySink();
    const result = await runJob(assignment({ config: banditConfig }), full, new JobControl());
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
  });

  test('emits every step exactly once, valid items, checkpoints at 2, 4 and the end', () => {
    const metrics = full.items('metrics');
    for (let step = 0; step < 6; step++) {
      const keys = metrics.filter((m) => m.step === step).map((m) => m.key);
      expect(new Set(keys).size, `step ${step}`).toBe(keys.length);
      expect(keys).toEqual(expect.arrayContaining(['reward', 'loss', 'rewardMean', 'gradNorm', 'learningRate', 'stepSeconds', 'episodes']));
    }
    expect(new Set(metrics.map((m) => m.step))).toEqual(new Set([0, 1, 2, 3, 4, 5]));
    expect(metrics.find((m) => m.key === 'episodes')?.value).toBe(16);
    // Every item is valid on the wire.
    for (const batch of full.batches) {
      const schema = schemaOf(batch.kind);
      if (schema) for (const item of batch.items) schema.parse(item);
    }
    expect(full.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@2', 'TRAINING@4', 'TRAINING@6', 'SAMPLER@6']);

    const samples = full.items('rollouts');
    expect(samples.filter((s) => s.step === 0)).toHaveLength(4);
    const sample = samples[0];
    expect(sample.segments.some((s) => s.trainable && s.role === 'assistant')).toBe(true);
    expect(sample.segments.find((s) => !s.trainable && s.role === 'user')?.text).toMatch(/^colour: \w+\narm:$/);
    expect(sample.segments.find((s) => s.role === 'system')?.text).toBe('Answer with one letter: A, B, C or D.');
    expect([0, 1]).toContain(sample.reward);

    const logs = full.items('logs');
    expect(logs.map((l) => l.line)).toEqual(logs.map((_, i) => i));
    expect(logs.some((l) => l.message.startsWith('step 5: reward'))).toBe(true);
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
    expect(Math.min(...resumed.map((m) => m.step))).toBe(2);
    const expected = new Map([...series(full.items('metrics'))].filter(([k]) => Number(k.split(':')[0]) >= 2));
    expect(series(resumed)).toEqual(expected);
    expect(sink.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@4', 'TRAINING@6', 'SAMPLER@6']);
  });

  test('preempt: checkpoints at the next step boundary, then stops', async () => {
    const sink = new MemorySink();
    const control = new JobControl();
    sink.onBatch = (kind, items) => {
      if (kind === 'metrics' && (items as MetricItem[]).some((m) => m.step === 2)) control.preempt();
    };
    const result = await runJob(assignment({ config: { ...banditConfig, training: { ...banditConfig.training, checkpointEvery: 100, steps: 20 } } }), sink, control);
    expect(result.outcome).toBe('preempted');
    expect(sink.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@3']);
    expect(Math.max(...sink.items('metrics').map((m) => m.step))).toBe(2);

    // And the checkpoint resumes at step 3.
    const next = new MemorySink();
    next.blobs.set('k', sink.checkpoints[0].bytes);
    const resumed = await runJob(
      assignment({ attempt: 2, config: { ...banditConfig, training: { ...banditConfig.training, steps: 4 } }, resumeFrom: { checkpointId: 'c', storageKey: 'k', step: 3 } }),
      next,
      new JobControl(),
    );
    expect(resumed.outcome).toBe('succeeded');
    expect([...new Set(next.items('metrics').map((m) => m.step))]).toEqual([3]);
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
    const result = await runJob(assignment({ config: { ...banditConfig, model: { layers: 1, width: 16, heads: 3, context: 72 } } }), sink, new JobControl());
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
        config: { datasetVersionId: 'd1', model: { layers: 1, width: 16, heads: 2, context: 32 }, steps: 30, batchSize: 8, learningRate: 0.01, checkpointEvery: 20 },
      }),
      sink,
      new JobControl(),
    );
    expect(result).toEqual({ outcome: 'succeeded', reason: '' });
    const loss = sink.items('metrics').filter((m) => m.key === 'loss');
    expect(loss).toHaveLength(30);
    expect(loss[29].value).toBeLessThan(loss[0].value * 0.5);
    expect(sink.checkpoints.map((c) => `${c.kind}@${c.step}`)).toEqual(['TRAINING@20', 'TRAINING@30', 'SAMPLER@30']);
  });

  test('EVAL of a checkpoint on gomoku: matches against the bot, a score', async () => {
    // A policy to evaluate: the sampler checkpoint of a 1-step run (it plays badly, which is fine).
    const trained = new MemorySink();
    await runJob(
      assignment({ config: { environmentVersionId: 'g', model: { layers: 1, width: 16, heads: 2, context: 512 }, training: { steps: 1, batchSize: 1, groupSize: 2 } }, environment: environment('gomoku') }),
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
    expect(metrics.games + metrics.errors).toBe(4);
    expect(metrics.score).toBe(metrics.winRate);
  });
});
