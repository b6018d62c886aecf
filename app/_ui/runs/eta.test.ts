import { describe, expect, it } from 'vitest';
import { etaSeconds } from './eta';

describe('etaSeconds', () => {
  it('extrapolates the measured step rate to the steps left', () => {
    // 4 steps in 8 s: 2 s a step; 90 steps left.
    expect(etaSeconds([{ step: 6, at: 1000 }, { step: 10, at: 9000 }], 10, 100)).toBe(180);
  });

  it('says nothing before two steps were seen, or once the run is through', () => {
    expect(etaSeconds([], 3, 100)).toBeNull();
    expect(etaSeconds([{ step: 3, at: 0 }], 3, 100)).toBeNull();
    expect(etaSeconds([{ step: 1, at: 0 }, { step: 2, at: 1000 }], 100, 100)).toBeNull();
  });
});
