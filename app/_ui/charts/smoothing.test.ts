import { describe, expect, it } from 'vitest';
import { debiasedEma } from './smoothing';

// The reference: a debiased EMA is the weighted mean of the points so far with weights w^(n-i).
function reference(values: number[], w: number): number[] {
  return values.map((_, n) => {
    let num = 0;
    let den = 0;
    for (let i = 0; i <= n; i++) {
      num += w ** (n - i) * values[i];
      den += w ** (n - i);
    }
    return num / den;
  });
}

describe('debiasedEma', () => {
  const data = [0.1, 0.5, -0.2, 0.9, 0.4, 0.45, 1.3, 0.8, 0.0, 0.7, 0.65, 0.9];

  it('matches the weighted-mean reference at several weights', () => {
    for (const w of [0.3, 0.6, 0.9, 0.99]) {
      const got = debiasedEma(data, w);
      reference(data, w).forEach((r, i) => expect(got[i]).toBeCloseTo(r, 10));
    }
  });

  it('matches hand-computed values and is not pulled toward zero at the start', () => {
    expect(debiasedEma([1, 2, 3], 0.5)).toEqual([1, 5 / 3, 2.125 / 0.875].map((v) => expect.closeTo(v, 12)));
    expect(debiasedEma([10, 10, 10], 0.9)).toEqual([10, 10, 10].map((v) => expect.closeTo(v, 12)));
  });

  it('is the raw series at weight 0', () => {
    expect(debiasedEma(data, 0)).toEqual(data);
  });

  it('skips NaN and ±Infinity without letting them into later values', () => {
    const got = debiasedEma([1, Number.NaN, 2, Number.POSITIVE_INFINITY, 3], 0.5);
    expect(got[1]).toBeNaN();
    expect(got[3]).toBeNaN();
    const clean = reference([1, 2, 3], 0.5);
    expect([got[0], got[2], got[4]]).toEqual(clean.map((v) => expect.closeTo(v, 12)));
  });
});
