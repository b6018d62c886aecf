import { describe, expect, it } from 'vitest';
import { formatDateTime } from '../format';
import { readableTimes, stateLine } from './run-state';

describe('the scheduler’s reasons in words', () => {
  it('shows the planner’s ISO times in the reader’s time, and leaves the rest as written', () => {
    const at = '2026-11-28T10:05:19.986Z';
    const text = `no online worker has 1 free device; expected to start by ${at} on worker w1`;
    expect(readableTimes(text)).toBe(`no online worker has 1 free device; expected to start by ${formatDateTime(at)} on worker w1`);
    expect(readableTimes('team quota of 2 devices reached')).toBe('team quota of 2 devices reached');
  });

  it('a queued run’s line is the reason as a sentence', () => {
    const line = stateLine({ state: 'QUEUED', waitingReason: 'waiting: behind job a, from 2026-01-02T03:04:05Z', failureReason: null, worker: null, cancelRequested: false });
    expect(line).toBe(`Behind job a, from ${formatDateTime('2026-01-02T03:04:05Z')}`);
  });
});
