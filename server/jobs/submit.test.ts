import { describe, expect, it } from 'vitest';
import { seedTeam, seedWorker, trpc } from '../test-support/reliability/harness';
import { useTestServer } from '../test-support/test-server';

// What the server checks at submit, whatever a client checked before.

describe('jobs.submit refuses what cannot run, and bounds what can', () => {
  const ctx = useTestServer();
  const submit = (team: Awaited<ReturnType<typeof seedTeam>>, config: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    trpc<{ id: string }>(ctx.server.url, team.apiKey, 'jobs.submit', { teamId: team.teamId, kind: 'TRAIN', config: { environmentVersionId: team.envVersionId, ...config }, ...extra });

  it('a job without a time limit gets the team’s default, which admins set', async () => {
    const team = await seedTeam(ctx.t.db);
    const first = await submit(team, {});
    expect((await ctx.t.db.job.findUniqueOrThrow({ where: { id: first.id } })).timeLimitSeconds).toBe(86_400);
    await trpc(ctx.server.url, team.apiKey, 'quotas.update', { teamId: team.teamId, maxConcurrentDevices: 8, maxQueuedJobs: 100, maxPriority: 100, defaultTimeLimitSeconds: 600 });
    const second = await submit(team, {});
    expect((await ctx.t.db.job.findUniqueOrThrow({ where: { id: second.id } })).timeLimitSeconds).toBe(600);
    const asked = await submit(team, {}, { timeLimitSeconds: 60 });
    expect((await ctx.t.db.job.findUniqueOrThrow({ where: { id: asked.id } })).timeLimitSeconds).toBe(60);
  });

  it('a run no device of the team could hold is refused with both sizes; one that fits is queued', async () => {
    const team = await seedTeam(ctx.t.db);
    await seedWorker(ctx.t.db, team); // one 1 GiB device
    const huge = { training: { model: { layers: 48, width: 4096, heads: 64, contextLength: 1024 } } };
    await expect(submit(team, huge)).rejects.toThrow(/This run needs about [\d.]+ GB \(weights, optimiser state, activations, KV cache\) and the largest device of this team's workers has 1\.0 GB/);
    expect(await ctx.t.db.job.count({ where: { teamId: team.teamId } })).toBe(0);
    await expect(submit(team, { training: { batchSize: 4096, groupSize: 1024 } })).rejects.toThrow(/needs about/);
    expect((await submit(team, {})).id).toBeTruthy();
  });

  it("a warm start's dataset must be the team's own; its options are stored resolved", async () => {
    const team = await seedTeam(ctx.t.db);
    const stranger = await seedTeam(ctx.t.db);
    const dataset = (teamId: string) =>
      ctx.t.db.dataset.create({
        data: { teamId, name: `d-${Math.random()}`, versions: { create: { version: 1, contentHash: 'h', storageKey: `ds-${Math.random()}`, rowCount: 1, bytes: 1n } } },
        include: { versions: true },
      });
    const [own, foreign] = [(await dataset(team.teamId)).versions[0], (await dataset(stranger.teamId)).versions[0]];
    const warmStart = (datasetVersionId: string) => ({ training: { warmStart: { from: 'dataset', datasetVersionId, steps: 10 } } });
    await expect(submit(team, warmStart(foreign.id))).rejects.toThrow('No such dataset version in this team');
    const job = await submit(team, warmStart(own.id));
    const config = (await ctx.t.db.job.findUniqueOrThrow({ where: { id: job.id } })).config as { training: Record<string, unknown> };
    expect(config.training.warmStart).toEqual({ from: 'dataset', datasetVersionId: own.id, steps: 10, batchSize: 32, learningRate: 0.003, warmupSteps: 20, decay: true });
    await expect(submit(team, { training: { warmStart: { steps: 10 } } })).rejects.toThrow(/config\.training\.warmStart\.from: write "from": "bot"/);
  });

  it("a frozen checkpoint opponent must be the team's own; the refusal names the field", async () => {
    const team = await seedTeam(ctx.t.db);
    const stranger = await seedTeam(ctx.t.db);
    const checkpoint = (teamId: string) => ctx.t.db.checkpoint.create({ data: { teamId, kind: 'SAMPLER', step: 1, storageKey: `k-${Math.random()}`, bytes: 1n, sha256: '0' } });
    const [own, foreign] = [await checkpoint(team.teamId), await checkpoint(stranger.teamId)];
    const against = (id: string) => ({ training: { opponents: { [`checkpoint:${id}`]: 1, random: 1 } } });
    await expect(submit(team, against(foreign.id))).rejects.toThrow(`No such checkpoint in this team: training.opponents names "checkpoint:${foreign.id}"`);
    const job = await submit(team, against(own.id));
    const config = (await ctx.t.db.job.findUniqueOrThrow({ where: { id: job.id } })).config as { training: Record<string, unknown> };
    expect(config.training.opponents).toEqual({ [`checkpoint:${own.id}`]: 1, random: 1 });
  });

  it('a job on a version whose dry run failed is refused, naming the version and its first error', async () => {
    const team = await seedTeam(ctx.t.db);
    await ctx.t.db.environmentVersion.update({
      where: { id: team.envVersionId },
      data: {
        validationStatus: 'INVALID',
        validation: { ok: false, compileErrors: [], loadError: null, errors: [{ kind: 'throw', during: 'step', message: 'step threw Error: boom (env.ts:12:3)', location: null, userStack: '', episodes: 8 }], datasetProblems: [], warnings: [], episodes: 8 },
      },
    });
    await expect(submit(team, {})).rejects.toThrow('Environment bandit version 1 failed its dry run: step threw Error: boom (env.ts:12:3) (in 8 episodes). Fix it and save a new version.');
  });
});
