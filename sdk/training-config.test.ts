/**
 * The one training config: every engine option can be set from a job, defaults are the documented
 * ones, and bad or old option names are refused with what to write instead.
 */
import { describe, expect, test } from 'vitest';
import type { z } from 'zod';
import { MODEL_DEFAULTS } from '../gpu-worker/engine/config';
import { GRPO_DEFAULTS, resolveGRPOConfig } from '../gpu-worker/engine/grpo';
import { PPO_DEFAULTS, resolvePPOConfig } from '../gpu-worker/engine/ppo';
import { SFT_DEFAULTS, resolveSFTConfig } from '../gpu-worker/engine/sft';
import { jobConfigSchemas, resolveJobTraining } from './job-config';
import { parseManifest } from './manifest';
import {
  type Algorithm,
  applySet,
  describeOptions,
  grpoOptionsSchema,
  pickOptions,
  ppoOptionsSchema,
  resolveTraining,
  sftOptionsSchema,
  type TrainingConfig,
  type TrainingOverrides,
} from './training-config';

const manifest = { training: { algorithm: 'grpo', steps: 60, learningRate: 0.003 } };

function resolveJob(kind: 'TRAIN' | 'SFT', training: Record<string, unknown>): TrainingConfig {
  const r = resolveJobTraining(kind, { training }, kind === 'TRAIN' ? manifest : undefined);
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
}

/** A valid value of `option` other than its default, found by resolving candidates. */
function anotherValue(kind: 'TRAIN' | 'SFT', algorithm: Algorithm, option: string, current: unknown): unknown {
  const candidates =
    typeof current === 'boolean'
      ? [!current]
      : typeof current === 'number'
        ? [current / 2, current + 1, current * 2, 0.5, 1, 2, 3, 0]
        : ['k1', 'k3', 'seq-mean-token-mean', 'seq-sum-norm', 'token-mean'];
  for (const value of candidates) {
    if (value === current) continue;
    const overrides = option.startsWith('model.') ? { algorithm, model: { [option.slice(6)]: value } } : { algorithm, [option]: value };
    if (resolveJobTraining(kind, { training: overrides }, kind === 'TRAIN' ? manifest : undefined).ok) return value;
  }
  throw new Error(`no other valid value for ${option}`);
}

describe('every engine option can be set from a job', () => {
  // The engine's config types, walked through their defaults objects: a new engine option that the
  // sdk's schemas do not carry fails here. Derived model fields are set by the runner, not a job.
  const DERIVED_MODEL_FIELDS = ['valueHead', 'seed'];
  const cases: Array<[Algorithm, 'TRAIN' | 'SFT', Record<string, unknown>, z.ZodObject, (c: TrainingConfig) => Record<string, unknown>]> = [
    ['grpo', 'TRAIN', GRPO_DEFAULTS, grpoOptionsSchema, (c) => resolveGRPOConfig(pickOptions(grpoOptionsSchema, c))],
    ['ppo', 'TRAIN', PPO_DEFAULTS, ppoOptionsSchema, (c) => resolvePPOConfig(pickOptions(ppoOptionsSchema, c))],
    ['sft', 'SFT', SFT_DEFAULTS, sftOptionsSchema, (c) => resolveSFTConfig(pickOptions(sftOptionsSchema, c))],
  ];
  for (const [algorithm, kind, defaults, , trainerConfig] of cases) {
    test(`${algorithm}: each option reaches the trainer's config with the job's value`, () => {
      for (const [option, engineDefault] of Object.entries(defaults)) {
        const value = anotherValue(kind, algorithm, option, engineDefault);
        const config = resolveJob(kind, { algorithm, [option]: value });
        expect(trainerConfig(config)[option], option).toBe(value);
      }
    });
  }

  test('model: each option reaches the policy with the job’s value', () => {
    for (const [option, engineDefault] of Object.entries(MODEL_DEFAULTS)) {
      if (DERIVED_MODEL_FIELDS.includes(option)) continue;
      const value = anotherValue('TRAIN', 'grpo', `model.${option}`, engineDefault);
      expect((resolveJob('TRAIN', { model: { [option]: value } }).model as Record<string, unknown>)[option], option).toBe(value);
    }
  });

  test('the seven options the issue named reach GRPO', () => {
    const set = { epochs: 2, miniBatches: 2, entropyCoef: 0.01, dropZeroVarianceGroups: false, warmupSteps: 5, weightDecay: 0.1, gradClip: 0.5 };
    expect(resolveGRPOConfig(pickOptions(grpoOptionsSchema, resolveJob('TRAIN', set)))).toMatchObject(set);
  });
});

