import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobState, seedTeam, submitTrain, trpc, type Team } from '../../server/test-support/reliability/harness';
import { repoRoot } from '../../server/paths';
import { useTestServer } from '../../server/test-support/test-server';
import { ProviderAgent } from '../provider-agent';
import { type LocalSlurm, reportSlurmMissing, startLocalSlurm, waitUntil } from '../test-support/slurm-cluster';

// Issue 22 end to end on a real one-node Slurm (scripts/slurm/local-cluster.sh), a real server
// with PostgreSQL and its scheduler, the provider agent (gpu-worker/provider-agent.ts) and real
// worker daemons that Slurm starts: a job waiting with no worker makes the provider launch one,
// which registers, runs it and, idle, hands its node back; a partition Slurm refuses reaches the
// waiting job in Slurm's words.

const started = await startLocalSlurm();
const cluster: LocalSlurm | null = 'error' in started ? null : started;
if (!cluster) reportSlurmMissing('The Slurm provider test (gpu-worker/cluster/provider.test.ts)', 'error' in started ? started.error : '');

afterAll(async () => {
  await cluster?.stop();
});

if (cluster) describeProvider(cluster);

function describeProvider(c: LocalSlurm): void {
  describe('a Slurm provider on a one-node Slurm', () => {
    process.env.WHETSTONE_PROVIDER_POLL_SECONDS = '1';
    const s = useTestServer({ withScheduler: true });
    let home = '';
    let team: Team;
    let agent: ProviderAgent;
    let running: Promise<void>;
    let providerId: string;
    const settings = {
      partition: 'whetstone', gres: 'gpu:1', devicesPerWorker: 1, deviceKind: 'WASM', cpusPerWorker: 1, memoryMbPerWorker: 2048, timeLimit: '10',
      installPath: repoRoot, idleSeconds: 5, registerTimeoutSeconds: 180, noticeSeconds: 0, maxWorkers: 2, maxPendingLaunches: 2,
    };
    const logs = () => {
      const dir = path.join(c.dir, 'jobs');
      return fs.existsSync(dir) ? fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).join('\n') : '';
    };

    beforeAll(async () => {
      home = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-slurm-provider-'));
      team = await seedTeam(s.t.db);
      const created = await trpc<{ id: string; token: string }>(s.server.url, team.apiKey, 'providers.create', { teamId: team.teamId, name: 'local', kind: 'SLURM', settings });
      providerId = created.id;
      agent = new ProviderAgent({
        server: s.server.url,
        token: created.token,
        slurm: { slurmConf: c.slurmConf },
        workerEnv: { WHETSTONE_HOME: home, WHETSTONE_BACKEND: 'wasm' },
        logDir: path.join(c.dir, 'jobs'),
        log: () => {},
      });
      running = agent.run();
    });
    afterAll(async () => {
      if (agent) agent.stopped = true;
      await running;
      fs.rmSync(home, { recursive: true, force: true });
    });

    it('launches a worker for a waiting job; it registers, runs the job, and idle, ends its Slurm job', async () => {
      const job = await submitTrain(s.server.url, team, 3, 1000);
      await waitUntil(`job ${job.id} to succeed`, async () => {
        const state = await jobState(s.t.db, job.id);
        if (state === 'FAILED' || state === 'CANCELLED') throw new Error(`job ${state}:\n${logs()}`);
        return state === 'SUCCEEDED';
      }, 240_000);
      const attempt = await s.t.db.jobAttempt.findFirstOrThrow({ where: { jobId: job.id }, include: { worker: true } });
      const launch = await s.t.db.clusterLaunch.findFirstOrThrow({ where: { providerId, workerToken: { workers: { some: { id: attempt.workerId ?? '' } } } } });
      expect(launch.externalId).toMatch(/^\d+$/);
      expect(attempt.worker?.labels).toMatchObject({ 'slurm.jobId': launch.externalId });
      // Idle for 5 s, the worker drains and exits: Slurm's job COMPLETED, and the launch is over.
      const ended = await waitUntil(`launch ${launch.id} to end`, async () => {
        const row = await s.t.db.clusterLaunch.findUniqueOrThrow({ where: { id: launch.id }, include: { workerToken: true } });
        return row.state === 'ENDED' ? row : null;
      }, 120_000);
      expect(ended.reason).toBe('COMPLETED');
      expect(ended.workerToken.revokedAt).not.toBeNull();
      const provider = await s.t.db.clusterProvider.findUniqueOrThrow({ where: { id: providerId } });
      expect(provider).toMatchObject({ failures: 0, lastError: null });
      expect(provider.lastSeenAt).not.toBeNull();
    });

    it("stops launching when Slurm refuses the partition, and the waiting job says so in Slurm's words", async () => {
      await trpc(s.server.url, team.apiKey, 'providers.update', { teamId: team.teamId, providerId, settings: { ...settings, partition: 'no-such-partition' } });
      const job = await submitTrain(s.server.url, team, 3, 1000);
      const waiting = await waitUntil(`job ${job.id} to name Slurm's refusal`, async () => {
        const row = await s.t.db.job.findUniqueOrThrow({ where: { id: job.id } });
        return row.waitingReason?.includes('Invalid partition name specified') ? row : null;
      }, 60_000);
      expect(waiting.state).toBe('QUEUED');
      expect(waiting.waitingReason).toMatch(/waiting for Slurm \(local\): launches stopped until .*: the cluster refused the launch: sbatch: error: .*Invalid partition name specified/);
      const provider = await s.t.db.clusterProvider.findUniqueOrThrow({ where: { id: providerId } });
      expect(provider.failures).toBe(1);
      await trpc(s.server.url, team.apiKey, 'jobs.cancel', { teamId: team.teamId, jobId: job.id });
    });
  });
}
