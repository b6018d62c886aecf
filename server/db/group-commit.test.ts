import { describe, expect, it } from 'vitest';
import { groupCommit } from './group-commit';

describe('group commit', () => {
  it('runs a call at once when idle, and the calls that arrive meanwhile together as the next batch', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const run = groupCommit(async (inputs: number[]) => {
      batches.push(inputs);
      if (batches.length === 1) await new Promise<void>((resolve) => (release = resolve));
      return inputs.map((n) => n * 10);
    });
    const first = run(1);
    expect(batches).toEqual([[1]]); // no timer: the idle call went out at once
    const rest = [run(2), run(3), run(4)];
    release();
    expect(await Promise.all([first, ...rest])).toEqual([10, 20, 30, 40]);
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it('keeps batches within maxBatch', async () => {
    const sizes: number[] = [];
    let release!: () => void;
    const run = groupCommit(async (inputs: number[]) => {
      sizes.push(inputs.length);
      if (sizes.length === 1) await new Promise<void>((resolve) => (release = resolve));
      return inputs;
    }, 2);
    const all = [1, 2, 3, 4, 5, 6].map((n) => run(n));
    release();
    expect(await Promise.all(all)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(sizes).toEqual([1, 2, 2, 1]);
  });

  it('fails every caller of a failed batch, and goes on with the next', async () => {
    let calls = 0;
    let release!: () => void;
    const run = groupCommit(async (inputs: string[]) => {
      calls++;
      if (calls === 1) await new Promise<void>((resolve) => (release = resolve));
      if (calls === 2) throw new Error('connection lost');
      return inputs;
    });
    const first = run('a');
    const failed = [run('b'), run('c')];
    release();
    expect(await first).toBe('a');
    for (const f of failed) await expect(f).rejects.toThrow('connection lost');
    expect(await run('d')).toBe('d');
  });
});
