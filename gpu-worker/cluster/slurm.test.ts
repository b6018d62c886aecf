import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type LocalSlurm, reportSlurmMissing, startLocalSlurm, waitUntil } from '../test-support/slurm-cluster';
import { sbatch, scancel, SlurmError, squeue, type SlurmJobStatus } from './slurm';

// Integration: a real one-node Slurm (two GRES GPUs) started by scripts/slurm/local-cluster.sh.
const started = await startLocalSlurm();
const cluster: LocalSlurm | null = 'error' in started ? null : started;
if (!cluster) reportSlurmMissing('The Slurm wrapper tests (gpu-worker/cluster/slurm.test.ts)', 'error' in started ? started.error : '');

afterAll(async () => {
  await cluster?.stop();
});

describe('Slurm wrapper: requests it refuses before running anything', () => {
  const base = { script: '#!/bin/bash\ntrue\n', partition: 'whetstone' };
  it('refuses what sbatch would misread or what would leak', async () => {
    await expect(sbatch({ ...base, script: 'echo no shebang\n' })).rejects.toThrow(/must start with #!/);
    await expect(sbatch({ ...base, env: { 'BAD-NAME': 'x' } })).rejects.toThrow(/not an environment variable name/);
    await expect(sbatch({ ...base, env: { SBATCH_PARTITION: 'x' } })).rejects.toThrow(/Slurm's own variables/);
    await expect(sbatch({ ...base, extraDirectives: ['--comment=a\n#SBATCH --partition=b'] })).rejects.toThrow(/one line/);
    await expect(sbatch({ ...base, timeLimit: '1h' })).rejects.toThrow(/not one of Slurm's forms/);
    await expect(sbatch({ ...base, cpus: 0 })).rejects.toThrow(/positive integer/);
    await expect(squeue(['12; rm -rf /'])).rejects.toThrow(/not a Slurm job id/);
    await expect(scancel('1', { signal: 'USR1 2' })).rejects.toThrow(/not a signal/);
  });
});

// describe.skipIf would still run the body, which needs the cluster.
if (cluster) describeSlurm(cluster);

function describeSlurm(c: LocalSlurm): void {
  describe('Slurm commands against a one-node Slurm', () => {
    const opts = { slurmConf: c.slurmConf };
    const out = (name: string) => path.join(c.dir, 'jobs', name);
    const read = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');

    async function status(id: string): Promise<SlurmJobStatus | undefined> {
      return (await squeue([id], opts)).get(id);
    }
    function untilState(id: string, states: string[], timeoutMs = 30_000): Promise<SlurmJobStatus> {
      return waitUntil(`job ${id} to be ${states.join(' or ')}`, async () => {
        const s = await status(id);
        return s && states.includes(s.state) ? s : null;
      }, timeoutMs);
    }
    function untilFile(file: string, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
      return waitUntil(`${path.basename(file)} to match ${pattern}`, async () => (pattern.test(read(file)) ? read(file) : null), timeoutMs);
    }
    function slurmCli(command: string, args: string[]): Promise<string> {
      return new Promise((resolve, reject) =>
        execFile(command, args, { env: { ...process.env, SLURM_CONF: c.slurmConf }, encoding: 'utf8' }, (e, stdout, stderr) => (e ? reject(new Error(`${command}: ${stderr}`)) : resolve(stdout))),
      );
    }

    it('submits a GPU job: its id, its state and reason while it runs, then COMPLETED', async () => {
      const file = out('gpu.out');
      const id = await sbatch(
        {
          script: `#!/bin/bash\necho "gpus=$CUDA_VISIBLE_DEVICES"\nwhile [ ! -e '${file}.go' ]; do sleep 0.1; done\n`,
          partition: 'whetstone',
          gres: 'gpu:1',
          cpus: 1,
          memMb: 64,
          timeLimit: 5,
          jobName: 'whetstone-test',
          output: file,
        },
        opts,
      );
      expect(id).toMatch(/^\d+$/);
      const running = await untilState(id, ['RUNNING']);
      expect(running).toMatchObject({ jobId: id, state: 'RUNNING', reason: 'None', finished: false });
      expect(await untilFile(file, /gpus=\d/)).toMatch(/^gpus=[01]$/m);
      fs.writeFileSync(`${file}.go`, '');
      expect(await untilState(id, ['COMPLETED'])).toMatchObject({ state: 'COMPLETED', finished: true });
    });

    it('three one-GPU jobs on two GPUs: two run, the third is PENDING for Resources until one ends', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push(await sbatch({ script: '#!/bin/bash\nsleep 600\n', partition: 'whetstone', gres: 'gpu:1', output: '/dev/null' }, opts));
      }
      // The scheduler places jobs in submission order: the first two run, the third waits.
      await untilState(ids[0]!, ['RUNNING']);
      await untilState(ids[1]!, ['RUNNING']);
      const third = await waitUntil('the third job to wait for Resources', async () => {
        const s = await status(ids[2]!);
        return s?.state === 'PENDING' && s.reason === 'Resources' ? s : null;
      });
      expect(third).toMatchObject({ state: 'PENDING', reason: 'Resources', finished: false });

      await scancel(ids[0]!, opts);
      expect(await untilState(ids[0]!, ['CANCELLED'])).toMatchObject({ finished: true });
      await untilState(ids[2]!, ['RUNNING']);
      await scancel(ids[1]!, opts);
      await scancel(ids[2]!, opts);
      await untilState(ids[1]!, ['CANCELLED']);
      await untilState(ids[2]!, ['CANCELLED']);
    });

    it('scancel with a signal reaches the batch shell, which can stop cleanly', async () => {
      const file = out('signal.out');
      const id = await sbatch(
        {
          // bash runs a trap only between commands: wait on a background sleep so USR1 is seen at once.
          script: '#!/bin/bash\ntrap \'echo "got USR1"; exit 0\' USR1\necho ready\nwhile true; do sleep 1 & wait $!; done\n',
          partition: 'whetstone',
          output: file,
        },
        opts,
      );
      await untilFile(file, /ready/);
      await scancel(id, { ...opts, signal: 'USR1' });
      await untilFile(file, /got USR1/);
      expect(await untilState(id, ['COMPLETED'])).toMatchObject({ state: 'COMPLETED' });
      // Signalling a job that has ended is Slurm's error; cancelling it is not.
      await expect(scancel(id, { ...opts, signal: 'USR1' })).rejects.toThrow(/Invalid job id specified/);
      await scancel(id, opts);
    });

    it('--signal gives the batch shell notice before the time limit', async () => {
      const file = out('notice.out');
      // Notice 60 s before a 1-minute limit is due at once; slurmctld checks time limits every 30 s.
      const id = await sbatch(
        {
          script: '#!/bin/bash\ntrap \'echo "notice at $SECONDS s"; exit 0\' USR1\necho ready\nwhile true; do sleep 1 & wait $!; done\n',
          partition: 'whetstone',
          timeLimit: 1,
          signal: 'B:USR1@60',
          output: file,
        },
        opts,
      );
      const text = await untilFile(file, /notice at \d+ s/, 50_000);
      expect(Number(/notice at (\d+) s/.exec(text)![1])).toBeLessThan(60);
      expect(await untilState(id, ['COMPLETED'])).toMatchObject({ state: 'COMPLETED' });
    });

    it('extra directives become #SBATCH lines of the script', async () => {
      const id = await sbatch({ script: '#!/bin/bash\nsleep 600\n', partition: 'whetstone', output: '/dev/null', extraDirectives: ['--job-name=from-directive', '#SBATCH --comment=whetstone-extra'] }, opts);
      const shown = await slurmCli('scontrol', ['show', 'job', id]);
      expect(shown).toContain('JobName=from-directive');
      expect(shown).toContain('Comment=whetstone-extra');
      await scancel(id, opts);
      await untilState(id, ['CANCELLED']);
    });

    it("a bad partition: sbatch fails with Slurm's own message", async () => {
      const error = await sbatch({ script: '#!/bin/bash\ntrue\n', partition: 'no-such-partition', output: '/dev/null' }, opts).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SlurmError);
      const e = error as SlurmError;
      expect(e.message).toBe('sbatch: error: invalid partition specified: no-such-partition\nsbatch: error: Batch job submission failed: Invalid partition name specified');
      expect(e.reason).toBe('Batch job submission failed: Invalid partition name specified');
      expect(e.exitCode).toBe(1);

      const gres = await sbatch({ script: '#!/bin/bash\ntrue\n', partition: 'whetstone', gres: 'gpu:3', output: '/dev/null' }, opts).catch((x: unknown) => x);
      expect((gres as SlurmError).reason).toBe('Batch job submission failed: Requested node configuration is not available');
    });

    it('a secret in env reaches the job, and is not in argv, the script, scontrol show job -dd or the logs', async () => {
      const token = `wst_${randomBytes(16).toString('hex')}`;
      const file = out('env.out');
      const id = await sbatch(
        {
          script: '#!/bin/bash\nprintf %s "$WHETSTONE_TOKEN" | sha256sum\nwhile true; do sleep 1 & wait $!; done\n',
          partition: 'whetstone',
          output: file,
          env: { WHETSTONE_TOKEN: token },
        },
        opts,
      );
      const digest = createHash('sha256').update(token).digest('hex');
      expect(await untilFile(file, /[0-9a-f]{64}/)).toContain(digest);

      const showJob = await slurmCli('scontrol', ['-dd', 'show', 'job', id]);
      expect(showJob).toContain(`JobId=${id}`);
      expect(showJob).not.toContain(token);
      const batchScript = await slurmCli('scontrol', ['write', 'batch_script', id, '-']);
      expect(batchScript).toContain('sha256sum');
      expect(batchScript).not.toContain(token);
      // argv of every process on this machine, the job's among them.
      for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
        let argv: string;
        try {
          argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        } catch {
          continue; // exited meanwhile
        }
        expect(argv, `process ${pid}`).not.toContain(token);
      }
      for (const log of fs.readdirSync(path.join(c.dir, 'log'))) {
        expect(read(path.join(c.dir, 'log', log)), log).not.toContain(token);
      }
      expect(read(file)).not.toContain(token);

      await scancel(id, opts);
      await untilState(id, ['CANCELLED']);
    });

    it('squeue leaves out jobs Slurm does not know; scancel of one is no error', async () => {
      expect((await squeue(['999999'], opts)).size).toBe(0);
      await scancel('999999', opts);
    });

    it('a command past its timeout is killed and says so', async () => {
      await expect(squeue(['1'], { ...opts, timeoutMs: 1 })).rejects.toThrow(/squeue did not answer within 1 ms/);
    });
  });
}
