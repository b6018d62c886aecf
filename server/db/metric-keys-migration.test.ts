import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentRewardKey, describeMetric, seatWinRateKey } from '../../sdk/live';
import { rebuildRollups } from '../streams/rollup';
import { migrationsDir } from '../paths';
import { migrate } from './migrate';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { insertJob } from '../test-support/old-schema';

// Stored runs from before metric keys were `group/name` (sdk/live.ts) are renamed by the
// migration metric_key_groups: points, rollups and checkpoints' metrics.

const MIGRATION = '20261125160000_metric_key_groups';

/** The migrations folder as it was before the renaming. */
function migrationsBefore(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whetstone-migrations-'));
  fs.cpSync(migrationsDir, dir, { recursive: true });
  const names = fs.readdirSync(dir).filter((d) => fs.existsSync(path.join(dir, d, 'migration.sql'))).sort();
  expect(names).toContain(MIGRATION);
  for (const name of names.slice(names.indexOf(MIGRATION))) fs.rmSync(path.join(dir, name), { recursive: true });
  return dir;
}

/** Keys a runner wrote before, by job kind: every one it emitted, and a few edge cases. */
const OLD_TRAIN = [
  'reward', 'episodes', 'episodeErrors', 'turns', 'responseTokens', 'stepSeconds', 'winRate', 'reward.black', 'reward.mean',
  'trainerStep', 'loss', 'policyLoss', 'valueLoss', 'kl', 'entropy', 'clipFraction', 'gradNorm', 'learningRate',
  'rewardMean', 'rewardStd', 'rewardMin', 'rewardMax', 'tokensPerSecond', 'stepTimeMs', 'tokens', 'updates',
];
const OLD_SFT = ['loss', 'gradNorm', 'learningRate', 'trainerStep', 'epoch', 'tokensPerSecond', 'stepTimeMs', 'tokens', 'updates'];
const OLD_EVAL = ['games', 'errors', 'meanReturn', 'wins', 'losses', 'draws', 'winRate', 'score', 'winRate.black', 'winRate.white'];

describe('migration metric_key_groups', () => {
  let t: TestDatabase;
  const jobs = {} as Record<'TRAIN' | 'SFT' | 'EVAL', string>;
  let dir: string;

  beforeAll(async () => {
    t = await createTestDatabase({ migrated: false });
    dir = migrationsBefore();
    await migrate(t.url, dir);
    const user = await t.db.user.create({ data: { email: 'm@example.test', name: 'M' } });
    const team = await t.db.team.create({ data: { name: 'M', slug: 'm-metric-keys' } });
    for (const kind of ['TRAIN', 'SFT', 'EVAL'] as const) {
      jobs[kind] = await insertJob(t as TestDatabase, team.id, user.id, kind);
    }
    const points = (jobId: string, keys: string[], steps: number) =>
      keys.flatMap((key, k) => Array.from({ length: steps }, (_, step) => ({ jobId, key, step, value: k * 1000 + step, attempt: 1 })));
    // 300 steps: two rollup buckets.
    await t.db.metricPoint.createMany({ data: [...points(jobs.TRAIN, [...OLD_TRAIN, 'myOwnKey'], 300), ...points(jobs.SFT, OLD_SFT, 3), ...points(jobs.EVAL, OLD_EVAL, 1)] });
    // A run resumed by a newer worker wrote step 299 under both names: the new name's value stays.
    await t.db.metricPoint.create({ data: { jobId: jobs.TRAIN, key: 'loss/total', step: 299, value: -1, attempt: 2 } });
    for (const id of Object.values(jobs)) await rebuildRollups(t.db, id);
    // In SQL, naming only the columns this schema had: the client knows the newest schema, and writes
    // columns later migrations add (Checkpoint.name, Checkpoint.agent), which this database lacks.
    const metrics = JSON.stringify({ reward: 0.5, loss: 1.5, myOwnKey: 3 });
    await t.db.$executeRaw`INSERT INTO "Checkpoint" (id, "teamId", "jobId", kind, step, "storageKey", bytes, sha256, metrics)
      VALUES ('old-checkpoint', ${team.id}, ${jobs.TRAIN}, 'TRAINING', 2, 'k/2', 1, 'x', ${metrics}::jsonb)`;
    // This migration first; later ones may follow it.
    expect((await migrate(t.url)).applied[0]).toBe(MIGRATION);
  });
  afterAll(async () => {
    await t?.drop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const keysOf = async (jobId: string) =>
    (await t.db.metricPoint.groupBy({ by: ['key'], where: { jobId }, _count: true })).map((r) => r.key).sort();

  it('renames every key a runner wrote to a key of the live contract; other keys stay', async () => {
    const train = await keysOf(jobs.TRAIN);
    expect(train).toContain('myOwnKey');
    expect(train.filter((k) => k !== 'myOwnKey' && !describeMetric(k))).toEqual([]);
    expect(train).toEqual(expect.arrayContaining(['reward/mean', 'episode/win_rate', agentRewardKey('black'), agentRewardKey('mean'), 'optim/step', 'perf/update_ms']));
    expect(train).toHaveLength(OLD_TRAIN.length + 1);
    expect(agentRewardKey('mean')).toBe('reward/agent_mean');

    const sft = await keysOf(jobs.SFT);
    expect(sft).toEqual(['data/epoch', 'loss/total', 'optim/grad_norm', 'optim/lr', 'optim/step', 'optim/tokens', 'optim/updates', 'perf/tokens_per_s', 'perf/update_ms']);

    const evaluation = await keysOf(jobs.EVAL);
    expect(evaluation).toEqual(
      ['eval/draws', 'eval/errors', 'eval/games', 'eval/losses', 'eval/mean_return', 'eval/score', 'eval/win_rate', seatWinRateKey('black'), seatWinRateKey('white'), 'eval/wins'].sort(),
    );
  });

  it('keeps the values, and the new name wins where a step had both', async () => {
    const reward = await t.db.metricPoint.findMany({ where: { jobId: jobs.TRAIN, key: 'reward/mean' }, orderBy: { step: 'asc' } });
    expect(reward.map((p) => p.value)).toEqual(Array.from({ length: 300 }, (_, step) => step));
    const loss = await t.db.metricPoint.findMany({ where: { jobId: jobs.TRAIN, key: 'loss/total' }, orderBy: { step: 'asc' } });
    expect(loss).toHaveLength(300);
    expect(loss.at(-1)).toMatchObject({ step: 299, value: -1, attempt: 2 });
    expect(loss[0].value).toBe(OLD_TRAIN.indexOf('loss') * 1000);
  });

  it('leaves the rollups as a rebuild from the points would make them, with no old keys', async () => {
    const rollups = () => t.db.metricRollup.findMany({ orderBy: [{ jobId: 'asc' }, { key: 'asc' }, { bucket: 'asc' }] });
    const migrated = await rollups();
    expect(migrated.filter((r) => r.jobId === jobs.TRAIN && r.key === 'reward/mean').map((r) => r.bucket)).toEqual([0, 1]);
    expect(migrated.some((r) => OLD_TRAIN.includes(r.key) || OLD_EVAL.includes(r.key))).toBe(false);
    for (const id of Object.values(jobs)) await rebuildRollups(t.db, id);
    expect(await rollups()).toEqual(migrated);
  });

  it("renames checkpoints' metrics", async () => {
    const checkpoint = await t.db.checkpoint.findFirstOrThrow({ where: { jobId: jobs.TRAIN } });
    expect(checkpoint.metrics).toEqual({ 'reward/mean': 0.5, 'loss/total': 1.5, myOwnKey: 3 });
  });
});
