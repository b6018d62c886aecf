import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { probeEnvironmentSource } from '../test-support/probe-environment';
import { jobState, seedTeam, startServer, startWorker, stepNumbers, stepsOf, submitTrain, tempDir, trpc, useReliabilityDatabase, waitUntil } from '../test-support/reliability/harness';

// Hostile tenants beside an honest one, on real processes (server, worker daemon, PostgreSQL):
// one team trains while five others save hostile environments at once, and a sixth runs a job
// that floods its log. The honest job keeps its one attempt, the server's memory comes back, and
// the flood is bounded in the database. (The dry-run pool itself: server/environments/hostile-dry-runs.test.ts.)

const MANIFEST = { version: '1.0.0', kind: 'multi-turn', limits: { maxTurns: 1000, maxTokensPerTurn: 4, maxResponseTokens: 4000 } };

/** Slow steps just under the per-call deadline, huge observations, a thousand turns. */
const SLOW_AND_HUGE = probeEnvironmentSource('slow', `const until = Date.now() + 900; while (Date.now() < until) {}
    return { observation: 'x'.repeat(900000), reward: 0, terminated: ctx.state.n >= 1000 };`);
/** Allocates until something stops it. */
const MEMORY_BOMB = probeEnvironmentSource('bomb', `const hoard = []; for (;;) hoard.push('y'.repeat(1 << 20) + hoard.length);`);
/** Never returns. */
const LOOP = probeEnvironmentSource('loop', `for (;;) {}`);
/** Writes 200 lines of 1.75 KB at each episode's third call: 350 KB an episode, over 60 MB a run unbounded. */
const CHATTY = probeEnvironmentSource('chatty', `if (ctx.state.n > 2) for (let i = 0; i < 200; i++) console.log('z'.repeat(1750) + i);
    return { observation: 'ok', reward: ctx.state.n % 2, terminated: ctx.state.n >= 3 };`);

/** The resident memory of a process, from /proc (bytes). */
function residentBytes(pid: number): number {
  const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))!;
  return Number(/(\d+)/.exec(line)![1]) * 1024;
}

async function databaseBytes(db: { $queryRawUnsafe<T>(q: string): Promise<T> }): Promise<number> {
  const [row] = await db.$queryRawUnsafe<Array<{ size: bigint }>>('SELECT pg_database_size(current_database()) AS size');
  return Number(row.size);
}

type Saved = { validation: { ok: boolean; errors: Array<{ message: string }> } };

