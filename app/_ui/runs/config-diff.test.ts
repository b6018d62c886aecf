import { describe, expect, it } from 'vitest';
import { configDiff } from './config-diff';

describe('configDiff', () => {
  it('keeps only the paths whose values differ, a missing one included', () => {
    const a = { environmentVersionId: 'v1', training: { algorithm: 'grpo', lr: 0.001, steps: 60, tags: ['x'] } };
    const b = { environmentVersionId: 'v1', training: { algorithm: 'grpo', lr: 0.0005, steps: 60, tags: ['x'], kl: 0.1 } };
    expect(configDiff([a, b])).toEqual([
      { path: 'training.kl', values: [undefined, '0.1'] },
      { path: 'training.lr', values: ['0.001', '0.0005'] },
    ]);
  });

  it('is empty for equal configs and for one run', () => {
    expect(configDiff([{ a: { b: 1 } }, { a: { b: 1 } }])).toEqual([]);
    expect(configDiff([{ a: 1 }])).toEqual([]);
  });

  it('compares arrays as whole values', () => {
    expect(configDiff([{ t: [1, 2] }, { t: [2, 1] }])).toEqual([{ path: 't', values: ['[1,2]', '[2,1]'] }]);
  });
});
