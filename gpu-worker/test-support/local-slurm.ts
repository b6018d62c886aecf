import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../server/paths';

// A real one-node Slurm (scripts/slurm/local-cluster.sh: munged, slurmctld and slurmd, two GRES
// GPUs) in a fresh temporary folder, for tests (slurm-cluster.ts) and benchmarks
// (bench/scheduler.ts's slurm section). Nothing here imports vitest.

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
