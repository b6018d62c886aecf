import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricSeries } from '../api/routers/runs';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { ingestBatch } from './ingest';
import { rebuildRollups, ROLLUP_STEPS } from './rollup';
import { activeAttempt } from '../test-support/test-attempts';

/** What a series should be, computed from the points themselves. */
function expected(values: Map<number, number>, lo: number, hi: number, width: number, origin: number) {
  const out: Array<{ fromStep: number; toStep: number; min: number; max: number; last: number; count: number }> = [];
  for (let step = lo; step <= hi; step++) {
    const v = values.get(step);
    if (v === undefined) continue;
    const i = Math.floor((step - origin) / width);
    const b = out.find((x) => Math.floor((x.fromStep - origin) / width) === i);
    if (!b) out.push({ fromStep: step, toStep: step, min: v, max: v, last: v, count: 1 });
    else Object.assign(b, { toStep: step, min: Math.min(b.min, v), max: Math.max(b.max, v), last: v, count: b.count + 1 });
  }
  return out;
}

describe('metric rollups', () => {
  let t: TestDatabase;
  let job: { id: string; teamId: string };
  const values = new Map<number, number>();
  let seq = 0;
  let attempt: Awaited<ReturnType<typeof activeAttempt>>;
  const send = (items: Array<{ step: number; value: number }>) =>
    ingestBatch(t.db, attempt.workerId, { attemptId: attempt.attemptId, fencingToken: attempt.fencingToken, seq: seq++, kind: 'metrics', items: items.map((i) => ({ ...i, key: 'loss/total' })) }, () => {});

  beforeAll(async () => {
    t = await createTestDatabase();
    const user = await t.db.user.create({ data: { email: 'r@example.test', name: 'R' } });
    const team = await t.db.team.create({ data: { name: 'R', slug: 'r-rollup' } });
    job = await t.db.job.create({ data: { teamId: team.id, ownerId: user.id, kind: 'TRAIN', config: {} }, select: { id: true, teamId: true } });
    attempt = await activeAttempt(t.db, job, 1);
    // 50,000 steps in batches as a runner sends them, with a gap and a spike.
    for (let start = 0; start < 50_000; start += 2_500) {
      const items = [];
      for (let step = start; step < start + 2_500; step++) {
        if (step >= 20_100 && step < 20_300) continue;
        const value = step === 31_337 ? 1_000 : Math.sin(step / 300);
        values.set(step, value);
        items.push({ step, value });
      }
      await send(items);
    }
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('serves wide buckets from rollups exactly as the points would', async () => {
    const series = await metricSeries(t.db, job.id, 'loss/total', 10);
    const width = Math.ceil(50_000 / 10 / ROLLUP_STEPS) * ROLLUP_STEPS;
    // Each bucket's time (`at`) is the point's own, checked in runs.test.ts: the values are compared here.
    expect(series.map((b) => ({ ...b, at: undefined }))).toEqual(expected(values, 0, 49_999, width, 0).map((b) => ({ ...b, min: expect.closeTo(b.min, 9), max: expect.closeTo(b.max, 9), last: expect.closeTo(b.last, 9) })));
    expect(series.some((b) => b.max === 1_000)).toBe(true);
  });

  it('cuts the edge rollups to a zoomed range', async () => {
    const series = await metricSeries(t.db, job.id, 'loss/total', 4, 10_500, 40_700);
    expect(series[0].fromStep).toBe(10_500);
    expect(series[series.length - 1].toStep).toBe(40_700);
    expect(series.reduce((n, b) => n + b.count, 0)).toBe(40_700 - 10_500 + 1 - 200);
    const width = Math.ceil((40_700 - 10_500 + 1) / 4 / ROLLUP_STEPS) * ROLLUP_STEPS;
    const origin = Math.floor(10_500 / ROLLUP_STEPS) * ROLLUP_STEPS;
    expect(series.map((b) => b.count)).toEqual(expected(values, 10_500, 40_700, width, origin).map((b) => b.count));
  });

  it('recomputes a bucket whose points a resumed attempt replaced', async () => {
    // The replay writes the spike's step again with an ordinary value: the maximum must drop.
    await t.db.jobAttempt.update({ where: { id: attempt.attemptId }, data: { state: 'ENDED' } });
    attempt = await activeAttempt(t.db, job, 2, attempt.workerId);
    await send([{ step: 31_337, value: 0.5 }, { step: 31_338, value: 0.25 }]);
    values.set(31_337, 0.5);
    values.set(31_338, 0.25);
    const series = await metricSeries(t.db, job.id, 'loss/total', 10);
    expect(Math.max(...series.map((b) => b.max))).toBeLessThan(1.001);
    const rollup = await t.db.metricRollup.findUniqueOrThrow({ where: { jobId_key_bucket: { jobId: job.id, key: 'loss/total', bucket: Math.floor(31_337 / ROLLUP_STEPS) } } });
    const before = { ...rollup };
    await rebuildRollups(t.db, job.id);
    expect(await t.db.metricRollup.findUniqueOrThrow({ where: { jobId_key_bucket: { jobId: job.id, key: 'loss/total', bucket: before.bucket } } })).toEqual(before);
  });
});
