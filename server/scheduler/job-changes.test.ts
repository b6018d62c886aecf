import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { coalesceJobChanges } from './job-changes';

describe('job change hints', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('sends one hint per job per window, every job changed in it, none later than the window', () => {
    const sent: string[] = [];
    const hint = coalesceJobChanges((teamId, jobId) => void sent.push(`${teamId}/${jobId}`), 100);
    hint('t1', 'a'); // placed
    hint('t1', 'a'); // started
    hint('t2', 'b');
    vi.advanceTimersByTime(99);
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual(['t1/a', 't2/b']);
    hint('t1', 'a'); // finished, in the next window
    vi.advanceTimersByTime(100);
    expect(sent).toEqual(['t1/a', 't2/b', 't1/a']);
  });

  it('is shared by everyone sending to the same hub (the scheduler and the worker API)', () => {
    const emit = () => {};
    expect(coalesceJobChanges(emit)).toBe(coalesceJobChanges(emit));
  });
});
