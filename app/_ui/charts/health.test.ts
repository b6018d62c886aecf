import { describe, expect, it } from 'vitest';
import { healthMarkers } from './health';

const series = (values: number[], from = 1) => values.map((value, i) => ({ step: from + i, value }));

describe('healthMarkers', () => {
  it('finds nothing in a healthy run', () => {
    const flat = series(Array.from({ length: 40 }, (_, i) => 0.02 + 0.001 * (i % 3)));
    expect(healthMarkers({ 'policy/kl': flat, 'policy/entropy': series(Array(40).fill(2)), 'loss/total': flat })).toEqual([]);
  });

  it('marks a KL spike against the median of the steps before, not a slow rise', () => {
    const kl = Array.from({ length: 30 }, (_, i) => 0.02 + i * 0.002);
    kl[20] = 0.5;
    const markers = healthMarkers({ 'policy/kl': series(kl) });
    expect(markers.map((m) => [m.kind, m.step, m.key])).toEqual([['kl-spike', 21, 'policy/kl']]);
    expect(markers[0].message).toMatch(/KL 0\.5 at step 21/);
  });

  it('does not call a tiny KL a spike however large the ratio', () => {
    const kl = Array(20).fill(0.0001);
    kl[15] = 0.01;
    expect(healthMarkers({ 'policy/kl': series(kl) })).toEqual([]);
  });

  it('marks entropy collapse once, at the first step under a tenth of its early level (0.25 < 0.3)', () => {
    const entropy = [...Array(12).fill(3), 1, 0.5, 0.25, 0.2, 0.1];
    const markers = healthMarkers({ 'policy/entropy': series(entropy) });
    expect(markers.map((m) => [m.kind, m.step])).toEqual([['entropy-collapse', 15]]);
  });

  it('marks steps where a quarter of the episodes hit the context limit, a run of them as one range', () => {
    const markers = healthMarkers({ 'episode/context_truncated': series([0, 1, 4, 8, 0, 5]), 'episode/count': series([16, 16, 16, 16, 16, 16]) });
    expect(markers.map((m) => [m.kind, m.step, m.toStep])).toEqual([['length-limit', 3, 4], ['length-limit', 6, undefined]]);
    expect(markers[0].message).toBe("Steps 3 to 4: at least 25% of each step's episodes (up to 50%) were cut at the context limit");
    expect(markers[1].message).toBe("31% of step 6's episodes were cut at the context limit");
  });

  it('marks steps where most groups have all-equal rewards (the runner’s share), at the threshold and above', () => {
    const markers = healthMarkers({ 'reward/zero_variance_groups': series([0, 0.25, 1, 0.25, 0.5]) });
    expect(markers.map((m) => [m.kind, m.step, m.toStep, m.key])).toEqual([['zero-variance', 3, undefined, 'reward/mean'], ['zero-variance', 5, undefined, 'reward/mean']]);
    expect(markers[0].message).toBe("100% of step 3's groups had all-equal rewards: no gradient from them");
  });

  it('a sign that lasts is one marker over its steps, not one a step (a new policy on bandit: 100 steps with no gradient)', () => {
    const shares = [...Array(100).fill(1), ...Array(50).fill(0.1), 0.75, 0.75, 0.1];
    const markers = healthMarkers({ 'reward/zero_variance_groups': series(shares) });
    expect(markers.map((m) => [m.step, m.toStep])).toEqual([[1, 100], [151, 152]]);
    expect(markers[0].message).toBe("Steps 1 to 100: at least 50% of each step's groups (up to 100%) had all-equal rewards: no gradient from them");
  });

  it('marks steps whose loss was not a number or that made no update with tokens to train', () => {
    const markers = healthMarkers({
      'loss/total': series([0.5, Number.NaN, 0.4, 0.3]),
      'optim/updates': series([4, 0, 4, 0]),
      'optim/tokens': series([100, 100, 100, 0]),
    });
    expect(markers.map((m) => [m.kind, m.step])).toEqual([['nan-skipped', 2]]);
  });
});
