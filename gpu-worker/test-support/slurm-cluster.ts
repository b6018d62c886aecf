import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { it } from 'vitest';
import { repoRoot } from '../../server/paths';

// A real one-node Slurm for tests (scripts/slurm/local-cluster.sh: munged, slurmctld and slurmd,
// two GRES GPUs). Each caller gets its own folder, so test files that run at once never share a
// controller or its jobs. Without Slurm (not installed, not root) the tests are skipped with a
// message, and fail under CI=true (.ci/run installs slurm-wlm and munge).

const SCRIPT = path.join(repoRoot, 'scripts/slurm/local-cluster.sh');

export interface LocalSlurm {
  /** The cluster's folder (WHETSTONE_SLURM_DIR). */
  dir: string;
  /** Its slurm.conf: SLURM_CONF for every Slurm command. */
  slurmConf: string;
  /** Cancels its jobs, stops its daemons and removes its folder. */
  stop: () => Promise<void>;
}

function script(command: 'start' | 'stop', dir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', [SCRIPT, command], { env: { ...process.env, WHETSTONE_SLURM_DIR: dir }, timeout: 120_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr: stderr || (error && typeof error.code !== 'number' ? String(error.message) : '') });
    });
  });
}

/** Starts a one-node Slurm in a fresh temporary folder; `{ error }` says why it could not. */
export async function startLocalSlurm(): Promise<LocalSlurm | { error: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-slurm-test-'));
  const started = await script('start', dir);
  const slurmConf = /^export SLURM_CONF=(.+)$/m.exec(started.stdout)?.[1];
  if (started.code !== 0 || !slurmConf) {
    await script('stop', dir);
    fs.rmSync(dir, { recursive: true, force: true });
    return { error: (started.stderr.trim() || `local-cluster.sh start exited ${started.code}`).split('\n').slice(-6).join('\n') };
  }
  return {
    dir,
    slurmConf,
    stop: async () => {
      await script('stop', dir);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

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
