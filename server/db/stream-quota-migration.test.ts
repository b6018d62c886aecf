import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { StreamBatch } from '../../sdk/worker-protocol';
import { streamBytes } from '../streams/stream-quota';
import { migrationsDir } from '../paths';
import { migrate } from './migrate';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { insertJob } from '../test-support/old-schema';

// Runs stored before the stream quota are counted by the migration that brought it, as ingest
// counts a batch (server/streams/stream-quota.ts), so a team starts from what it already keeps.

const MIGRATION = '20261125191959_stream_storage_quota';

/** The migrations folder as it was before the quota. */
function migrationsBefore(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-migrations-'));
  fs.cpSync(migrationsDir, dir, { recursive: true });
  const names = fs.readdirSync(dir).filter((d) => fs.existsSync(path.join(dir, d, 'migration.sql'))).sort();
  expect(names).toContain(MIGRATION);
  for (const name of names.slice(names.indexOf(MIGRATION))) fs.rmSync(path.join(dir, name), { recursive: true });
  return dir;
}

describe('migration stream_storage_quota', () => {
  let t: TestDatabase | undefined;
  afterAll(async () => {
    await t?.drop();
  });

  it("counts every team's stored stream data: logs and metrics exactly, rollouts and matches with JSON as PostgreSQL prints it", async () => {
    t = await createTestDatabase({ migrated: false });
    const dir = migrationsBefore();
    await migrate(t.url, dir);
    fs.rmSync(dir, { recursive: true, force: true });
    const user = await t.db.user.create({ data: { email: 'q@example.test', name: 'Q' } });
    const team = await t.db.team.create({ data: { name: 'Q', slug: 'q-stream-quota' } });
    const job = await insertJob(t as TestDatabase, team.id, user.id, 'TRAIN');
    const idle = await insertJob(t as TestDatabase, team.id, user.id, 'TRAIN');

    const logs = [{ line: 0, level: 'info' as const, message: 'step 1 of 3: reward 0.500 — ünïcode' }, { line: 1, level: 'warn' as const, message: 'x'.repeat(300) }];
    const metrics = [{ step: 1, key: 'reward/mean', value: 0.5 }, { step: 1, key: 'env/my_score', value: 2 }];
    const rollout = { step: 1, agent: 'agent', index: 0, segments: [{ text: 'colour: red', trainable: false, role: 'user' }, { text: 'C', trainable: true, role: 'assistant' }], reward: 1, turnRewards: [1], endReason: 'terminated', info: { finalInfo: { correct: true } } };
    const match = { step: 1, agents: [{ name: 'black', policy: 'policy' }], moves: [{ index: 0, agent: 'black', text: 'h8', observation: '. . .' }], result: { endReason: 'terminated', returns: { black: 1 } }, winner: 'black' };
    await t.db.logLine.createMany({ data: logs.map((l) => ({ jobId: job, attempt: 1, seq: 0, ...l })) });
    await t.db.metricPoint.createMany({ data: metrics.map((m) => ({ jobId: job, attempt: 1, ...m })) });
    await t.db.rolloutSample.create({ data: { jobId: job, attempt: 1, ...rollout } });
    await t.db.match.create({ data: { teamId: team.id, jobId: job, ...match } });

    expect((await migrate(t.url)).applied[0]).toBe(MIGRATION);

    const batch = <K extends StreamBatch['kind']>(kind: K, items: unknown[]) => ({ attemptId: 'a', fencingToken: '1', seq: 0, kind, items }) as StreamBatch;
    const exact = streamBytes(batch('logs', logs)) + streamBytes(batch('metrics', metrics));
    const json = streamBytes(batch('rollouts', [rollout])) + streamBytes(batch('matches', [match]));
    const [usage] = await t.db.$queryRaw<Array<{ bytes: bigint }>>`SELECT bytes FROM "JobStreamUsage" WHERE "jobId" = ${job}`;
    const counted = Number(usage.bytes);
    // PostgreSQL prints JSON with a space after each colon and comma: a few bytes more than JSON.stringify.
    expect(counted).toBeGreaterThanOrEqual(exact + json);
    expect(counted).toBeLessThan(exact + json * 1.2);
    const [teamUsage] = await t.db.$queryRaw<Array<{ bytes: bigint }>>`SELECT bytes FROM "TeamStreamUsage" WHERE "teamId" = ${team.id}`;
    expect(teamUsage.bytes).toBe(usage.bytes);
    // A run that stored nothing has no row (it reads as 0).
    expect(await t.db.$queryRaw`SELECT 1 FROM "JobStreamUsage" WHERE "jobId" = ${idle}`).toEqual([]);
  });
});
