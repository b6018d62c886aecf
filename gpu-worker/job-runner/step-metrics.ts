/**
 * The metrics of a step under their sdk/live.ts keys: the one place that names what the engine's
 * trainers (StepMetrics) and the runtime's step reports measure. train.ts, sft.ts and eval.ts
 * emit only keys made here or taken from the catalogue.
 */
import { agentRewardKey, agentWinRateKey, type CatalogueKey, envMetricKey } from '../../sdk/live';
import { type StepMetrics } from '../engine/trainer-core';
import { type StepReport } from '../runtime/coordinator';
import { type EpisodeRollout } from '../runtime/rollout';

/** Values by key; null or a non-finite value is dropped when emitted (Emitter.metrics). */
export type MetricValues = Record<string, number | null | undefined>;

/**
 * Each StepMetrics field's key. Typed by StepMetrics' own keys, so a field added to the engine
 * does not compile until it is named here.
 */
const TRAINER_KEYS = {
  step: 'optim/step',
  loss: 'loss/total',
  policyLoss: 'loss/policy',
  valueLoss: 'loss/value',
  kl: 'policy/kl',
  entropy: 'policy/entropy',
  clipFraction: 'policy/clip_frac',
  gradNorm: 'optim/grad_norm',
  learningRate: 'optim/lr',
  rewardMean: 'reward/batch_mean',
  rewardStd: 'reward/batch_std',
  rewardMin: 'reward/batch_min',
  rewardMax: 'reward/batch_max',
  tokensPerSecond: 'perf/tokens_per_s',
  stepTimeMs: 'perf/update_ms',
  tokens: 'optim/tokens',
  updates: 'optim/updates',
} as const satisfies Record<keyof StepMetrics, CatalogueKey>;

/**
 * A trainer's step under its keys. Takes StepMetrics or the runtime's copy of it (numbers only,
 * see runtime/engine-policy.ts); a field that is not StepMetrics' is left out.
 */
export function trainerMetrics(m: Readonly<Partial<Record<keyof StepMetrics, number | null>>>): MetricValues {
  const values: MetricValues = {};
  for (const [field, key] of Object.entries(TRAINER_KEYS)) {
    const value = m[field as keyof StepMetrics];
    if (value !== undefined) values[key] = value;
  }
  return values;
}

/** An SFT step of a TRAIN job's warm start under its `warmstart/` keys (its own step numbers). */
export function warmStartMetrics(m: StepMetrics, epoch: number): MetricValues {
  return {
    'warmstart/loss': m.loss,
    'warmstart/lr': m.learningRate,
    'warmstart/grad_norm': m.gradNorm,
    'warmstart/tokens': m.tokens,
    'warmstart/epoch': epoch,
  } satisfies Partial<Record<CatalogueKey, number | null>>;
}

/** At most this many `env/` metrics a step: an environment's info is free-form, a run's key list should not be. */
export const ENV_METRICS_MAX = 32;

/**
 * `env/<name>`: the mean over episodes of each number (or boolean, as 0 and 1) in the final
 * step's info, as sdk/environment documents `info` ("aggregated in metrics"). Episodes that do
 * not report a name do not count towards its mean.
 */
export function envMetrics(rollouts: readonly EpisodeRollout[]): MetricValues {
  const sums = new Map<string, { total: number; n: number }>();
  for (const r of rollouts) {
    for (const [name, raw] of Object.entries(r.finalInfo)) {
      const value = typeof raw === 'boolean' ? Number(raw) : raw;
      if (typeof value !== 'number' || !Number.isFinite(value)) continue;
      const key = envMetricKey(name);
      const sum = sums.get(key) ?? (sums.size < ENV_METRICS_MAX ? { total: 0, n: 0 } : null);
      if (!sum) continue;
      sum.total += value;
      sum.n += 1;
      sums.set(key, sum);
    }
  }
  return Object.fromEntries([...sums].map(([key, s]) => [key, s.total / s.n]));
}

const mean = (xs: number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);

/**
 * The share of a step's groups (the episodes of one task, GRPO's group) whose learning seats all
 * got the same return: GRPO's advantage is zero for every one of them, so they teach nothing (the
 * run page's health marker). Groups of one episode are not counted; null when there is none.
 */
function zeroVarianceShare(episodes: readonly EpisodeRollout[]): number | null {
  const returns = new Map<string, number[]>();
  for (const r of episodes) {
    for (const a of Object.values(r.agents)) {
      if (!a.learn) continue;
      const key = `${r.group}\u0000${a.agent}`;
      returns.set(key, [...(returns.get(key) ?? []), a.totalReward]);
    }
  }
  const groups = [...returns.values()].filter((g) => g.length > 1);
  if (groups.length === 0) return null;
  return groups.filter((g) => g.every((x) => x === g[0])).length / groups.length;
}

/**
 * A TRAIN step's metrics: the runner's view of the episodes, the learning policy's trainer (of
 * several, `lead`'s: the first learner's, the run's), the environment's info.
 */
export function stepMetrics(report: StepReport, seconds: number, lead?: string): MetricValues {
  const { rollouts } = report;
  const ok = rollouts.filter((r) => r.endReason !== 'error');
  const learning = ok.flatMap((r) => Object.values(r.agents).filter((a) => a.learn));
  const returns = learning.map((a) => a.totalReward);
  const values: MetricValues = {
    'reward/mean': mean(returns),
    'episode/count': rollouts.length,
    'episode/errors': rollouts.length - ok.length,
    'episode/context_truncated': rollouts.filter((r) => r.endReason === 'context').length,
    'episode/turns': mean(learning.map((a) => a.turns)),
    'episode/response_tokens': mean(learning.map((a) => a.responseTokens)),
    'reward/zero_variance_groups': zeroVarianceShare(ok),
    'perf/step_s': seconds,
  } satisfies Partial<Record<CatalogueKey, number | null>>;
  if (Object.keys(report.meanReward).length > 1) {
    for (const [agent, r] of Object.entries(report.meanReward)) {
      values[agentRewardKey(agent)] = r;
      // Each side's own win rate: with two learners, `episode/win_rate` counts both sides' wins.
      values[agentWinRateKey(agent)] = ok.length === 0 ? null : ok.filter((e) => (e.agents[agent]?.totalReward ?? 0) > 0).length / ok.length;
    }
    values['episode/win_rate'] = returns.length === 0 ? null : returns.filter((r) => r > 0).length / returns.length;
  }
  // One policy's trainer under the catalogue's keys: `lead`'s, or the one there is.
  const trainers = lead !== undefined && report.metrics[lead] ? [report.metrics[lead]] : Object.values(report.metrics);
  for (const m of trainers) Object.assign(values, trainerMetrics(m));
  return { ...values, ...envMetrics(ok) };
}