describe('defaults', () => {
  test('the engine’s defaults are the schemas’ (one source)', () => {
    expect(GRPO_DEFAULTS.clipHigh).toBe(0.28);
    expect(pickOptions(grpoOptionsSchema, resolveJob('TRAIN', {}))).toEqual({ ...GRPO_DEFAULTS, learningRate: 0.003 });
    expect(pickOptions(ppoOptionsSchema, resolveJob('TRAIN', { algorithm: 'ppo' }))).toEqual({ ...PPO_DEFAULTS, learningRate: 0.003 });
    expect(pickOptions(sftOptionsSchema, resolveJob('SFT', {}))).toEqual(SFT_DEFAULTS);
  });

  test('layers: the job over the manifest over the defaults; a switched algorithm gets its own defaults', () => {
    expect(resolveJob('TRAIN', { steps: 5 })).toMatchObject({ algorithm: 'grpo', steps: 5, learningRate: 0.003, clipHigh: 0.28, epochs: 1 });
    expect(resolveJob('TRAIN', { algorithm: 'ppo' })).toMatchObject({ algorithm: 'ppo', clipHigh: 0.2, epochs: 2 });
    expect(resolveTraining({ model: { width: 32, heads: 2 } }, { model: { layers: 3 } })).toMatchObject({ ok: true, config: { model: { width: 32, heads: 2, layers: 3, contextLength: 128 } } });
  });

  test('an environment served over HTTP fails its jobs once a tenth of the episodes failed, unless its manifest or the job says otherwise', () => {
    const served = { server: { urls: ['http://127.0.0.1:8081'] } };
    const share = (manifest: object, training: TrainingOverrides = {}) => {
      const r = resolveJobTraining('TRAIN', { training }, manifest);
      return r.ok && r.config.algorithm !== 'sft' ? r.config.maxEpisodeErrorShare : r;
    };
    expect(share({})).toBe(0.5);
    expect(share(served)).toBe(0.1);
    expect(share({ ...served, training: { maxEpisodeErrorShare: 0.3 } })).toBe(0.3);
    expect(share(served, { maxEpisodeErrorShare: 0.2 })).toBe(0.2);
  });

  test('every option is documented with a group and a default', () => {
    for (const algorithm of ['grpo', 'ppo', 'sft'] as const) {
      const docs = describeOptions(algorithm);
      expect(docs.length).toBeGreaterThan(15);
      for (const d of docs) expect(d.description.length, d.name).toBeGreaterThan(10);
    }
    expect(describeOptions('grpo').find((d) => d.name === 'clipHigh')).toMatchObject({ group: 'grpo', default: 0.28, description: expect.stringMatching(/DAPO/) });
  });
});

describe('bad input is refused with what to write', () => {
  const problems = (...layers: Array<Record<string, unknown>>) => {
    const r = resolveTraining(...layers);
    return r.ok ? [] : r.problems;
  };

  test('a misspelt option names the closest valid one', () => {
    expect(problems({ clipHigth: 0.3 })).toEqual(['clipHigth: unknown option; did you mean `clipHigh`?']);
    expect(problems({ model: { widht: 32 } })).toEqual(['model.widht: unknown option; did you mean `model.width`?']);
    expect(problems({ zzzzqqq: 1 })).toEqual(['zzzzqqq: unknown option']);
  });

  test('an option of another algorithm says whose it is', () => {
    expect(problems({ algorithm: 'ppo', normalizeByStd: false })).toEqual(['normalizeByStd: not an option of ppo (it belongs to grpo)']);
  });

  test('the previous names say the new ones', () => {
    expect(problems({ clip: { low: 0.2, high: 0.3 } })[0]).toMatch(/^clip: renamed; write "clipLow" and "clipHigh"/);
    expect(problems({ normalizeAdvantageStd: false })).toEqual(['normalizeAdvantageStd: renamed; write normalizeByStd']);
    expect(problems({ model: { context: 64 } })).toEqual(['model.context: renamed; write model.contextLength']);
    const old = parseManifest({ name: 'x', version: '1.0.0', kind: 'single-turn', training: { kl: { estimator: 'none' } } });
    expect(old.ok ? [] : old.problems).toEqual([expect.stringMatching(/^training: kl: renamed; write "klCoef"/)]);
  });

  test('bounds and types', () => {
    expect(problems({ steps: 0 })[0]).toMatch(/^steps:/);
    expect(problems({ model: { width: 30, heads: 4 } })).toEqual(['model.heads: heads must divide width']);
    expect(problems({ algorithm: 'dqn' })[0]).toMatch(/algorithm: must be one of grpo, ppo, sft/);
  });

  test('job configs name unknown and moved fields', () => {
    const r = jobConfigSchemas.TRAIN.safeParse({ environmentVersionId: 'v', model: { width: 32 }, trainng: {} });
    expect(r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      expect.stringMatching(/^model: moved; write training.model/),
      'trainng: unknown field; did you mean `training`?',
    ]);
    expect(resolveJobTraining('TRAIN', { training: { algorithm: 'sft' } }, manifest)).toEqual({ ok: false, problems: ['algorithm: "sft" trains on a dataset; submit an SFT job'] });
  });
});

