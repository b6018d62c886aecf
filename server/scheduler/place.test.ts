import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test-support/test-database';
import { seedTeam, seedWorker, type Team } from '../test-support/reliability/harness';
import { applyPlan, BEYOND_WINDOW_REASON, scheduleOnce, type SchedulerEvents } from './loop';
import { buildAssignments } from './assignments';
import { placeAll, placeBatch } from './place';
import type { Placement } from './types';

// A round's placements in one statement (place.ts), against a real PostgreSQL: what it writes for
// each job, and how it skips jobs it must not take.

describe('batch placement', () => {
  let t: TestDatabase;
  let team: Team;
  let workerIds: string[];

  beforeAll(async () => {
    t = await createTestDatabase();
    team = await seedTeam(t.db, { maxConcurrentDevices: 100 });
    workerIds = [];
    for (let i = 0; i < 4; i++) workerIds.push((await seedWorker(t.db, team, { name: `w${i}`, devices: 2 })).id);
  });
  afterAll(async () => {
    await t?.drop();
  });

  const queue = (n: number) =>
    Promise.all(Array.from({ length: n }, () => t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', config: {}, waitingReason: 'waiting: before' } })));
  const placement = (jobId: string, i: number): Placement => ({ jobId, workerId: workerIds[i], deviceIndexes: [0, 1], backfill: false, reason: `placed on worker ${workerIds[i]} (test ${i})` });

  it('places every job in one statement: attempt with lease, job ASSIGNED, one event each with the reason', async () => {
    const jobs = await queue(3);
    const now = new Date();
    const placed = await placeBatch(t.db, jobs.map((j, i) => placement(j.id, i)), now);
    expect(placed.map((p) => p.jobId).sort()).toEqual(jobs.map((j) => j.id).sort());
    for (const [i, job] of jobs.entries()) {
      const row = await t.db.job.findUniqueOrThrow({ where: { id: job.id }, include: { jobAttempts: true, events: true } });
      expect(row).toMatchObject({ state: 'ASSIGNED', attempts: 1, waitingReason: null, notBefore: null });
      expect(row.jobAttempts).toHaveLength(1);
      const attempt = row.jobAttempts[0];
      expect(attempt).toMatchObject({ number: 1, workerId: workerIds[i], deviceIndexes: [0, 1], state: 'ACTIVE', resumedFromId: null });
      expect(attempt.id).toBe(placed.find((p) => p.jobId === job.id)!.attemptId);
      expect(attempt.id).toMatch(/^c[0-9a-z]{24}$/);
      expect(attempt.leaseExpiresAt.getTime()).toBeGreaterThan(now.getTime());
      expect(Math.abs(attempt.startedAt.getTime() - now.getTime())).toBeLessThan(5);
      expect(row.events.map((e) => [e.fromState, e.toState, e.actorType, e.reason])).toEqual([['QUEUED', 'ASSIGNED', 'SCHEDULER', `placed on worker ${workerIds[i]} (test ${i})`]]);
    }
    await t.db.job.updateMany({ where: { id: { in: jobs.map((j) => j.id) } }, data: { state: 'SUCCEEDED' } });
    await t.db.jobAttempt.updateMany({ where: { jobId: { in: jobs.map((j) => j.id) } }, data: { state: 'ENDED' } });
  });

  it("returns each placement's assignment as the worker API reads it back: environment, checkpoint to resume from, blob keys", async () => {
    const job = await t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', config: { environmentVersionId: team.envVersionId, steps: 3 }, timeLimitSeconds: 600 } });
    // A previous attempt left a training checkpoint, and the config names it as its base too.
    const old = await t.db.jobAttempt.create({ data: { jobId: job.id, number: 1, workerId: workerIds[0], deviceIndexes: [0], leaseExpiresAt: new Date(), state: 'ENDED' } });
    const checkpoint = await t.db.checkpoint.create({ data: { teamId: team.teamId, jobId: job.id, attemptId: old.id, kind: 'TRAINING', step: 7, storageKey: 'ck/abc', bytes: 1n, sha256: '0' } });
    await t.db.job.update({ where: { id: job.id }, data: { attempts: 1, config: { environmentVersionId: team.envVersionId, steps: 3, baseCheckpointId: checkpoint.id } } });
    const [placed] = await placeBatch(t.db, [placement(job.id, 1)], new Date());
    // The statement's assignment is read from its own CTEs' rows before commit; the heartbeat's,
    // from the committed tables. They differ if a CTE hands on a value from before its update.
    expect(placed.assignment).toEqual((await buildAssignments(t.db, [placed.attemptId]))[0]);
    expect(placed.assignment).toMatchObject({
      attemptId: placed.attemptId, jobId: job.id, attempt: 2, kind: 'TRAIN', deviceIndexes: [0, 1], timeLimitSeconds: 600,
      resumeFrom: { checkpointId: checkpoint.id, storageKey: 'ck/abc', step: 7 },
      environment: { versionId: team.envVersionId },
      blobKeys: { [checkpoint.id]: 'ck/abc' },
    });
    expect(Object.keys(placed.assignment.environment!.files).length).toBeGreaterThan(0);
    await t.db.job.update({ where: { id: job.id }, data: { state: 'SUCCEEDED' } });
    await t.db.jobAttempt.updateMany({ where: { jobId: job.id }, data: { state: 'ENDED' } });
  });

  it('skips a job being changed right now (locked) and one no longer queued, and places the rest', async () => {
    const [locked, cancelled, a, b] = await queue(4);
    await t.db.job.update({ where: { id: cancelled.id }, data: { state: 'CANCELLED' } });
    // Another transaction (a cancel in progress) holds the lock on one job while the batch runs.
    const other = new pg.Client({ connectionString: t.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT id FROM "Job" WHERE id = $1 FOR UPDATE', [locked.id]);
      const placed = await placeBatch(t.db, [locked, cancelled, a, b].map((j, i) => placement(j.id, i)), new Date());
      expect(placed.map((p) => p.jobId).sort()).toEqual([a.id, b.id].sort());
      await other.query('ROLLBACK');
    } finally {
      await other.end();
    }
    for (const skipped of [locked, cancelled]) {
      expect(await t.db.jobAttempt.count({ where: { jobId: skipped.id } })).toBe(0);
      expect(await t.db.jobEvent.count({ where: { jobId: skipped.id } })).toBe(0);
    }
    expect((await t.db.job.findUniqueOrThrow({ where: { id: locked.id } })).state).toBe('QUEUED');
    for (const j of [a, b]) {
      expect(await t.db.jobEvent.findMany({ where: { jobId: j.id }, select: { toState: true } })).toEqual([{ toState: 'ASSIGNED' }]);
    }
    await t.db.job.updateMany({ where: { id: { in: [locked.id, a.id, b.id] } }, data: { state: 'SUCCEEDED' } });
    await t.db.jobAttempt.updateMany({ where: { jobId: { in: [a.id, b.id] } }, data: { state: 'ENDED' } });
  });

  it("gives the imported model a config starts from, with its files' keys, of the job's team only", async () => {
    const stranger = await seedTeam(t.db);
    const files = [
      { path: 'config.json', storageKey: `model-files/${'a'.repeat(64)}`, bytes: 700, sha256: 'a'.repeat(64) },
      { path: 'model.safetensors', storageKey: `model-files/${'b'.repeat(64)}`, bytes: 3_000_000_000, sha256: 'b'.repeat(64) },
    ];
    const model = (teamId: string) => t.db.pretrainedModel.create({ data: { teamId, name: `m-${Math.random()}`, family: 'qwen2', card: {}, files, contentHash: 'c'.repeat(64), bytes: 3_000_000_700n } });
    const [own, foreign] = [await model(team.teamId), await model(stranger.teamId)];
    const jobs = await Promise.all(
      [{ baseModelId: own.id }, { baseModelId: foreign.id }, { baseModelId: 7 }, {}].map((config) => t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'EVAL', config } })),
    );
    const placed = await placeBatch(t.db, jobs.map((j, i) => placement(j.id, i)), new Date());
    const baseOf = (i: number) => placed.find((p) => p.jobId === jobs[i].id)!.assignment.baseModel;
    expect(baseOf(0)).toEqual({ modelId: own.id, contentHash: 'c'.repeat(64), files: files.map(({ path, storageKey, bytes }) => ({ path, storageKey, bytes })) });
    expect([baseOf(1), baseOf(2), baseOf(3)]).toEqual([null, null, null]);
    expect(placed[0].assignment).toEqual((await buildAssignments(t.db, [placed[0].attemptId]))[0]);
    await t.db.job.updateMany({ where: { id: { in: jobs.map((j) => j.id) } }, data: { state: 'SUCCEEDED' } });
    await t.db.jobAttempt.updateMany({ where: { jobId: { in: jobs.map((j) => j.id) } }, data: { state: 'ENDED' } });
  });

  it("gives the blob keys of the checkpoints and dataset a config names, of the job's team only, for a batch in its one statement", async () => {
    const stranger = await seedTeam(t.db);
    const checkpoint = (teamId: string, storageKey: string) => t.db.checkpoint.create({ data: { teamId, kind: 'TRAINING', step: 1, storageKey, bytes: 1n, sha256: '0' } });
    const [base, evaluated, foreign] = [await checkpoint(team.teamId, `base-${Math.random()}`), await checkpoint(team.teamId, `eval-${Math.random()}`), await checkpoint(stranger.teamId, `x-${Math.random()}`)];
    const dataset = await t.db.dataset.create({
      data: { teamId: team.teamId, name: `d-${Math.random()}`, versions: { create: { version: 1, contentHash: 'h', storageKey: `ds-${Math.random()}`, rowCount: 1, bytes: 1n } } },
      include: { versions: true },
    });
    const version = dataset.versions[0];
    const configs = [
      { baseCheckpointId: base.id, datasetVersionId: version.id },
      { checkpointId: evaluated.id, against: { checkpointId: foreign.id } },
      { checkpointId: 42, against: base.id, datasetVersionId: [version.id] },
      {},
      // A warm start's demonstrations, named in the resolved training config.
      { training: { warmStart: { from: 'dataset', datasetVersionId: version.id } } },
      // Frozen checkpoint opponents (another team's is not handed out).
      { training: { opponents: { [`checkpoint:${evaluated.id}`]: 1, [`checkpoint:${foreign.id}`]: 1, random: 1 } } },
    ];
    const jobs = await Promise.all(configs.map((config) => t.db.job.create({ data: { teamId: team.teamId, ownerId: team.userId, kind: 'EVAL', config } })));
    const placed = await placeBatch(t.db, jobs.map((j, i) => placement(j.id, i)), new Date());
    const keys = (i: number) => placed.find((p) => p.jobId === jobs[i].id)!.assignment.blobKeys;
    expect(keys(0)).toEqual({ [base.id]: base.storageKey, [version.id]: version.storageKey });
    expect(keys(1)).toEqual({ [evaluated.id]: evaluated.storageKey });
    expect(keys(2)).toEqual({});
    expect(keys(3)).toEqual({});
    expect(keys(4)).toEqual({ [version.id]: version.storageKey });
    expect(keys(5)).toEqual({ [evaluated.id]: evaluated.storageKey });
    await t.db.job.updateMany({ where: { id: { in: jobs.map((j) => j.id) } }, data: { state: 'SUCCEEDED' } });
    await t.db.jobAttempt.updateMany({ where: { jobId: { in: jobs.map((j) => j.id) } }, data: { state: 'ENDED' } });
  });

  it('resumes from the latest TRAINING checkpoint and numbers the attempt after the last', async () => {
    const [job] = await queue(1);
    await t.db.job.update({ where: { id: job.id }, data: { attempts: 2 } });
    for (const [step, kind] of [[3, 'TRAINING'], [9, 'TRAINING'], [12, 'SAMPLER']] as const) {
      await t.db.checkpoint.create({ data: { teamId: team.teamId, jobId: job.id, kind, step, storageKey: `k-${job.id}-${step}`, bytes: 1n, sha256: 'x' } });
    }
    const [placed] = await placeBatch(t.db, [placement(job.id, 0)], new Date());
    const attempt = await t.db.jobAttempt.findUniqueOrThrow({ where: { id: placed.attemptId }, include: { resumedFrom: true } });
    expect(attempt).toMatchObject({ number: 3, resumedFrom: { step: 9, kind: 'TRAINING' } });
    expect((await t.db.job.findUniqueOrThrow({ where: { id: job.id } })).attempts).toBe(3);
    await t.db.job.update({ where: { id: job.id }, data: { state: 'SUCCEEDED' } });
    await t.db.jobAttempt.updateMany({ where: { jobId: job.id }, data: { state: 'ENDED' } });
  });

  it('of several TRAINING checkpoints at one step (a warm start writes them all at step 0), resumes from the newest', async () => {
    const [job] = await queue(1);
    const at = (ms: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms));
    // Written out of order: the newest row is neither the first inserted nor the last.
    for (const [name, ms] of [['middle', 500], ['newest', 900], ['oldest', 100]] as const) {
      await t.db.checkpoint.create({ data: { teamId: team.teamId, jobId: job.id, kind: 'TRAINING', step: 0, storageKey: `k-${job.id}-${name}`, bytes: 1n, sha256: 'x', createdAt: at(ms) } });
    }
    const [placed] = await placeBatch(t.db, [placement(job.id, 0)], new Date());
    // One policy's checkpoints: no learners of their own to restore.
    expect(placed.assignment.resumeFrom).toMatchObject({ storageKey: `k-${job.id}-newest`, step: 0, agents: null });
    await t.db.job.update({ where: { id: job.id }, data: { state: 'SUCCEEDED' } });
    await t.db.jobAttempt.updateMany({ where: { jobId: job.id }, data: { state: 'ENDED' } });
  });

  it("independent learners' checkpoints: the attempt resumes from every learner's own at the newest step, of the attempt that wrote them", async () => {
    const [job] = await queue(1);
    const old = await t.db.jobAttempt.create({ data: { jobId: job.id, number: 1, workerId: workerIds[0], deviceIndexes: [0], leaseExpiresAt: new Date(), state: 'ENDED' } });
    await t.db.job.update({ where: { id: job.id }, data: { attempts: 1 } });
    const rows: Record<string, string> = {};
    // Step 2 and step 4 of both learners, white's first (the runner writes the first learner's last).
    for (const [step, agent] of [[2, 'white'], [2, 'black'], [4, 'white'], [4, 'black']] as const) {
      const c = await t.db.checkpoint.create({ data: { teamId: team.teamId, jobId: job.id, attemptId: old.id, kind: 'TRAINING', step, agent, storageKey: `k-${job.id}-${agent}-${step}`, bytes: 1n, sha256: 'x' } });
      rows[`${agent}@${step}`] = c.id;
    }
    const [placed] = await placeBatch(t.db, [placement(job.id, 0)], new Date());
    expect(placed.assignment).toEqual((await buildAssignments(t.db, [placed.attemptId]))[0]);
    expect(placed.assignment.resumeFrom).toMatchObject({
      step: 4,
      agents: { white: { checkpointId: rows['white@4'], storageKey: `k-${job.id}-white-4` }, black: { checkpointId: rows['black@4'], storageKey: `k-${job.id}-black-4` } },
    });
    expect([rows['white@4'], rows['black@4']]).toContain(placed.assignment.resumeFrom!.checkpointId);
    await t.db.job.update({ where: { id: job.id }, data: { state: 'SUCCEEDED' } });
    await t.db.jobAttempt.updateMany({ where: { jobId: job.id }, data: { state: 'ENDED' } });
  });

  it('when the batch fails as a whole, places one by one and loses only the bad placement', async () => {
    const [good, bad] = await queue(2);
    const lines: string[] = [];
    const placements = [placement(good.id, 0), { ...placement(bad.id, 1), workerId: 'no-such-worker' }];
    try {
      const placed = await placeAll(t.db, placements, new Date(), (line) => lines.push(line));
      // The scheduler's log names why a placement failed: shown if this does not hold.
      expect(placed.map((p) => p.jobId), lines.join('\n')).toEqual([good.id]);
      expect((await t.db.job.findUniqueOrThrow({ where: { id: bad.id } })).state).toBe('QUEUED');
      expect(lines.join('\n')).toMatch(/placing one by one[\s\S]*could not place job/);
    } finally {
      // Leave no queued job behind for the next test's round, whatever happened here.
      await t.db.job.updateMany({ where: { id: { in: [good.id, bad.id] } }, data: { state: 'SUCCEEDED' } });
      await t.db.jobAttempt.updateMany({ where: { jobId: good.id }, data: { state: 'ENDED' } });
    }
  });

  it('a round writes only the waiting reasons that changed', async () => {
    const events: SchedulerEvents = { assigned: () => {}, signal: () => {}, jobChanged: () => {} };
    // Eight devices, ten jobs: two wait, and say why. The round reads nine of them (the queue
    // window: devices + 1 of a kind); the tenth is behind those, and says so.
    const jobs = await queue(10);
    await t.db.worker.updateMany({ where: { id: { in: workerIds } }, data: { lastHeartbeatAt: new Date() } });
    expect(await scheduleOnce(t.db, events)).toMatchObject({ placed: 8 });
    const waiting = await t.db.job.findMany({ where: { id: { in: jobs.map((j) => j.id) }, state: 'QUEUED' } });
    expect(waiting.length).toBe(2);
    const [behind, read] = waiting.map((w) => w.waitingReason!).sort();
    expect(behind).toBe(BEYOND_WINDOW_REASON);
    expect(read).toMatch(/^waiting: no online worker has/);
    // The round compares with the reasons it read: an unchanged one is not written again (here
    // the row was changed behind its back, so a write would show), a changed one is.
    const [same, changed] = waiting;
    await t.db.job.update({ where: { id: same.id }, data: { waitingReason: 'changed elsewhere' } });
    const decisions = { placements: [], preemptions: [], waiting: [same, changed].map((w) => ({ jobId: w.id, code: 'NO_CAPACITY' as const, reason: 'waiting: new words', estimatedStartAt: null, target: null })) };
    await applyPlan(t.db, decisions, new Date(), events, { waitingReasons: new Map([[same.id, 'waiting: new words'], [changed.id, changed.waitingReason]]), beyondWindow: false });
    expect((await t.db.job.findUniqueOrThrow({ where: { id: same.id } })).waitingReason).toBe('changed elsewhere');
    expect((await t.db.job.findUniqueOrThrow({ where: { id: changed.id } })).waitingReason).toBe('waiting: new words');
  });
});
