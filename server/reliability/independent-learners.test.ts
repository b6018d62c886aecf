import { describe, expect, it } from 'vitest';
import { loadTemplate } from '../../env-templates/load-template';
import { agentRewardKey } from '../../sdk/live';
import { jobState, seedTeam, startServer, startWorker, stepNumbers, stepsOf, submitTrain, tempDir, trpc, waitUntil, useReliabilityDatabase } from '../test-support/reliability/harness';

// Two independently learning gomoku agents (training.independentLearners) with a real server,
// daemon and runner child: each learner's checkpoint travels with its agent (IPC, the upload,
// its row), a preempted run resumes every learner from its own checkpoint, and the run ends with
// a sampler checkpoint per learner, the first learner's being the run's.

// 5 × 5, three in a row: short games, most of them decided.
const VARIANT = `import { createGomoku } from './env';\nexport default createGomoku({ size: 5, winLength: 3, instructions: 'brief' });\n`;

describe('reliability: independent learners', () => {
  const ctx = useReliabilityDatabase();

  it('black and white checkpoint on their own, a preempted run resumes both, rewards sum to zero at every step', async () => {
    const team = await seedTeam(ctx.t.db);
    const g = loadTemplate('gomoku');
    const manifest = { ...(g.manifest as object), limits: { maxTurns: 13, maxTokensPerTurn: 16, maxResponseTokens: 208 } };
    const env = await ctx.t.db.environment.create({
      data: {
        teamId: team.teamId, name: 'gomoku', template: 'gomoku',
        versions: { create: { version: 1, contentHash: `gomoku-${team.teamId}`, files: { ...g.source.files, 'variant.ts': VARIANT }, entry: 'variant.ts', manifest, validationStatus: 'VALID' } },
      },
      include: { versions: true },
    });
    // Ten steps of about a second each: the high-priority job arrives well before the run would end.
    const training = {
      steps: 10, batchSize: 1, groupSize: 4, checkpointEvery: 100, learningRate: 0.01, evalEpisodes: 0, warmStart: null,
      learners: ['black', 'white'], independentLearners: true, switchSeats: false, model: { layers: 1, width: 16, heads: 2, contextLength: 256 },
    };
    const submit = (over: Record<string, unknown>, priority: number) =>
      trpc<{ id: string }>(url, team.apiKey, 'jobs.submit', { teamId: team.teamId, kind: 'TRAIN', priority, config: { environmentVersionId: env.versions[0].id, training: { ...training, ...over } } });

    const { url } = await startServer({ databaseUrl: ctx.t.url, leaseSeconds: 10 });
    // Refused at submit, with what to write: the template plays one learner in both seats.
    await expect(submit({ switchSeats: true }, 0)).rejects.toThrow(/switchSeats: with independentLearners each policy keeps its own seat; set switchSeats to false/);

    // wasm, as the engine's tests: gomoku's episodes on the pure-JS cpu backend take ten times as long.
    startWorker({ url, token: team.workerToken, name: 'only', home: tempDir('whetstone-rel-workers-'), backend: 'wasm' });
    await waitUntil('the worker online', async () => (await ctx.t.db.worker.count({ where: { teamId: team.teamId, state: 'ONLINE' } })) === 1);
    const low = await submit({}, 0);
    await waitUntil('the run to make progress', async () => (await ctx.t.db.metricPoint.count({ where: { jobId: low.id, key: agentRewardKey('black') } })) >= 1, 60_000, 50);
    const high = await submitTrain(url, team, 2, 100, { priority: 50 });
    await waitUntil('the high job to succeed', async () => (await jobState(ctx.t.db, high.id)) === 'SUCCEEDED', 60_000, 200);
    await waitUntil('the run to succeed', async () => (await jobState(ctx.t.db, low.id)) === 'SUCCEEDED', 60_000, 200);

    const attempts = await ctx.t.db.jobAttempt.findMany({ where: { jobId: low.id }, orderBy: { number: 'asc' }, include: { resumedFrom: true } });
    expect(attempts).toHaveLength(2);
    expect(attempts[0].exitReason).toMatch(/^preempted/);
    // The preemption's checkpoint: one per learner, at one step; the next attempt resumed from that step.
    const made = await ctx.t.db.checkpoint.findMany({ where: { attemptId: attempts[0].id, kind: 'TRAINING' }, orderBy: { agent: 'asc' } });
    expect(made.map((c) => c.agent)).toEqual(['black', 'white']);
    expect(made[0].step).toBe(made[1].step);
    expect(made.map((c) => c.id)).toContain(attempts[1].resumedFromId);
    const resumedLog = await ctx.t.db.logLine.findMany({ where: { jobId: low.id, attempt: 2, message: { startsWith: 'learner ' } }, orderBy: { line: 'asc' } });
    expect(resumedLog.map((l) => l.message)).toEqual([
      `learner black resumed from checkpoint ${made[0].id} after step ${made[0].step}`,
      `learner white resumed from checkpoint ${made[1].id} after step ${made[1].step}`,
    ]);

    // Every step once, for each agent, and the two rewards sum to zero at every step.
    expect(await stepsOf(ctx.t.db, low.id, agentRewardKey('black'))).toEqual(stepNumbers(10));
    expect(await stepsOf(ctx.t.db, low.id, agentRewardKey('white'))).toEqual(stepNumbers(10));
    const points = await ctx.t.db.metricPoint.findMany({ where: { jobId: low.id, key: { in: [agentRewardKey('black'), agentRewardKey('white')] } } });
    for (const step of stepNumbers(10)) expect(points.filter((p) => p.step === step).reduce((s, p) => s + p.value, 0), `step ${step}`).toBeCloseTo(0, 6);

    // A sampler checkpoint per learner; the run's (the runs list's) is black's.
    const samplers = await ctx.t.db.checkpoint.findMany({ where: { jobId: low.id, kind: 'SAMPLER' }, orderBy: { agent: 'asc' } });
    expect(samplers.map((c) => `${c.agent}@${c.step}`)).toEqual(['black@10', 'white@10']);
    const listed = await trpc<Array<{ id: string; checkpoints: Array<{ id: string }> }>>(url, team.apiKey, 'jobs.list', { teamId: team.teamId }, 'query');
    expect(listed.find((j) => j.id === low.id)?.checkpoints).toEqual([expect.objectContaining({ id: samplers[0].id })]);
  }, 120_000);
});
