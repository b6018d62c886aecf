import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { coalesceJobChanges, JOB_CHANGE_MAX_JOBS } from './job-changes';

describe('job change hints', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('sends one message per team per window, naming each job changed in it once, none later than the window', () => {
    const sent: string[] = [];
    const hint = coalesceJobChanges((teamId, jobIds) => void sent.push(`${teamId}/${jobIds.join(',')}`), 100);
    hint('t1', 'a'); // placed
    hint('t1', 'a'); // started
    hint('t2', 'b');
    hint('t1', 'c');
    vi.advanceTimersByTime(99);
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual(['t1/a,c', 't2/b']);
    hint('t1', 'a'); // finished, in the next window
    vi.advanceTimersByTime(100);
    expect(sent).toEqual(['t1/a,c', 't2/b', 't1/a']);
  });

  it('splits a busy window into messages of at most JOB_CHANGE_MAX_JOBS jobs', () => {
    const sent: string[][] = [];
    const hint = coalesceJobChanges((_teamId, jobIds) => void sent.push(jobIds), 100);
    const ids = Array.from({ length: JOB_CHANGE_MAX_JOBS * 2 + 1 }, (_, i) => `j${i}`);
    for (const id of ids) hint('t1', id);
    vi.advanceTimersByTime(100);
    expect(sent.map((m) => m.length)).toEqual([JOB_CHANGE_MAX_JOBS, JOB_CHANGE_MAX_JOBS, 1]);
    expect(sent.flat()).toEqual(ids);
  });

  it('is shared by everyone sending to the same hub (the scheduler and the worker API)', () => {
    const emit = () => {};
    expect(coalesceJobChanges(emit)).toBe(coalesceJobChanges(emit));
  });
});
