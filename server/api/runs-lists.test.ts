/**
 * The team-wide lists the IDE's pages read, over tRPC against a real server and PostgreSQL: runs
 * with their environment, dataset, worker, step of total and last reward; one run's summary; the
 * team's checkpoints and matches; and the jobs on each worker. A job's progress (attempt, metric
 * points, checkpoints, matches) is written into the database as the worker protocol would leave it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { activeAttempt } from '../test-support/test-attempts';
import { createUserWithTeam, useTestServer } from '../test-support/test-server';
import { sessionClient } from '../test-support/trpc-client';

describe('runs lists', () => {
  const s = useTestServer();
  const client = (cookie: string) => sessionClient(s.server.url, cookie);
  let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
  let stranger: Awaited<ReturnType<typeof createUserWithTeam>>;
  let api: ReturnType<typeof client>;
  let env: { environmentId: string; versionId: string };
  let dataset: { datasetId: string; versionId: string };
  let train: { id: string };
  let sft: { id: string };
  let workerId: string;

  beforeAll(async () => {
    owner = await createUserWithTeam(s.server.url, s.t.db);
    stranger = await createUserWithTeam(s.server.url, s.t.db);
    api = client(owner.cookie);
    const teamId = owner.team.id;
    env = await api.environments.create.mutate({ teamId, name: 'coin', from: { template: 'bandit' } });
    dataset = await api.datasets.upload.mutate({ teamId, name: 'sums.jsonl', jsonl: '{"prompt":"1+1=","completion":"2"}\n' });
    train = await api.jobs.submit.mutate({ teamId, kind: 'TRAIN', config: { environmentVersionId: env.versionId, tags: ['baseline', 'lr:3e-4'], training: { steps: 20 } } });
    sft = await api.jobs.submit.mutate({ teamId, kind: 'SFT', config: { datasetVersionId: dataset.versionId, training: { steps: 5 } } });

    // The TRAIN job runs on a team worker and has reported three steps, a checkpoint and a game.
    const attempt = await activeAttempt(s.t.db, { id: train.id, teamId }, 1);
    workerId = attempt.workerId;
    await s.t.db.worker.update({ where: { id: workerId }, data: { name: 'gpu-a' } });
    await s.t.db.jobAttempt.update({ where: { id: attempt.attemptId }, data: { deviceIndexes: [0] } });
    await s.t.db.job.update({ where: { id: train.id }, data: { state: 'RUNNING', startedAt: new Date(), attempts: 1 } });
    await s.t.db.metricPoint.createMany({
      data: [0, 1, 2].flatMap((step) => [
        { jobId: train.id, key: 'reward/mean', step, value: 0.1 * (step + 1), attempt: 1 },
        { jobId: train.id, key: 'loss/total', step, value: 2 - step, attempt: 1 },
      ]),
    });
    await s.t.db.checkpoint.create({ data: { teamId, jobId: train.id, kind: 'SAMPLER', step: 2, storageKey: 'k', bytes: 4096n, sha256: 'x' } });
    // As the runner records a game (gpu-worker/job-runner/emit.ts): no environment version of its
    // own (the job's is used), the result's returns and end reason.
    await s.t.db.match.create({
      data: {
        teamId, jobId: train.id, step: 2,
        agents: [{ name: 'black', policy: 'policy' }, { name: 'white', policy: 'bot:scripted' }],
        moves: [{ agent: 'black', text: 'a1' }, { agent: 'white', text: 'b2' }, { agent: 'black', text: 'c3' }],
        result: { endReason: 'terminated', returns: { black: 1, white: -1 }, info: { winner: 'black' } },
        winner: 'black',
      },
    });
    // Another team's job on the shared pool, and one in its own team: neither is named here.
    const theirs = await s.t.db.job.create({ data: { teamId: stranger.team.id, ownerId: stranger.user.id, kind: 'SFT', state: 'RUNNING', config: {} } });
    const shared = await s.t.db.worker.create({ data: { teamId: null, name: 'shared-1', hostname: 'h', backend: 'wasm', version: '1', credentialHash: 'shared-1' } });
    await activeAttempt(s.t.db, { id: theirs.id, teamId: stranger.team.id }, 1, shared.id);
    await s.t.db.checkpoint.create({ data: { teamId: stranger.team.id, jobId: theirs.id, kind: 'TRAINING', step: 1, storageKey: 'k2', bytes: 1n, sha256: 'y' } });
  });

  it('lists runs with environment, dataset, worker, step of total and last reward, filtered and paged', async () => {
    const teamId = owner.team.id;
    const { runs, total } = await api.runs.list.query({ teamId });
    expect(total).toBe(2);
    expect(runs.map((r) => r.id)).toEqual([sft.id, train.id]);
    const job = await s.t.db.job.findUniqueOrThrow({ where: { id: train.id } });
    expect(runs[1]).toMatchObject({
      kind: 'TRAIN', state: 'RUNNING', algorithm: 'grpo', attempts: 1, owner: { id: owner.user.id },
      environment: { id: env.environmentId, name: 'coin', versionId: env.versionId, version: 1 }, dataset: null,
      worker: { id: workerId, name: 'gpu-a' }, step: 2, totalSteps: 20, loss: 0,
    });
    expect(runs[1].reward).toBeCloseTo(0.3);
    expect(runs[1].createdAt.getTime()).toBe(job.createdAt.getTime());
    expect(runs[0]).toMatchObject({
      kind: 'SFT', state: 'QUEUED', algorithm: 'sft', environment: null, worker: null, step: null, totalSteps: 5, reward: null,
      dataset: { id: dataset.datasetId, name: 'sums.jsonl', versionId: dataset.versionId, version: 1 },
    });

    expect((await api.runs.list.query({ teamId, states: ['RUNNING'] })).runs.map((r) => r.id)).toEqual([train.id]);
    expect(await api.runs.list.query({ teamId, kinds: ['EVAL'] })).toEqual({ runs: [], total: 0 });
    const second = await api.runs.list.query({ teamId, offset: 1, limit: 1 });
    expect([second.total, second.runs.map((r) => r.id)]).toEqual([2, [train.id]]);
    // The scheduler's order puts the running job first.
    expect((await api.runs.list.query({ teamId, order: 'queue' })).runs.map((r) => r.id)).toEqual([train.id, sft.id]);
    await expect(api.runs.list.query({ teamId, limit: 201 })).rejects.toMatchObject({ data: { code: 'BAD_REQUEST' } });
  });

  it('filters runs by environment, owner and tag; a tag that is not a word is refused at submit', async () => {
    const teamId = owner.team.id;
    const ids = async (filter: { environmentId?: string; ownerId?: string; tag?: string }) => (await api.runs.list.query({ teamId, ...filter })).runs.map((r) => r.id);
    expect(await ids({ environmentId: env.environmentId })).toEqual([train.id]);
    expect(await ids({ ownerId: owner.user.id })).toEqual([sft.id, train.id]);
    expect(await ids({ ownerId: stranger.user.id })).toEqual([]);
    expect(await ids({ tag: 'lr:3e-4' })).toEqual([train.id]);
    expect(await ids({ tag: 'base' })).toEqual([]);
    expect(await ids({ environmentId: env.environmentId, tag: 'baseline', ownerId: owner.user.id })).toEqual([train.id]);
    expect((await api.runs.list.query({ teamId, tag: 'baseline' })).runs[0].tags).toEqual(['baseline', 'lr:3e-4']);
    // Another team's environment finds nothing here.
    const theirs = await client(stranger.cookie).environments.create.mutate({ teamId: stranger.team.id, name: 'coin', from: { template: 'bandit' } });
    expect(await ids({ environmentId: theirs.environmentId })).toEqual([]);
    await expect(api.jobs.submit.mutate({ teamId, kind: 'TRAIN', config: { environmentVersionId: env.versionId, tags: ['two words'] } })).rejects.toMatchObject({
      data: { code: 'BAD_REQUEST' },
      message: expect.stringContaining('a tag is letters, digits'),
    });
  });

  it('gives one run’s summary, and none of another team', async () => {
    expect(await api.runs.summary.query({ teamId: owner.team.id, jobId: train.id })).toMatchObject({ id: train.id, step: 2 });
    const theirs = client(stranger.cookie);
    await expect(theirs.runs.summary.query({ teamId: stranger.team.id, jobId: train.id })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    expect((await theirs.runs.list.query({ teamId: stranger.team.id })).runs.map((r) => r.id)).not.toContain(train.id);
  });

  it('lists the team’s checkpoints and matches with their runs', async () => {
    const teamId = owner.team.id;
    const checkpoints = await api.runs.teamCheckpoints.query({ teamId });
    expect(checkpoints.total).toBe(1);
    expect(checkpoints.checkpoints).toMatchObject([
      { kind: 'SAMPLER', step: 2, bytes: 4096, isAdapter: false, job: { id: train.id, kind: 'TRAIN', state: 'RUNNING', environmentName: 'coin', environmentVersion: 1 } },
    ]);
    expect(await api.runs.teamCheckpoints.query({ teamId, kind: 'TRAINING' })).toEqual({ checkpoints: [], total: 0 });
    // One environment's (the play console and the launcher offer those): the run on coin wrote it.
    expect((await api.runs.teamCheckpoints.query({ teamId, kind: 'SAMPLER', environmentId: env.environmentId })).checkpoints.map((c) => c.step)).toEqual([2]);
    expect(await api.runs.teamCheckpoints.query({ teamId, environmentId: 'another-environment' })).toEqual({ checkpoints: [], total: 0 });

    const matches = await api.runs.teamMatches.query({ teamId });
    expect(matches.total).toBe(1);
    expect(matches.matches).toMatchObject([
      {
        step: 2, winner: 'black', reason: 'terminated', error: null, rewards: { black: 1, white: -1 }, moves: 3,
        players: [{ name: 'black', policy: 'policy' }, { name: 'white', policy: 'bot:scripted' }],
        job: { id: train.id, kind: 'TRAIN' }, environment: { name: 'coin', version: 1 },
      },
    ]);
    expect((await api.runs.teamMatches.query({ teamId, jobId: sft.id })).total).toBe(0);

    // Filters: by result, by who played (text of a seat's policy), by length, by checkpoint.
    const count = async (filter: Omit<Parameters<typeof api.runs.teamMatches.query>[0], 'teamId'>) => (await api.runs.teamMatches.query({ teamId, ...filter })).total;
    expect(await count({ result: 'win' })).toBe(1);
    expect(await count({ result: 'draw' })).toBe(0);
    expect(await count({ result: 'error' })).toBe(0);
    expect(await count({ player: 'SCRIPTED' })).toBe(1);
    expect(await count({ player: 'expert' })).toBe(0);
    expect(await count({ player: '%' })).toBe(0); // a LIKE wildcard is only text
    expect(await count({ minMoves: 3, maxMoves: 3 })).toBe(1);
    expect(await count({ minMoves: 4 })).toBe(0);
    const checkpoint = (await api.runs.teamCheckpoints.query({ teamId, kind: 'SAMPLER' })).checkpoints[0].id;
    expect(await count({ checkpointId: checkpoint })).toBe(0);
    await s.t.db.match.create({
      data: { teamId, agents: [{ name: 'black', policy: `checkpoint:${checkpoint}` }, { name: 'white', policy: 'user' }], moves: [], result: { endReason: 'terminated', error: 'boom' }, winner: null },
    });
    expect(await count({ checkpointId: checkpoint })).toBe(1);
    expect(await count({ result: 'error', player: 'user' })).toBe(1);
  });

  it('says which jobs run on each worker, naming only the team’s own', async () => {
    const jobs = await api.workers.jobs.query({ teamId: owner.team.id });
    const mine = jobs.find((j) => j.workerId === workerId);
    expect(mine).toMatchObject({ deviceIndexes: [0], job: { id: train.id, kind: 'TRAIN', state: 'RUNNING', ownerName: owner.user.name } });
    const other = jobs.find((j) => j.workerId !== workerId);
    expect(other).toMatchObject({ job: null });
    expect(jobs).toHaveLength(2);
  });
});