describe('reliability: hostile tenants beside an honest one', () => {
  const ctx = useReliabilityDatabase();

  it('five hostile saves at once: each is INVALID, health answers throughout, the honest job keeps its single attempt, and the server gives its memory back', async () => {
    const honest = await seedTeam(ctx.t.db);
    const hostile = await Promise.all(Array.from({ length: 5 }, () => seedTeam(ctx.t.db)));
    // A lease short enough that a server stalled by user code for a dry run's length would lose it.
    const { url, proc } = await startServer({ databaseUrl: ctx.t.url, leaseSeconds: 20 });
    startWorker({ url, token: honest.workerToken, name: 'honest', home: tempDir('whetstone-rel-workers-') });
    await waitUntil('the worker online', async () => (await ctx.t.db.worker.count({ where: { teamId: honest.teamId, state: 'ONLINE' } })) === 1, 60_000);

    const steps = 30;
    const job = await submitTrain(url, honest, steps, 100);
    await waitUntil('the honest job to make progress', async () => (await ctx.t.db.metricPoint.count({ where: { jobId: job.id, key: 'reward/mean' } })) >= 1, 120_000, 100);
    // The baseline once the server has served the API, the stream and the scheduler for a while.
    const before = residentBytes(proc.child.pid!);

    let saving = true;
    let answered = 0;
    const poll = (async () => {
      while (saving && answered < 5_000) {
        const res = await fetch(`${url}/api/health`);
        expect(res.status).toBe(200);
        answered++;
      }
    })();
    const sources = [SLOW_AND_HUGE, MEMORY_BOMB, LOOP, SLOW_AND_HUGE, MEMORY_BOMB];
    const saves = await Promise.all(
      hostile.map((team, i) =>
        trpc<Saved>(url, team.apiKey, 'environments.saveVersion', {
          teamId: team.teamId, name: `hostile-${i}`, entry: 'env.ts', files: { 'env.ts': sources[i] }, manifest: { name: `hostile-${i}`, ...MANIFEST },
        }),
      ),
    );
    saving = false;
    await poll;
    for (const saved of saves) {
      expect(saved.validation.ok).toBe(false);
      expect(saved.validation.errors.length).toBeGreaterThan(0);
    }
    expect(answered).toBeGreaterThan(10);

    await waitUntil('the honest job to succeed', async () => (await jobState(ctx.t.db, job.id)) === 'SUCCEEDED', 300_000, 250);
    expect(await ctx.t.db.jobAttempt.count({ where: { jobId: job.id } })).toBe(1);
    expect(await stepsOf(ctx.t.db, job.id)).toEqual(stepNumbers(steps));

    // User code's memory lived and died in the pool's processes; the server's own stays where it was.
    const after = await waitUntil('the server memory to settle', async () => {
      const rss = residentBytes(proc.child.pid!);
      return rss - before < 100 * 2 ** 20 ? rss : null;
    }, 60_000, 1_000).catch(() => residentBytes(proc.child.pid!));
    expect((after - before) / 2 ** 20).toBeLessThan(100);
  }, 600_000);

  it('a job whose environment floods its log after the dry run leaves the database less than 50 MB larger, and says how many lines it dropped', async () => {
    const team = await seedTeam(ctx.t.db);
    const { url } = await startServer({ databaseUrl: ctx.t.url });
    startWorker({ url, token: team.workerToken, name: 'chatty', home: tempDir('whetstone-rel-workers-') });
    await waitUntil('the worker online', async () => (await ctx.t.db.worker.count({ where: { teamId: team.teamId, state: 'ONLINE' } })) === 1, 60_000);
    const saved = await trpc<Saved & { versionId: string }>(url, team.apiKey, 'environments.saveVersion', {
      teamId: team.teamId, name: 'chatty', entry: 'env.ts', files: { 'env.ts': CHATTY }, manifest: { name: 'chatty', ...MANIFEST, limits: { maxTurns: 4, maxTokensPerTurn: 4, maxResponseTokens: 16 } },
    });
    expect(saved.validation).toMatchObject({ ok: true });

    const before = await databaseBytes(ctx.t.db);
    const steps = 6;
    const job = await trpc<{ id: string }>(url, team.apiKey, 'jobs.submit', {
      teamId: team.teamId, kind: 'TRAIN',
      config: { environmentVersionId: saved.versionId, training: { steps, batchSize: 8, groupSize: 4, checkpointEvery: 100, flatRewardWarnSteps: 0, evalEpisodes: 0, model: { layers: 1, width: 16, heads: 2 } } },
    });
    await waitUntil('the chatty job to end', async () => ['SUCCEEDED', 'FAILED'].includes(await jobState(ctx.t.db, job.id)), 300_000, 250);
    expect(await jobState(ctx.t.db, job.id)).toBe('SUCCEEDED');

    // Without the budget this job writes 8 × 4 × 200 lines of 1.75 KB a step (over 60 MB in 6 steps).
    const grown = (await databaseBytes(ctx.t.db)) - before;
    expect(grown / 2 ** 20).toBeLessThan(50);
    const logs = await ctx.t.db.logLine.findMany({ where: { jobId: job.id }, select: { message: true } });
    const dropped = logs.map((l) => /^(\d+) environment log lines dropped/.exec(l.message)?.[1]).filter(Boolean).map(Number);
    expect(dropped.length).toBeGreaterThan(0);
    expect(dropped.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  }, 600_000);
});
