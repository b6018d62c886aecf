import { afterAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../db/client';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded';
import { jobState, killAll, stepNumbers, seedTeam, sleep, startServer, startWorker, stepsOf, submitTrain, tempDir, waitUntil } from '../test-support/reliability/harness';

// PostgreSQL stops mid-run and comes back on the same address: the server's pools and the
// scheduler's LISTEN connection reconnect, the worker's writes wait and retry, the run
// finishes with every step once, and new jobs are placed again.

describe('reliability: PostgreSQL restarts mid-run', () => {
  let pg: EmbeddedDatabase | null = null;
  let db: Db | null = null;
  afterAll(async () => {
    await killAll();
    await db?.$disconnect().catch(() => {});
    await pg?.stop().catch(() => {});
  });

  it('server and worker reconnect, and nothing acknowledged is lost', async () => {
    const home = tempDir('whetstone-rel-pg-');
    const port = await freePort();
    pg = await startEmbeddedPostgres(home, undefined, port);
    const { url, proc: server } = await startServer({ databaseUrl: pg.url, name: 'server' });
    db = createDb(pg.url, 2);
    const team = await seedTeam(db);
    startWorker({ url, token: team.workerToken, name: 'w', home: tempDir('whetstone-rel-workers-') });

    const steps = 10;
    const job = await submitTrain(url, team, steps, 2);
    await waitUntil('metrics flowing', async () => (await db!.metricPoint.count({ where: { jobId: job.id, key: 'reward/mean' } })) >= 2, 60_000, 50);
    const before = await db.metricPoint.count({ where: { jobId: job.id } });
    // The database goes away while the run is still going.
    expect(await jobState(db, job.id)).toBe('RUNNING');
    await pg.stop();
    pg = null;
    await sleep(3_000);
    pg = await startEmbeddedPostgres(home, undefined, port);

    await waitUntil('the job to succeed', async () => (await jobState(db!, job.id)) === 'SUCCEEDED', 60_000, 250);
    expect(await db.metricPoint.count({ where: { jobId: job.id } })).toBeGreaterThan(before);
    expect(await stepsOf(db, job.id)).toEqual(stepNumbers(steps));
    expect(await stepsOf(db, job.id, 'loss/total')).toEqual(stepNumbers(steps));
    expect(await db.jobAttempt.count({ where: { jobId: job.id } })).toBe(1);
    // The scheduler works again: a new job is placed and runs.
    const next = await submitTrain(url, team, 2, 2);
    await waitUntil('a job submitted after the restart to succeed', async () => (await jobState(db!, next.id)) === 'SUCCEEDED', 45_000, 250);
    expect(server.child.exitCode).toBeNull();
  }, 120_000);
});
