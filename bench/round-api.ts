/**
 * bench:scheduler's `round` section (issue 20): api_p99_ms_during_round, a tRPC query's latency
 * on the real server while its leader plans and applies the round of a large synthetic cluster
 * (server/test-support/synthetic-cluster.ts: 2,000 workers of 8 devices, 90% busy, 50,000 queued
 * jobs of 50 teams and 500 users, priorities 0–4), written straight into a database of its own.
 * The server starts on the cluster, the API is warmed, then the queue arrives in one transaction
 * with a NOTIFY, as submissions wake the leader; queries are sent every 20 ms from then until the
 * round has written its waiting reasons (its last step).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDb } from '../server/db/client';
import { migrate } from '../server/db/migrate';
import { seedTeam, startServer, trpc } from '../server/test-support/reliability/harness';
import { syntheticCluster } from '../server/test-support/synthetic-cluster';
import { SCHEDULER_CHANNEL } from '../server/scheduler/notify';

/**
 * Rows of one table by columns, inserted in chunks through unnest (one statement a chunk). A
 * column's type `text:int[]` passes text and casts each value (unnest flattens arrays of arrays).
 */
async function insert(client: pg.Client, table: string, columns: Record<string, string>, rows: unknown[][]): Promise<void> {
  const names = Object.keys(columns);
  const types = names.map((n) => columns[n].split(':'));
  for (let i = 0; i < rows.length; i += 5_000) {
    const chunk = rows.slice(i, i + 5_000);
    const params = names.map((_, c) => chunk.map((r) => r[c]));
    const unnest = types.map(([given], c) => `$${c + 1}::${given}[]`).join(', ');
    const select = types.map(([, cast], c) => (cast ? `c${c}::${cast}` : `c${c}`)).join(', ');
    await client.query(`INSERT INTO "${table}" (${names.map((n) => `"${n}"`).join(', ')}) SELECT ${select} FROM unnest(${unnest}) AS u(${names.map((_, c) => `c${c}`).join(', ')})`, params);
  }
}

const JOB_COLUMNS = { id: 'text', teamId: 'text', ownerId: 'text', kind: '"JobKind"', state: '"JobState"', priority: 'int', deviceCount: 'int', deviceKind: '"DeviceKind"', memoryBytes: 'bigint', timeLimitSeconds: 'int', config: 'jsonb', queuedAt: 'timestamp', notBefore: 'timestamp', updatedAt: 'timestamp' };

/**
 * The synthetic cluster as rows: teams, users, quotas, workers and devices, running jobs with
 * active attempts; answers a function that adds the queue (and tells the scheduler), so that the
 * server can be started and warmed before the round.
 */
