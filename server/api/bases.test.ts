/**
 * Bases (server/runs/bases.ts) over tRPC against a real server and PostgreSQL: naming a
 * checkpoint (validation, a name taken, clearing, another team's), the cards `runs.bases` reads
 * from the writing job and the latest eval, and a job's `saveAs` applied when its worker reports
 * success, including a name already taken (the run stays SUCCEEDED and its events say why).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { activeAttempt } from '../test-support/test-attempts';
import { addMember, createUserWithTeam, useTestServer } from '../test-support/test-server';
import { sessionClient } from '../test-support/trpc-client';
import { createAttemptCalls } from '../workers/attempts';

describe('bases', () => {
  const s = useTestServer();
  const client = (cookie: string) => sessionClient(s.server.url, cookie);
  let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
  let stranger: Awaited<ReturnType<typeof createUserWithTeam>>;
  let api: ReturnType<typeof client>;
  let teamId: string;
  let env: { environmentId: string; versionId: string };
  let dataset: { datasetId: string; versionId: string };

  /** A sampler checkpoint of the job's, as the worker protocol registers one. */
  const checkpoint = (jobId: string, step: number, team = teamId) =>
    s.t.db.checkpoint.create({ data: { teamId: team, jobId, kind: 'SAMPLER', step, storageKey: `k-${jobId}-${step}`, bytes: 1n, sha256: 'x' } });

  /** The job runs on a worker of its team, which reports it finished well (the fast path a connected daemon takes). */
  const succeed = async (jobId: string) => {
    const attempt = await activeAttempt(s.t.db, { id: jobId, teamId }, 1);
    await s.t.db.job.update({ where: { id: jobId }, data: { state: 'RUNNING', startedAt: new Date(), attempts: 1 } });
    const calls = createAttemptCalls(s.t.db, () => {});
    return calls.finish({ workerId: attempt.workerId }, { attemptId: attempt.attemptId, fencingToken: attempt.fencingToken, outcome: 'succeeded', reason: 'done', exitCode: 0 });
  };

  beforeAll(async () => {
    owner = await createUserWithTeam(s.server.url, s.t.db);
    stranger = await createUserWithTeam(s.server.url, s.t.db);
    api = client(owner.cookie);
    teamId = owner.team.id;
    env = await api.environments.create.mutate({ teamId, name: 'coin', from: { template: 'bandit' } });
    dataset = await api.datasets.upload.mutate({ teamId, name: 'sums.jsonl', jsonl: '{"prompt":"1+1=","completion":"2"}\n' });
  });

  it('names, renames and clears a checkpoint; refuses a bad name, a name taken and another team’s checkpoint', async () => {
    const job = await api.jobs.submit.mutate({ teamId, kind: 'TRAIN', config: { environmentVersionId: env.versionId, training: { steps: 4 } } });
    const [a, b] = [await checkpoint(job.id, 2), await checkpoint(job.id, 4)];

    expect(await api.runs.nameCheckpoint.mutate({ teamId, checkpointId: a.id, name: 'coin-base' })).toEqual({ id: a.id, name: 'coin-base' });
    for (const bad of ['Coin', 'two words', '-lead', 'a/b', 'x'.repeat(64), '']) {
      await expect(api.runs.nameCheckpoint.mutate({ teamId, checkpointId: b.id, name: bad })).rejects.toMatchObject({
        data: { code: 'BAD_REQUEST' },
        message: expect.stringContaining('a base name is 1 to 63 lower-case letters'),
      });
    }
    // Taken by another checkpoint: the answer names the run and step that hold it.
    await expect(api.runs.nameCheckpoint.mutate({ teamId, checkpointId: b.id, name: 'coin-base' })).rejects.toMatchObject({
      data: { code: 'CONFLICT' },
      message: `The base name "coin-base" is taken by step 2 of run ${job.id} (checkpoint ${a.id}): clear it there or choose another name`,
    });
    // Naming a checkpoint with the name it has is no conflict; renaming frees the old name.
    await api.runs.nameCheckpoint.mutate({ teamId, checkpointId: a.id, name: 'coin-base' });
    await api.runs.nameCheckpoint.mutate({ teamId, checkpointId: a.id, name: 'coin-base-2' });
    await api.runs.nameCheckpoint.mutate({ teamId, checkpointId: b.id, name: 'coin-base' });
    expect((await api.runs.bases.query({ teamId })).map((x) => [x.name, x.id])).toEqual([['coin-base', b.id], ['coin-base-2', a.id]]);
    await api.runs.nameCheckpoint.mutate({ teamId, checkpointId: a.id, name: null });
    expect((await api.runs.bases.query({ teamId })).map((x) => x.name)).toEqual(['coin-base']);
    expect((await api.runs.teamCheckpoints.query({ teamId })).checkpoints.map((c) => c.name)).toEqual(['coin-base', null]);
    expect(await s.t.db.auditLog.count({ where: { teamId, action: { in: ['checkpoint.named', 'checkpoint.unnamed'] } } })).toBe(5);

    // Tenants: another team cannot name, see or take this team's; the same name is free there.
    const theirs = client(stranger.cookie);
    await expect(theirs.runs.nameCheckpoint.mutate({ teamId: stranger.team.id, checkpointId: b.id, name: 'mine' })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    expect(await theirs.runs.bases.query({ teamId: stranger.team.id })).toEqual([]);
    expect(await theirs.runs.bases.query({ teamId: stranger.team.id, name: 'coin-base' })).toEqual([]);
    const theirJob = await s.t.db.job.create({ data: { teamId: stranger.team.id, ownerId: stranger.user.id, kind: 'TRAIN', state: 'SUCCEEDED', config: {} } });
    const theirCheckpoint = await checkpoint(theirJob.id, 1, stranger.team.id);
    await theirs.runs.nameCheckpoint.mutate({ teamId: stranger.team.id, checkpointId: theirCheckpoint.id, name: 'coin-base' });
    expect((await api.runs.bases.query({ teamId, name: 'coin-base' })).map((x) => x.id)).toEqual([b.id]);

    // A viewer reads bases but cannot name one.
    const viewer = client((await addMember(s.server.url, s.t.db, teamId, 'VIEWER')).cookie);
    expect((await viewer.runs.bases.query({ teamId })).map((x) => x.name)).toEqual(['coin-base']);
    await expect(viewer.runs.nameCheckpoint.mutate({ teamId, checkpointId: a.id, name: 'viewer-base' })).rejects.toMatchObject({ data: { code: 'FORBIDDEN' } });
    await api.runs.nameCheckpoint.mutate({ teamId, checkpointId: b.id, name: null });
  });

  it('gives each base its card: how its job trained it and what its latest finished eval reported', async () => {
    const parentJob = await api.jobs.submit.mutate({ teamId, kind: 'SFT', config: { datasetVersionId: dataset.versionId, training: { steps: 5 } } });
    const parent = await checkpoint(parentJob.id, 5);
    await api.runs.nameCheckpoint.mutate({ teamId, checkpointId: parent.id, name: 'sums-sft' });
    const job = await api.jobs.submit.mutate({
      teamId, kind: 'TRAIN',
      config: { environmentVersionId: env.versionId, baseCheckpointId: parent.id, training: { steps: 12, warmStart: { from: 'dataset', datasetVersionId: dataset.versionId, steps: 30 } } },
    });
    const ckpt = await checkpoint(job.id, 12);
    await api.runs.nameCheckpoint.mutate({ teamId, checkpointId: ckpt.id, name: 'coin-rl' });

    // Evals of it: an older one, the latest finished one, and a newer one that failed (not a result).
    const evalJob = async (state: 'SUCCEEDED' | 'FAILED', finishedAt: Date, winRate: number) => {
      const e = await s.t.db.job.create({
        data: { teamId, ownerId: owner.user.id, kind: 'EVAL', state, finishedAt, config: { checkpointId: ckpt.id, environmentVersionId: env.versionId, against: 'random', games: 20 } },
      });
      await s.t.db.metricPoint.createMany({
        data: Object.entries({ 'eval/score': winRate, 'eval/win_rate': winRate, 'eval/draw_rate': 0.1, 'eval/loss_rate': 0.9 - winRate, 'eval/games': 20 }).map(([key, value]) => ({ jobId: e.id, key, step: 0, value, attempt: 1 })),
      });
      return e;
    };
    await evalJob('SUCCEEDED', new Date(Date.now() - 60_000), 0.25);
    const latest = await evalJob('SUCCEEDED', new Date(Date.now() - 30_000), 0.75);
    await evalJob('FAILED', new Date(), 0.5);

    const [card] = await api.runs.bases.query({ teamId, name: 'coin-rl' });
    expect(card).toMatchObject({
      id: ckpt.id, name: 'coin-rl', kind: 'SAMPLER', step: 12,
      training: {
        jobId: job.id, kind: 'TRAIN', state: 'QUEUED', algorithm: 'grpo', steps: 12,
        environment: { name: 'coin', version: 1 }, dataset: null,
        startedFrom: { checkpointId: parent.id, name: 'sums-sft' },
        warmStart: { from: 'dataset', steps: 30 },
      },
      eval: { jobId: latest.id, against: 'random', metrics: { 'eval/score': 0.75, 'eval/win_rate': 0.75, 'eval/draw_rate': 0.1, 'eval/games': 20 } },
    });
    expect(card.eval!.metrics['eval/loss_rate']).toBeCloseTo(0.15);

    const [sft] = await api.runs.bases.query({ teamId, name: 'sums-sft' });
    expect(sft).toMatchObject({
      training: { kind: 'SFT', algorithm: 'sft', steps: 5, environment: null, dataset: { name: 'sums.jsonl', version: 1 }, startedFrom: null, warmStart: null },
      eval: null,
    });
    // A base whose run was deleted keeps its name, with no training card.
    await s.t.db.job.delete({ where: { id: parentJob.id } });
    expect((await api.runs.bases.query({ teamId, name: 'sums-sft' }))[0]).toMatchObject({ name: 'sums-sft', training: null });
  });

  it('saves a succeeded run’s newest sampler checkpoint as its saveAs base; a name taken leaves the run SUCCEEDED and says so', async () => {
    await expect(api.jobs.submit.mutate({ teamId, kind: 'TRAIN', config: { environmentVersionId: env.versionId, saveAs: 'Not A Name' } })).rejects.toMatchObject({
      data: { code: 'BAD_REQUEST' },
      message: expect.stringContaining('a base name is 1 to 63 lower-case letters'),
    });
    const first = await api.jobs.submit.mutate({ teamId, kind: 'TRAIN', config: { environmentVersionId: env.versionId, saveAs: 'coin-saved', training: { steps: 8 } } });
    await checkpoint(first.id, 4);
    const last = await checkpoint(first.id, 8);
    // A training checkpoint at the same step is not what runs start from.
    await s.t.db.checkpoint.create({ data: { teamId, jobId: first.id, kind: 'TRAINING', step: 8, storageKey: 'tr', bytes: 1n, sha256: 'x' } });
    expect(await succeed(first.id)).toEqual({ state: 'SUCCEEDED' });
    expect((await api.runs.bases.query({ teamId, name: 'coin-saved' })).map((x) => x.id)).toEqual([last.id]);
    const events = async (jobId: string) => (await s.t.db.jobEvent.findMany({ where: { jobId }, orderBy: { id: 'asc' } })).map((e) => e.reason);
    expect(await events(first.id)).toContain(`saved step 8 (checkpoint ${last.id}) as base "coin-saved"`);

    // The same template run again: the name is taken, the run still succeeds, the base stays the first run's.
    const second = await api.jobs.submit.mutate({ teamId, kind: 'TRAIN', config: { environmentVersionId: env.versionId, saveAs: 'coin-saved', training: { steps: 8 } } });
    const secondLast = await checkpoint(second.id, 8);
    expect(await succeed(second.id)).toEqual({ state: 'SUCCEEDED' });
    expect((await s.t.db.job.findUniqueOrThrow({ where: { id: second.id } })).state).toBe('SUCCEEDED');
    expect((await api.runs.bases.query({ teamId, name: 'coin-saved' })).map((x) => x.id)).toEqual([last.id]);
    expect(await events(second.id)).toContain(
      `not saved as base: The base name "coin-saved" is taken by step 8 of run ${first.id} (checkpoint ${last.id}); name step 8 (checkpoint ${secondLast.id}) from the checkpoints page to keep it`,
    );

    // No sampler checkpoint: nothing named, and the events say why.
    const empty = await api.jobs.submit.mutate({ teamId, kind: 'TRAIN', config: { environmentVersionId: env.versionId, saveAs: 'coin-empty' } });
    expect(await succeed(empty.id)).toEqual({ state: 'SUCCEEDED' });
    expect(await api.runs.bases.query({ teamId, name: 'coin-empty' })).toEqual([]);
    expect(await events(empty.id)).toContain('not saved as base "coin-empty": the run wrote no sampler checkpoint');
  });
});
