/**
 * jobs.preview against a real server and PostgreSQL: the scheduler's answer for a job before it
 * is submitted, and every refusal of jobs.submit answered word for word with its field.
 */
import { createTRPCClient, httpLink } from '@trpc/client';
import { describe, expect, it } from 'vitest';
import { loadTemplate } from '../../env-templates/load-template';
import { transformer } from '../../sdk/transformer';
import type { AppRouter } from '../api/root';
import { seedTeam, seedWorker, type Team } from '../test-support/reliability/harness';
import { useTestServer } from '../test-support/test-server';

describe('jobs.preview', () => {
  const s = useTestServer();
  const api = (team: Team) =>
    createTRPCClient<AppRouter>({ links: [httpLink({ url: `${s.server.url}/api/trpc`, transformer, headers: () => ({ authorization: `Bearer ${team.apiKey}` }) })] });
  const train = (team: Team, config: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
    teamId: team.teamId,
    kind: 'TRAIN' as const,
    config: { environmentVersionId: team.envVersionId, ...config },
    ...extra,
  });

  it('answers the resolved config, the memory estimate and where it would start, creating nothing', async () => {
    const team = await seedTeam(s.t.db);
    const nowhere = await api(team).jobs.preview.query(train(team, { training: { steps: 7 } }));
    expect(nowhere).toMatchObject({
      ok: true,
      resolved: { environmentVersionId: team.envVersionId, training: { algorithm: 'grpo', steps: 7, batchSize: 8 } },
      estimate: { fits: true, largestDeviceBytes: null },
      placement: { startsNow: false, reason: 'waits: no online worker available to this team has 1 device', ahead: 0, estimatedStartAt: null },
    });
    if (!nowhere.ok) throw new Error('refused');
    expect(nowhere.estimate!.bytes).toBeGreaterThan(0);

    const worker = await seedWorker(s.t.db, team, { name: 'local' });
    const now = await api(team).jobs.preview.query(train(team));
    expect(now).toMatchObject({ ok: true, estimate: { fits: true, largestDeviceBytes: 2 ** 30 }, placement: { startsNow: true, worker: { id: worker.id, name: 'local' }, ahead: 0 } });
    if (!now.ok) throw new Error('refused');
    expect(now.placement.reason).toBe('starts now on worker local (WASM device 0)');
    expect(await s.t.db.job.count({ where: { teamId: team.teamId } })).toBe(0);
  });

  it('says why it would wait, in the planner’s words, and how many jobs are ahead of it', async () => {
    const team = await seedTeam(s.t.db, { maxConcurrentDevices: 2 });
    const worker = await seedWorker(s.t.db, team, { name: 'local', devices: 4 });
    // Two running jobs hold the team's quota of 2 devices; three more are queued (no scheduler runs here).
    for (const index of [0, 1]) {
      await s.t.db.job.create({
        data: {
          teamId: team.teamId, ownerId: team.userId, kind: 'TRAIN', state: 'RUNNING', config: {}, timeLimitSeconds: 600, startedAt: new Date(),
          jobAttempts: { create: { number: 1, workerId: worker.id, deviceIndexes: [index], leaseExpiresAt: new Date(Date.now() + 600_000) } },
        },
      });
    }
    for (let i = 0; i < 3; i++) await api(team).jobs.submit.mutate(train(team));
    const answer = await api(team).jobs.preview.query(train(team));
    expect(answer).toMatchObject({ ok: true, placement: { startsNow: false, ahead: 3 } });
    if (!answer.ok) throw new Error('refused');
    expect(answer.placement.reason).toBe('waits: team quota of 2 devices reached (2 in use, this job needs 1); 3 jobs ahead');
    expect(answer.placement.estimatedStartAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await s.t.db.job.count({ where: { teamId: team.teamId, state: 'QUEUED' } })).toBe(3);
  });

  it('refuses what submit refuses, with the same words and the offending field', async () => {
    const team = await seedTeam(s.t.db, { maxConcurrentDevices: 2 });
    await seedWorker(s.t.db, team); // one 1 GiB device
    const math = loadTemplate('math');
    const mathVersion = await s.t.db.environmentVersion.create({
      data: {
        version: 1, contentHash: `math-${team.teamId}`, files: math.source.files, entry: math.source.entry, manifest: math.rawManifest as object, validationStatus: 'VALID',
        environment: { create: { teamId: team.teamId, name: 'math' } },
      },
    });
    const failed = await s.t.db.environmentVersion.create({
      data: {
        version: 2, contentHash: `failed-${team.teamId}`, files: {}, entry: 'env.ts', manifest: {}, validationStatus: 'INVALID',
        validation: { ok: false, compileErrors: [], loadError: null, errors: [{ kind: 'throw', during: 'step', message: 'step threw Error: boom (env.ts:12:3)', location: null, userStack: '', episodes: 8 }], datasetProblems: [], warnings: [], episodes: 8 },
        environment: { connect: { id: (await s.t.db.environmentVersion.findUniqueOrThrow({ where: { id: team.envVersionId } })).environmentId } },
      },
    });
    const cases: Array<[string, ReturnType<typeof train>, string | undefined, RegExp]> = [
      ['a misspelt option', train(team, { training: { learningRat: 0.1 } }), 'training.learningRat', /config\.training\.learningRat: unknown option; did you mean `learningRate`\?/],
      ['a value out of bounds', train(team, { training: { learningRate: -1 } }), 'training.learningRate', /learningRate/],
      ['an unknown config field', train(team, { stepz: 3 }), 'stepz', /config\.stepz: unknown field/],
      ['a version whose dry run failed', train(team, { environmentVersionId: failed.id }), 'environmentVersionId', /^Environment bandit version 2 failed its dry run: step threw Error: boom/],
      ['a dataset version of no one', train(team, { datasetVersionId: 'no-such-version' }), 'datasetVersionId', /^No such dataset version in this team$/],
      ['a data-dependent environment without its dataset', train(team, { environmentVersionId: mathVersion.id }), 'datasetVersionId', /^Environment math reads dataset rows: set datasetVersionId; upload one \(e\.g\. as math\/data\/train\.jsonl\)\.$/],
      ['more devices than the quota', train(team, {}, { deviceCount: 3 }), 'deviceCount', /^Not queued: needs 3 devices, more than the team quota of 2$/],
      ['a run no device could hold', train(team, { training: { model: { layers: 48, width: 4096, heads: 64, contextLength: 1024 } } }), 'training.model', /^This run needs about [\d.]+ GB .* has 1\.0 GB/],
    ];
    for (const [what, input, field, message] of cases) {
      const preview = await api(team).jobs.preview.query(input);
      expect(preview, what).toMatchObject({ ok: false, field });
      if (preview.ok) continue;
      expect(preview.message, what).toMatch(message);
      await expect(api(team).jobs.submit.mutate(input), what).rejects.toThrow(preview.message);
    }
    expect(await s.t.db.job.count({ where: { teamId: team.teamId } })).toBe(0);
  });
});
