import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobState, seedTeam, stepNumbers, stepsOf, submitTrain, trpc, type Team } from '../../server/test-support/reliability/harness';
import { repoRoot } from '../../server/paths';
import { useTestServer } from '../../server/test-support/test-server';
import { ProviderAgent } from '../provider-agent';
import { scancel, squeue } from './slurm';
import { type LocalSlurm, reportSlurmMissing, startLocalSlurm, waitUntil } from '../test-support/slurm-cluster';

// Issue 22 end to end on a real one-node Slurm (scripts/slurm/local-cluster.sh), a real server
// with PostgreSQL and its scheduler, the provider agent (gpu-worker/provider-agent.ts) and real
// worker daemons that Slurm starts: a job waiting with no worker makes the provider launch one,
// which registers, runs it and, idle, hands its node back; three one-GPU jobs on the node's two
// GPUs: two run, the third waits in Slurm's queue (Resources) and says so, then runs; a worker's
// Slurm job cancelled mid-run: another worker is launched and the job resumes from its checkpoint;
// a partition Slurm refuses reaches the waiting job in Slurm's words.

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

    const FINAL = ['ENDED', 'FAILED', 'CANCELLED'];
    /** Every launch of the provider over (its workers idle-exited): the next test starts from none. */
    const allLaunchesOver = () =>
      waitUntil('every launch to be over', async () => (await s.t.db.clusterLaunch.count({ where: { providerId, state: { notIn: FINAL as never } } })) === 0, 120_000);
    const succeeded = (ids: string[]) =>
      waitUntil(`jobs ${ids.join(', ')} to succeed`, async () => {
        const states = await Promise.all(ids.map((id) => jobState(s.t.db, id)));
        const bad = states.findIndex((st) => st === 'FAILED' || st === 'CANCELLED');
        if (bad >= 0) throw new Error(`job ${ids[bad]} ${states[bad]}:\n${logs()}`);
        return states.every((st) => st === 'SUCCEEDED');
      }, 240_000);

    it('three jobs needing one GPU each on two GRES GPUs: two run, the third waits in Slurm (Resources) and says so, then runs', async () => {
      await allLaunchesOver();
      await trpc(s.server.url, team.apiKey, 'providers.update', { teamId: team.teamId, providerId, settings: { ...settings, maxWorkers: 3, maxPendingLaunches: 3 } });
      const since = new Date();
      // 60 steps (about 10 s here): the first two still run while the third's worker waits for a GPU.
      const jobs = [];
      for (let i = 0; i < 3; i += 1) jobs.push(await submitTrain(s.server.url, team, 60, 1000));
      const ids = jobs.map((j) => j.id);
      // One picture, taken when it holds: two jobs running on Slurm workers, the third queued
      // with the provider's note, and its launch pending in Slurm's own queue for Resources.
      const seen = await waitUntil('two jobs running and the third waiting for a Slurm worker pending on Resources', async () => {
        const rows = await s.t.db.job.findMany({ where: { id: { in: ids } } });
        const running = rows.filter((r) => r.state === 'RUNNING');
        const queued = rows.filter((r) => r.state === 'QUEUED');
        if (running.length !== 2 || queued.length !== 1) return null;
        if (!queued[0].waitingReason?.includes('waiting for Slurm (local): 1 worker pending (Resources)')) return null;
        const launches = await s.t.db.clusterLaunch.findMany({ where: { providerId, externalId: { not: null }, state: { notIn: FINAL as never } } });
        if (launches.length !== 3) return null;
        const inSlurm = await squeue(launches.map((l) => l.externalId as string), { slurmConf: c.slurmConf });
        const states = [...inSlurm.values()];
        const pending = states.filter((st) => st.state === 'PENDING');
        if (states.filter((st) => st.state === 'RUNNING').length !== 2 || pending.length !== 1 || pending[0].reason !== 'Resources') return null;
        const pendingLaunch = launches.find((l) => inSlurm.get(l.externalId as string)?.state === 'PENDING');
        return pendingLaunch?.reason === 'Resources' ? { waiting: queued[0], pendingLaunch } : null;
      }, 180_000);
      expect(seen.waiting.waitingCode).toMatch(/^NO_(CAPACITY|WORKER)$/);
      expect(seen.pendingLaunch).toMatchObject({ state: 'PENDING', reason: 'Resources' });
      // The two running jobs end; the third runs (on a freed worker, or on the pending one once it starts) and succeeds.
      await succeeded(ids);
      // Three launches, no more; every worker, the late one too, hands its node back once idle.
      await allLaunchesOver();
      const launches = await s.t.db.clusterLaunch.findMany({ where: { providerId, createdAt: { gte: since } } });
      expect(launches.map((l) => [l.state, l.reason])).toEqual([['ENDED', 'COMPLETED'], ['ENDED', 'COMPLETED'], ['ENDED', 'COMPLETED']]);
    });

    it("scancel of a worker's Slurm job mid-run: another worker is launched and the job resumes from its checkpoint, each step once", async () => {
      await allLaunchesOver();
      await trpc(s.server.url, team.apiKey, 'providers.update', { teamId: team.teamId, providerId, settings });
      const steps = 60;
      const job = await submitTrain(s.server.url, team, steps, 5);
      const checkpoint = await waitUntil('a training checkpoint', () =>
        s.t.db.checkpoint.findFirst({ where: { jobId: job.id, kind: 'TRAINING' }, include: { attempt: { include: { worker: true } } } }), 180_000);
      const first = checkpoint.attempt!;
      const slurmJob = (first.worker!.labels as Record<string, string>)['slurm.jobId'];
      expect(slurmJob).toMatch(/^\d+$/);
      // As an operator or Slurm's preemption would: SIGTERM to the job's processes, SIGKILL KillWait (5 s) later.
      await scancel(slurmJob, { slurmConf: c.slurmConf });
      await succeeded([job.id]);
      const attempts = await s.t.db.jobAttempt.findMany({ where: { jobId: job.id }, orderBy: { number: 'asc' }, include: { worker: true } });
      expect(attempts.length).toBeGreaterThanOrEqual(2);
      expect(attempts[0].id).toBe(first.id);
      const last = attempts[attempts.length - 1];
      expect(last.state).toBe('ENDED');
      expect((last.worker!.labels as Record<string, string>)['slurm.jobId']).not.toBe(slurmJob);
      // Plain scancel signals every process of the job: the runner leaves SIGTERM to the daemon,
      // whose drain has it checkpoint and stop (the attempt ends "preempted"); the job resumes from there.
      expect(attempts[0].exitReason).toMatch(/^preempted: /);
      expect(last.resumedFromId).not.toBeNull();
      const cancelled = await s.t.db.clusterLaunch.findFirstOrThrow({ where: { providerId, externalId: slurmJob } });
      expect(cancelled.state).toBe('CANCELLED');
      expect(await stepsOf(s.t.db, job.id)).toEqual(stepNumbers(steps));
      await allLaunchesOver();
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
