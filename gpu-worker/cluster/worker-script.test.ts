import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobState, seedTeam, submitTrain, type Team } from '../../server/test-support/reliability/harness';
import { useTestServer } from '../../server/test-support/test-server';
import { repoRoot } from '../../server/paths';
import { type LocalSlurm, reportSlurmMissing, startLocalSlurm, waitUntil } from '../test-support/slurm-cluster';
import { sbatch, scancel, squeue } from './slurm';
import { shellQuote, workerBatchScript } from './worker-script';

describe('workerBatchScript', () => {
  const base = { installPath: '/shared/whetstone', serverUrl: 'https://whetstone.example:3000', idleExitSeconds: 300 };

  it('cds to the install and execs the daemon as the batch shell, with no token in its text', () => {
    expect(workerBatchScript(base)).toBe(
      [
        '#!/bin/bash',
        '# A Whetstone worker (gpu-worker/cluster/worker-script.ts). Its registration token is in the',
        "# job's environment (WHETSTONE_WORKER_TOKEN) or a 0600 file, never in this script.",
        'set -euo pipefail',
        "cd '/shared/whetstone'",
        "exec node '--import' 'tsx' 'gpu-worker/daemon.ts' '--server' 'https://whetstone.example:3000' '--idle-exit' '300'",
        '',
      ].join('\n'),
    );
    // A file named like a token's prefix is no token.
    expect(workerBatchScript({ ...base, tokenFile: '/home/me/.wst_token' })).toContain("'--token-file' '/home/me/.wst_token'");
    const full = workerBatchScript({ ...base, tokenFile: "/home/o'brien/.whetstone token", name: 'gpu-a', nodePath: '/opt/node/bin/node', extraEnv: { WHETSTONE_HOME: '/scratch/$USER', WHETSTONE_BACKEND: 'webgpu' } });
    expect(full).toContain("export WHETSTONE_HOME='/scratch/$USER'\nexport WHETSTONE_BACKEND='webgpu'\n");
    expect(full).toContain(`exec '/opt/node/bin/node' '--import' 'tsx' 'gpu-worker/daemon.ts' '--server' 'https://whetstone.example:3000' '--idle-exit' '300' '--token-file' '/home/o'\\''brien/.whetstone token' '--name' 'gpu-a'\n`);
  });

  it('quotes every value as one bash word', () => {
    for (const value of ["it's", '$(touch /tmp/x) `id` $HOME', 'a b\tc', '\\', "'", '"', '']) {
      expect(execFileSync('bash', ['-c', `printf %s ${shellQuote(value)}`], { encoding: 'utf8' })).toBe(value);
    }
  });

  it('refuses inputs it cannot write safely, naming the field', () => {
    const refused: [Parameters<typeof workerBatchScript>[0], RegExp][] = [
      [{ ...base, installPath: 'relative/path' }, /installPath: installPath must be an absolute path/],
      [{ ...base, installPath: '/a\nrm -rf /' }, /installPath: installPath must be one line/],
      [{ ...base, serverUrl: 'not a url' }, /serverUrl: serverUrl must be a URL/],
      [{ ...base, serverUrl: 'file:///etc/passwd' }, /serverUrl must be http or https/],
      [{ ...base, serverUrl: 'https://u:p@host' }, /must not carry a user or password/],
      [{ ...base, idleExitSeconds: 0 }, /idleExitSeconds must be more than 0/],
      [{ ...base, idleExitSeconds: 1.5 }, /whole seconds/],
      [{ ...base, tokenFile: 'token' }, /tokenFile: tokenFile must be an absolute path/],
      [{ ...base, name: '' }, /name/],
      [{ ...base, extraEnv: { WHETSTONE_WORKER_TOKEN: 'wst_abc' } }, /extraEnv.*not in extraEnv/],
      [{ ...base, extraEnv: { TOKEN: 'wst_Abc123-_xyz0123456789' } }, /extraEnv.TOKEN: .*holds a registration token/],
      [{ ...base, name: 'w-wst_Abc123-_xyz0123456789' }, /name: name holds a registration token/],
      [{ ...base, extraEnv: { 'A-B': 'x' } }, /extraEnv.A-B: not an environment variable name/],
      [{ ...base, extraEnv: { SLURM_JOB_ID: '1' } }, /Slurm's own/],
      [{ ...base, token: 'wst_x' } as never, /Unrecognized key/i],
    ];
    for (const [input, message] of refused) expect(() => workerBatchScript(input), JSON.stringify(input)).toThrow(message);
  });
});

// End to end on a real one-node Slurm and a real server with PostgreSQL.
const started = await startLocalSlurm();
const cluster: LocalSlurm | null = 'error' in started ? null : started;
if (!cluster) reportSlurmMissing('The Slurm worker test (gpu-worker/cluster/worker-script.test.ts)', 'error' in started ? started.error : '');

afterAll(async () => {
  await cluster?.stop();
});

if (cluster) describeSlurmWorker(cluster);

function describeSlurmWorker(c: LocalSlurm): void {
  describe('a worker started by sbatch on a one-node Slurm', () => {
    const s = useTestServer({ withScheduler: true });
    const opts = { slurmConf: c.slurmConf };
    let home = '';
    beforeAll(() => {
      home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-slurm-worker-'));
    });
    afterAll(() => fs.rmSync(home, { recursive: true, force: true }));
    const read = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');
    // Slurm's own CLI (the command as a value, as slurm.test.ts runs them).
    const slurmCli = (command: string, args: string[]) => execFileSync(command, args, { env: { ...process.env, SLURM_CONF: c.slurmConf }, encoding: 'utf8' });
    const cmdlines = () =>
      fs
        .readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .map((pid) => {
          try {
            return { pid, argv: fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8') };
          } catch {
            return null; // exited meanwhile
          }
        })
        .filter((x) => x !== null);

    it('registers with its Slurm job id, runs a job, and after the idle time exits: the Slurm job COMPLETES; the token shows nowhere', async () => {
      const IDLE_S = 3;
      const team: Team = await seedTeam(s.t.db);
      const token = team.workerToken;
      const output = path.join(c.dir, 'jobs', 'worker-%j.out');
      const script = workerBatchScript({
        installPath: repoRoot,
        serverUrl: s.server.url,
        idleExitSeconds: IDLE_S,
        nodePath: process.execPath,
        extraEnv: { WHETSTONE_HOME: home, WHETSTONE_BACKEND: 'wasm' },
      });
      expect(script).not.toContain(token);

      const slurmJob = await sbatch(
        { script, partition: 'whetstone', gres: 'gpu:1', cpus: 1, memMb: 2048, timeLimit: 10, jobName: 'whetstone-worker', output, env: { WHETSTONE_WORKER_TOKEN: token } },
        opts,
      );
      const log = output.replace('%j', slurmJob);
      try {
        const worker = await waitUntil(
          `the worker of Slurm job ${slurmJob} to register`,
          async () => {
            const st = (await squeue([slurmJob], opts)).get(slurmJob);
            if (st?.finished) throw new Error(`the Slurm job ended (${st.state}, ${st.reason}) before registering:\n${read(log)}`);
            return s.t.db.worker.findFirst({ where: { teamId: team.teamId } });
          },
          90_000,
        );
        expect(worker.labels).toMatchObject({ 'slurm.jobId': slurmJob, 'slurm.cluster': 'whetstone' });
        expect(worker.name).toBe(`${os.hostname()}-slurm-${slurmJob}`);

        // While the worker runs: its batch script as Slurm keeps it, and every process's argv.
        const kept = slurmCli('scontrol', ['write', 'batch_script', slurmJob, '-']);
        expect(kept).toContain('gpu-worker/daemon.ts');
        expect(kept).not.toContain(token);
        const shown = slurmCli('scontrol', ['-dd', 'show', 'job', slurmJob]);
        expect(shown).not.toContain(token);
        const argvs = cmdlines();
        expect(argvs.some((p) => p.argv.includes('gpu-worker/daemon.ts') && p.argv.includes('--idle-exit'))).toBe(true);
        for (const p of argvs) expect(p.argv, `process ${p.pid}`).not.toContain(token);

        // A tiny job runs on it.
        const job = await submitTrain(s.server.url, team, 3, 1000);
        await waitUntil(`job ${job.id} to succeed`, async () => {
          const state = await jobState(s.t.db, job.id);
          if (state === 'FAILED' || state === 'CANCELLED') throw new Error(`job ${state}:\n${read(log)}`);
          return state === 'SUCCEEDED';
        }, 120_000);
        const attempt = await s.t.db.jobAttempt.findFirstOrThrow({ where: { jobId: job.id } });
        expect(attempt.workerId).toBe(worker.id);

        // Idle: the daemon drains and exits 0, and Slurm counts the job COMPLETED.
        const done = await waitUntil(`Slurm job ${slurmJob} to end`, async () => {
          const st = (await squeue([slurmJob], opts)).get(slurmJob);
          return st?.finished ? st : null;
        }, 60_000);
        expect(done.state, read(log)).toBe('COMPLETED');
        expect(read(log)).toMatch(new RegExp(`no job for ${IDLE_S} s \\(--idle-exit\\): draining and exiting`));
      } finally {
        await scancel(slurmJob, opts);
      }
      for (const file of [log, ...fs.readdirSync(path.join(c.dir, 'log')).map((f) => path.join(c.dir, 'log', f))]) {
        expect(read(file), file).not.toContain(token);
      }
    });
  });
}
