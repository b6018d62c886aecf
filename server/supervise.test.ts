import { afterEach, describe, expect, test } from 'vitest';
import { waitUntil } from './test-support/reliability/harness';
import { supervise, type Supervised } from './supervise';

// Real child processes: a supervisor restarts what exits on its own, says how it exited, backs
// off, and leaves alone what it was asked to stop.

let supervised: Supervised | null = null;
afterEach(() => supervised?.kill());

function run(script: string, lines: string[], delays = { minDelayMs: 20, maxDelayMs: 80 }) {
  supervised = supervise({ name: 'the child', command: process.execPath, args: ['-e', script], spawnOptions: { stdio: 'ignore' }, log: (l) => lines.push(l), ...delays });
  return supervised;
}

describe('supervise', () => {
  test('a child that exits is logged with its exit code and restarted, with a doubling backoff up to the cap', async () => {
    const lines: string[] = [];
    const s = run('process.exit(3)', lines);
    await waitUntil('five restarts', async () => s.starts >= 5, 20_000, 10);
    expect(lines[0]).toBe('the child exited (exit code 3); restarting in 0.0 s');
    const delays = lines.slice(0, 4).map((l) => /restarting in ([\d.]+) s/.exec(l)![1]);
    expect(delays).toEqual(['0.0', '0.0', '0.1', '0.1']); // 20, 40, 80, 80 ms, rounded
  });

  test('a child killed by a signal is logged with the signal and replaced by a new process', async () => {
    const lines: string[] = [];
    const s = run('setInterval(() => {}, 1000)', lines);
    const first = await waitUntil('the first child', async () => s.child?.pid);
    process.kill(first, 'SIGKILL');
    const second = await waitUntil('a new child', async () => s.child?.pid !== first && s.child?.pid, 20_000, 10);
    expect(second).not.toBe(first);
    expect(lines).toEqual(['the child exited (signal SIGKILL); restarting in 0.0 s']);
  });

  test('stop() ends the child and nothing is restarted after it', async () => {
    const lines: string[] = [];
    const s = run('process.on("SIGTERM", () => process.exit(0)); setInterval(() => {}, 1000)', lines);
    await waitUntil('the child', async () => s.child?.pid);
    await s.stop(5_000);
    expect(s.child).toBeNull();
    expect(s.starts).toBe(1);
    expect(lines).toEqual([]);
  });
});
