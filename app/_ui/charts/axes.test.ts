import { describe, expect, it } from 'vitest';
import { isFlat, roomyDomain, staticDomain } from './axes';

const rows = (values: number[]) => values;

describe('roomyDomain', () => {
  it('leaves a fifth of the range above and below, out to round numbers', () => {
    expect(roomyDomain(rows([-1, 1]))).toEqual([-1.5, 1.5]);
    expect(roomyDomain(rows([2.1, 2.3]))).toEqual([2.05, 2.35]);
  });

  it('keeps values that are never negative on an axis from zero or above', () => {
    expect(roomyDomain(rows([0, 0.37, 1]))).toEqual([0, 1.25]);
    expect(roomyDomain(rows([120, 480]))).toEqual([0, 600]);
  });

  it('gives a flat series room round its value, and none when nothing is finite', () => {
    expect(roomyDomain(rows([5, 5]))).toEqual([4, 6]);
    expect(roomyDomain(rows([0, 0]))).toEqual([0, 1]);
    expect(roomyDomain(rows([Number.NaN]))).toEqual([NaN, NaN]);
  });

  it('takes every value it is given (the band and the smoothed line too)', () => {
    const [lo, hi] = roomyDomain([0.5, 0.5, -3, 7]);
    expect(lo).toBeLessThanOrEqual(-5);
    expect(hi).toBeGreaterThanOrEqual(9);
  });
});

describe('staticDomain', () => {
  it("is recharts' own unless every finite value is the same", () => {
    expect(staticDomain([1, 2, 3])).toBeNull();
    expect(staticDomain([8, 8, Number.NaN, 8])).toEqual([6, 10]);
    expect(isFlat([Number.NaN])).toBe(false);
    // A smoothed constant, off by float noise, is flat too.
    expect(staticDomain([8, 7.999999999999999, 8.000000000000002])).toEqual([6, 10]);
  });
});