async function seedCluster(client: pg.Client): Promise<{ queued: number; running: number; workers: number; submitQueue: () => Promise<void> }> {
  const { input } = syntheticCluster({ workers: 2_000, queued: 50_000, priorities: 'mixed' });
  {
    const now = new Date(input.now);
    const future = new Date(Date.now() + 3_600_000);
    const teams = [...new Set([...input.queued.map((j) => j.teamId), ...input.running.map((j) => j.teamId), ...input.quotas.map((q) => q.teamId)])];
    const users = [...new Set([...input.queued.map((j) => j.ownerId), ...input.running.map((j) => j.ownerId)])];
    await insert(client, 'Team', { id: 'text', name: 'text', slug: 'text', updatedAt: 'timestamp' }, teams.map((t) => [t, t, `bench-${t}`, now]));
    await insert(client, 'User', { id: 'text', email: 'text', name: 'text', updatedAt: 'timestamp' }, users.map((u) => [u, `${u}@bench.test`, u, now]));
    await insert(client, 'TeamQuota', { teamId: 'text', maxConcurrentDevices: 'int', maxQueuedJobs: 'int', updatedAt: 'timestamp' }, input.quotas.map((q) => [q.teamId, q.maxConcurrentDevices, 100_000, now]));
    // Heartbeats an hour ahead: the simulated workers stay ONLINE without sending any.
    await insert(client, 'Worker', { id: 'text', teamId: 'text', name: 'text', hostname: 'text', credentialHash: 'text', backend: 'text', version: 'text', lastHeartbeatAt: 'timestamp' },
      input.workers.map((w) => [w.id, w.teamId, w.name ?? w.id, 'bench', `bench-${w.id}`, 'cuda', '0', future]));
    await insert(client, 'WorkerDevice', { id: 'text', workerId: 'text', index: 'int', kind: '"DeviceKind"', name: 'text', memoryBytes: 'bigint' },
      input.workers.flatMap((w) => w.devices.map((d) => [`${w.id}-${d.index}`, w.id, d.index, d.kind, 'gpu', String(d.memoryBytes)])));
    await insert(client, 'Job', JOB_COLUMNS, input.running.map((j) => [j.id, j.teamId, j.ownerId, 'TRAIN', 'RUNNING', j.priority, j.deviceIndexes.length, 'CUDA', '0', j.timeLimitSeconds, '{}', new Date(j.startedAt), null, now]));
    // Started now (the synthetic start times would put time limits in the past): housekeeping stops none of them.
    await insert(client, 'JobAttempt', { id: 'text', jobId: 'text', number: 'int', workerId: 'text', deviceIndexes: 'text:int[]', leaseExpiresAt: 'timestamp', startedAt: 'timestamp' },
      input.running.map((j) => [`${j.id}-a1`, j.id, 1, j.workerId, `{${j.deviceIndexes.join(',')}}`, future, new Date()]));
    const submitQueue = async () => {
      await client.query('BEGIN');
      await insert(client, 'Job', JOB_COLUMNS, input.queued.map((j) => [j.id, j.teamId, j.ownerId, 'TRAIN', 'QUEUED', j.priority, j.deviceCount, j.deviceKind, String(j.memoryBytes), j.timeLimitSeconds, '{}', new Date(j.queuedAt), j.notBefore === null ? null : new Date(j.notBefore), now]));
      await client.query(`SELECT pg_notify($1, 'bench: the queue arrived')`, [SCHEDULER_CHANNEL]);
      await client.query('COMMIT');
    };
    return { queued: input.queued.length, running: input.running.length, workers: input.workers.length, submitQueue };
  }
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** Runs the section in a database of its own on `serverUrl`'s PostgreSQL; answers the figures. */
export async function roundApi(databaseUrlOf: (name: string) => string, admin: pg.Client) {
  const name = `whetstone_bench_round_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const databaseUrl = databaseUrlOf(name);
  try {
    await migrate(databaseUrl);
    const probe = new pg.Client({ connectionString: databaseUrl });
    await probe.connect();
    const { submitQueue, ...seeded } = await seedCluster(probe);
    const db = createDb(databaseUrl, 2);
    const team = await seedTeam(db);
    const { url, proc } = await startServer({ databaseUrl, name: 'bench-round-server', leaseSeconds: 3_600 });
    // Warm: the API's first answers (loading and compiling) are not what a round costs.
    for (let i = 0; i < 50; i += 1) await trpc(url, team.apiKey, 'quotas.get', { teamId: team.teamId }, 'query');
    await submitQueue();
    const startedAt = performance.now();
    const latencies: number[] = [];
    let done = false;
    const watcher = (async () => {
      while (!done) {
        const { rows } = await probe.query<{ n: number }>(`SELECT count(*)::int AS n FROM "Job" WHERE "waitingReason" IS NOT NULL`);
        if (rows[0].n > 0) done = true;
        else await new Promise((r) => setTimeout(r, 100));
        if (performance.now() - startedAt > 300_000) throw new Error('the round wrote no waiting reason in 5 minutes');
      }
    })();
    while (!done) {
      const t0 = performance.now();
      await trpc(url, team.apiKey, 'quotas.get', { teamId: team.teamId }, 'query');
      latencies.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 20));
    }
    await watcher;
    const roundS = (performance.now() - startedAt) / 1000;
    const [{ placed }] = (await probe.query<{ placed: number }>(`SELECT count(*)::int AS placed FROM "Job" WHERE state = 'ASSIGNED'`)).rows;
    const [{ preempted }] = (await probe.query<{ preempted: number }>(`SELECT count(*)::int AS preempted FROM "JobAttempt" WHERE "preemptRequestedAt" IS NOT NULL`)).rows;
    await probe.end();
    await db.$disconnect();
    proc.child.kill('SIGTERM');
    return { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: Math.max(...latencies), queries: latencies.length, roundS, placed, preempted, ...seeded };
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
  }
}
