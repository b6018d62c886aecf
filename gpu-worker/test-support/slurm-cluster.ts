import { it } from 'vitest';

// A real one-node Slurm for tests (scripts/slurm/local-cluster.sh: munged, slurmctld and slurmd,
// two GRES GPUs). Each caller gets its own folder, so test files that run at once never share a
// controller or its jobs. Without Slurm (not installed, not root) the tests are skipped with a
// message, and fail under CI=true (.ci/run installs slurm-wlm and munge).

export { type LocalSlurm, startLocalSlurm } from './local-slurm';

/** Call at a test file's top level when startLocalSlurm failed: a failing test under CI=true, else a warning. */
export function reportSlurmMissing(what: string, error: string): void {
  const how = 'apt-get install slurm-wlm munge, as root (scripts/slurm/local-cluster.sh, docs/slurm.md)';
  if (process.env.CI === 'true') {
    it('needs a one-node Slurm (.ci/run installs slurm-wlm and munge)', () => {
      throw new Error(`${what} cannot run: Slurm did not start: ${error}\nTo run it: ${how}`);
    });
  } else {
    console.warn(`[skipped] ${what}: Slurm did not start: ${error}\nTo run it: ${how}`);
    it.skip(`needs a one-node Slurm: ${how}`, () => {});
  }
}

/** Polls `probe` every 100 ms until it returns a value, or throws after `timeoutMs`. */
export async function waitUntil<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