describe('warmStart', () => {
  const mathLike = { training: { algorithm: 'grpo', warmStart: { from: 'bot', bot: 'oracle', episodes: 9500, steps: 600, batchSize: 128 } } };
  const resolve = (training: Record<string, unknown>) => {
    const r = resolveJobTraining('TRAIN', { training }, mathLike);
    if (!r.ok) throw new Error(r.problems.join('; '));
    return r.config as TrainingConfig & { warmStart?: unknown };
  };

  test("the manifest's, with the documented defaults for what it leaves out", () => {
    expect(resolve({}).warmStart).toEqual({ from: 'bot', bot: 'oracle', episodes: 9500, augment: 'none', steps: 600, batchSize: 128, learningRate: 0.003, warmupSteps: 20, decay: true });
    const plain = resolveTraining({});
    expect(plain.ok ? plain.config : null).not.toHaveProperty('warmStart');
  });

  test('a job or --set changes it field by field, switches its source, or turns it off with null', () => {
    expect(resolve(applySet({}, 'warmStart.steps=50')).warmStart).toMatchObject({ from: 'bot', bot: 'oracle', episodes: 9500, steps: 50 });
    expect(resolve({ warmStart: { from: 'dataset', datasetVersionId: 'd1' } }).warmStart).toEqual({ from: 'dataset', datasetVersionId: 'd1', steps: 500, batchSize: 32, learningRate: 0.003, warmupSteps: 20, decay: true });
    expect(resolve(applySet({}, 'warmStart=null')).warmStart).toBeNull();
    // Stored resolved and resolved again by the runner over the manifest: null stays off.
    const stored = resolve(applySet({}, 'warmStart=null')) as unknown as Record<string, unknown>;
    expect(resolve(stored).warmStart).toBeNull();
  });

  test('bad warm starts say what to write; SFT jobs have none', () => {
    const problems = (...layers: Array<Record<string, unknown>>) => {
      const r = resolveTraining(...layers);
      return r.ok ? [] : r.problems;
    };
    expect(problems({ warmStart: { steps: 5 } })).toEqual(['warmStart.from: write "from": "bot" (with "bot", the bot to imitate) or "from": "dataset" (with "datasetVersionId")']);
    expect(problems({ warmStart: { from: 'bot', bot: 'oracle', bott: 1 } })).toEqual(['warmStart: Unrecognized key: "bott"']);
    expect(problems({ warmStart: { from: 'bot', bot: 'oracle', steps: 0 } })[0]).toMatch(/^warmStart.steps:/);
    expect(problems({ warmStart: { from: 'dataset' } })[0]).toMatch(/^warmStart.datasetVersionId:/);
    expect(problems({ algorithm: 'sft', warmStart: { from: 'bot', bot: 'oracle' } })).toEqual(['warmStart: not an option of sft (it belongs to grpo, ppo)']);
    expect(() => applySet({}, 'warmStart.a.b=1')).toThrow(/warmStart.<name>/);
  });

  test('documented in its own group', () => {
    expect(describeOptions('grpo').find((d) => d.name === 'warmStart')).toMatchObject({ group: 'warm-start', default: undefined, description: expect.stringMatching(/before the RL phase/) });
  });
});

describe('--set', () => {
  test('reads JSON values, bare words and model options', () => {
    let o = applySet({}, 'clipHigh=0.3');
    o = applySet(o, 'aggregation=seq-sum-norm');
    o = applySet(o, 'dropZeroVarianceGroups=false');
    o = applySet(o, 'model.contextLength=256');
    o = applySet(o, 'opponents={"random":1}');
    expect(o).toEqual({ clipHigh: 0.3, aggregation: 'seq-sum-norm', dropZeroVarianceGroups: false, model: { contextLength: 256 }, opponents: { random: 1 } });
    expect(() => applySet({}, 'clipHigh')).toThrow(/key=value/);
    expect(() => applySet({}, 'a.b=1')).toThrow(/model.<name> or warmStart.<name>/);
  });
});
