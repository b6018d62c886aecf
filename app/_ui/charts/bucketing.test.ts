import { describe, expect, it } from 'vitest';
import { appendLive, bucketPoints, mergeBuckets, type Point } from './bucketing';

describe('bucketPoints', () => {
  it('folds a 1,000,000-point series into at most the buckets asked, keeping every extreme', () => {
    const n = 1_000_000;
    const points: Point[] = new Array(n);
    for (let i = 0; i < n; i++) points[i] = { step: i, value: Math.sin(i / 1000) };
    points[123_457] = { step: 123_457, value: 50 };
    points[987_654] = { step: 987_654, value: -50 };
    points[500_000] = { step: 500_000, value: Number.NaN };
    const { buckets, skipped } = bucketPoints(points, 800);
    expect(buckets.length).toBeLessThanOrEqual(800);
    expect(buckets.length).toBeGreaterThan(790);
    expect(skipped).toBe(1);
    expect(buckets.reduce((s, b) => s + b.count, 0)).toBe(n - 1);
    expect(Math.max(...buckets.map((b) => b.max))).toBe(50);
    expect(Math.min(...buckets.map((b) => b.min))).toBe(-50);
    // Buckets tile the steps in order (but for the skipped one), and each one's last is the value at its last step.
    expect(buckets[0].fromStep).toBe(0);
    expect(buckets[buckets.length - 1].toStep).toBe(n - 1);
    for (let i = 1; i < buckets.length; i++) expect(buckets[i].fromStep).toBe(buckets[i - 1].toStep + (buckets[i - 1].toStep + 1 === 500_000 ? 2 : 1));
    for (const b of buckets) expect(b.last).toBe(points[b.toStep].value);
  });

  it('keeps a short series point for point', () => {
    const { buckets } = bucketPoints([{ step: 1, value: 2 }, { step: 2, value: 3 }], 400);
    expect(buckets).toEqual([
      { fromStep: 1, toStep: 1, min: 2, max: 2, last: 2, count: 1 },
      { fromStep: 2, toStep: 2, min: 3, max: 3, last: 3, count: 1 },
    ]);
  });

  it('gives nothing for a series with only non-finite values, and says how many it skipped', () => {
    expect(bucketPoints([{ step: 1, value: Number.POSITIVE_INFINITY }, { step: 2, value: Number.NaN }], 10)).toEqual({ buckets: [], skipped: 2 });
  });
});

describe('appendLive', () => {
  const base = bucketPoints(Array.from({ length: 10 }, (_, i) => ({ step: i + 1, value: i })), 100).buckets;

  it('appends only points after the last bucket (no duplicate of what the series holds)', () => {
    const merged = appendLive(base, [{ step: 10, value: 99 }, { step: 11, value: 11 }, { step: 12, value: 12 }], 100);
    expect(merged.map((b) => b.toStep)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(merged[9].last).toBe(9);
  });

  it('folds again when live points push it past the limit', () => {
    const live = Array.from({ length: 1000 }, (_, i) => ({ step: 11 + i, value: i }));
    const merged = appendLive(base, live, 100);
    expect(merged.length).toBeLessThanOrEqual(100);
    expect(merged.reduce((s, b) => s + b.count, 0)).toBe(1010);
    expect(merged[merged.length - 1]).toMatchObject({ toStep: 1010, last: 999 });
  });

  it('mergeBuckets keeps min and max of the buckets it joins', () => {
    const merged = mergeBuckets(base, 2);
    expect(merged).toEqual([
      { fromStep: 1, toStep: 5, min: 0, max: 4, last: 4, count: 5 },
      { fromStep: 6, toStep: 10, min: 5, max: 9, last: 9, count: 5 },
    ]);
  });
});
