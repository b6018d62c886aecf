import { describe, expect, it } from 'vitest';
import {
  agentRewardKey,
  describeMetric,
  envMetricKey,
  type LiveBatch,
  liveBatchSchema,
  METRIC_FAMILIES,
  METRIC_GROUPS,
  METRIC_KEY_MAX,
  metricGroup,
  metricItemSchema,
  metricName,
  METRICS,
  seatWinRateKey,
} from './live';

describe('metric keys', () => {
  it('are group/name with a known group, a description, and fit the wire', () => {
    for (const key of [...Object.keys(METRICS), ...Object.keys(METRIC_FAMILIES)]) {
      expect(key).toMatch(/^[a-z]+\/[a-z0-9_/<>]+$/);
      expect(Object.keys(METRIC_GROUPS)).toContain(metricGroup(key));
      expect(key.length).toBeLessThanOrEqual(METRIC_KEY_MAX);
    }
    for (const info of [...Object.values(METRICS), ...Object.values(METRIC_FAMILIES)]) expect(info.description.length).toBeGreaterThan(10);
  });

  it('group from the name alone', () => {
    expect(metricGroup('loss/policy')).toBe('loss');
    expect(metricName('loss/policy')).toBe('policy');
    expect(metricGroup('eval/win_rate/black')).toBe('eval');
    expect(metricName('eval/win_rate/black')).toBe('win_rate/black');
    // A key from before the catalogue has no group.
    expect(metricGroup('reward')).toBe('other');
  });

  it('describe catalogued keys and members of families, nothing else', () => {
    expect(describeMetric('policy/kl')).toBe(METRICS['policy/kl']);
    expect(describeMetric('reward/black')).toBe(METRIC_FAMILIES['reward/<agent>']);
    expect(describeMetric('eval/win_rate/white')).toBe(METRIC_FAMILIES['eval/win_rate/<agent>']);
    expect(describeMetric('env/correct')).toBe(METRIC_FAMILIES['env/<name>']);
    for (const unknown of ['reward', 'loss/nope', 'env/', 'env/a/b', 'winRate.black', 'eval/win_rate/']) expect(describeMetric(unknown), unknown).toBeNull();
  });

  it('name agents and info fields safely', () => {
    expect(agentRewardKey('black')).toBe('reward/black');
    // An agent named like a catalogued reward metric does not take its place.
    expect(agentRewardKey('mean')).toBe('reward/agent_mean');
    expect(agentRewardKey('batch_std')).toBe('reward/agent_batch_std');
    expect(seatWinRateKey('white')).toBe('eval/win_rate/white');
    expect(envMetricKey('a/b c')).toBe('env/a_b_c');
    expect(envMetricKey('')).toBe('env/_');
    const long = envMetricKey('x'.repeat(500));
    expect(long).toHaveLength(METRIC_KEY_MAX);
    expect(metricItemSchema.parse({ step: 0, key: long, value: 1 }).key).toBe(long);
    for (const key of [agentRewardKey('mean'), seatWinRateKey('a b'), long]) expect(describeMetric(key), key).not.toBeNull();
  });
});

describe('live batches', () => {
  const position = { jobId: 'j', attempt: 1, seq: 3, stored: 2 };
  const batches: LiveBatch[] = [
    { ...position, kind: 'metrics', items: [{ key: 'reward/mean', step: 0, value: 0.5 }] },
    { ...position, kind: 'rollouts', items: [{ step: 0, agent: 'agent', index: 0, reward: 1 }] },
    { ...position, kind: 'logs', items: [{ line: 0, level: 'warn', message: 'm', time: '2026-01-01T00:00:00.000Z' }] },
    { ...position, kind: 'matches', items: [{ step: null, winner: 'black' }] },
    { ...position, kind: 'boards', items: [{ step: 0, game: 0, text: '...', move: 1 }] },
  ];

  it('parse as they are published', () => {
    for (const b of batches) expect(liveBatchSchema.parse(JSON.parse(JSON.stringify(b)))).toEqual(b);
  });

  it('refuse a batch that is not one (a missing position, an unknown kind)', () => {
    const { stored: _stored, ...unplaced } = batches[0];
    expect(liveBatchSchema.safeParse(unplaced).success).toBe(false);
    expect(liveBatchSchema.safeParse({ ...position, kind: 'gossip', items: [] }).success).toBe(false);
  });
});
