import { describe, expect, it } from 'vitest';
import { describeMetric, METRICS } from '../../sdk/live';
import { type StepMetrics } from '../engine/trainer-core';
import { type StepReport } from '../runtime/coordinator';
import { type AgentTrajectory, type EpisodeRollout } from '../runtime/rollout';
import { ENV_METRICS_MAX, envMetrics, stepMetrics, trainerMetrics } from './step-metrics';

const trainerStep: StepMetrics = {
  step: 7, loss: 1, policyLoss: 2, valueLoss: null, kl: 3, entropy: 4, clipFraction: 0.1, gradNorm: 5, learningRate: 1e-3,
  rewardMean: 0.5, rewardStd: 0.2, rewardMin: 0, rewardMax: 1, tokensPerSecond: 900, stepTimeMs: 12, tokens: 64, updates: 4,
};

function seat(agent: string, learn: boolean, totalReward: number): AgentTrajectory {
  return { agent, policy: learn ? 'policy' : null, learn, sequences: [], logprobs: [], turnRewards: [totalReward], totalReward, turns: 3, responseTokens: 10 };
}

function episode(id: number, rewards: Record<string, number>, finalInfo: EpisodeRollout['finalInfo'], error = false): EpisodeRollout {
  return {
    episodeId: `e${id}`, group: 'g', state: 'TERMINATED', endReason: error ? 'error' : 'terminated', task: null, moves: [], finalInfo,
    error: error ? { kind: 'throw', during: 'step', message: 'boom', location: null, userStack: '' } : null,
    agents: Object.fromEntries(Object.entries(rewards).map(([agent, r]) => [agent, seat(agent, agent === 'black', r)])),
  };
}

describe('step metrics', () => {
  it("name every field of the engine's StepMetrics with a distinct catalogued key; nulls stay null (dropped when emitted)", () => {
    const values = trainerMetrics(trainerStep);
    expect(Object.keys(values)).toHaveLength(Object.keys(trainerStep).length);
    for (const key of Object.keys(values)) expect(key in METRICS, key).toBe(true);
    expect(values).toMatchObject({ 'optim/step': 7, 'loss/total': 1, 'loss/value': null, 'policy/clip_frac': 0.1, 'perf/update_ms': 12, 'reward/batch_mean': 0.5 });
    // The runtime's numeric copy (engine-policy.ts) and fields the engine does not have.
    expect(trainerMetrics({ loss: 2, ...({ somethingNew: 1 } as object) })).toEqual({ 'loss/total': 2 });
  });

  it('of a multi-agent step: every key catalogued or of a family', () => {
    const report: StepReport = {
      step: 3,
      rollouts: [
        episode(0, { black: 1, white: -1 }, { result: 'black', moves: 9, valid: true }),
        episode(1, { black: -1, white: 1 }, { result: 'white', moves: 5, valid: false }),
        episode(2, { black: 0, white: 0 }, {}, true),
      ],
      meanReward: { black: 0, white: 0 },
      metrics: { policy: trainerMetricsInput() },
      opponents: [],
    };
    const values = stepMetrics(report, 1.5);
    expect(Object.keys(values).filter((k) => !describeMetric(k))).toEqual([]);
    expect(values).toMatchObject({
      'reward/mean': 0, 'reward/black': 0, 'reward/white': 0, 'episode/count': 3, 'episode/errors': 1, 'episode/win_rate': 0.5,
      'episode/turns': 3, 'perf/step_s': 1.5, 'loss/total': 1, 'env/moves': 7, 'env/valid': 0.5,
      // One group (black's two games, 1 and -1): it has a gradient.
      'reward/zero_variance_groups': 0,
    });
    // The string `result` is not a number to average.
    expect(values).not.toHaveProperty(['env/result']);
    // Each side's own win rate, over the games without errors.
    expect(values).toMatchObject({ 'episode/win_rate/black': 0.5, 'episode/win_rate/white': 0.5 });
  });

  it("of independent learners: the lead's trainer under the catalogue's keys, not whichever finished last", () => {
    const report: StepReport = {
      step: 0,
      rollouts: [episode(0, { black: 1, white: -1 }, {})],
      meanReward: { black: 1, white: -1 },
      metrics: { white: { ...trainerMetricsInput(), loss: 9 }, black: trainerMetricsInput() },
      opponents: [],
    };
    expect(stepMetrics(report, 1, 'black')).toMatchObject({ 'loss/total': 1, 'episode/win_rate/black': 1, 'episode/win_rate/white': 0 });
  });

  it('the share of groups whose returns are all equal: no gradient from them (groups of one not counted)', () => {
    const inGroup = (id: number, group: string, reward: number) => ({ ...episode(id, { black: reward, white: -reward }, {}), group });
    const report = (rollouts: EpisodeRollout[]): StepReport => ({ step: 0, rollouts, meanReward: {}, metrics: {}, opponents: [] });
    const flat = [inGroup(0, 'a', 1), inGroup(1, 'a', 1), inGroup(2, 'b', 1), inGroup(3, 'b', -1), inGroup(4, 'c', 0), inGroup(5, 'c', 0), inGroup(6, 'd', 1)];
    expect(stepMetrics(report(flat), 1)['reward/zero_variance_groups']).toBeCloseTo(2 / 3);
    expect(stepMetrics(report([inGroup(0, 'a', 1)]), 1)['reward/zero_variance_groups']).toBeNull();
  });

  it("of the environment: numbers and booleans of the final info, averaged over the episodes that report them, at most ENV_METRICS_MAX names", () => {
    const many = Object.fromEntries(Array.from({ length: ENV_METRICS_MAX + 5 }, (_, i) => [`f${i}`, i]));
    const values = envMetrics([episode(0, { black: 1 }, { ...many, flag: true }), episode(1, { black: 1 }, { f0: 2, nan: null, nested: { x: 1 } })]);
    expect(Object.keys(values)).toHaveLength(ENV_METRICS_MAX);
    expect(values['env/f0']).toBe(1);
    expect(values['env/f1']).toBe(1);
    expect(values).not.toHaveProperty(['env/nested']);
  });
});

/** StepMetrics as the runtime hands them on: numbers only (runtime/engine-policy.ts). */
function trainerMetricsInput(): Record<string, number> {
  return Object.fromEntries(Object.entries(trainerStep).filter(([, v]) => typeof v === 'number')) as Record<string, number>;
}
