/**
 * "Served over HTTP" environments made from their answers (the IDE's form; the CLI's env create
 * makes the same manifest), against a real server, PostgreSQL, dry-run pool and the Python
 * two-player example game: several agents in turn order, dry-run on the live server, and answers
 * that make no such game refused field by field.
 */
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pythonAvailable, reportPythonMissing, startPythonExample } from '../../gpu-worker/test-support/python-examples';
import { httpManifest } from '../../sdk/http-manifest';
import { transformer } from '../../sdk/transformer';
import { createUserWithTeam, useTestServer } from '../test-support/test-server';
import type { AppRouter } from './root';

reportPythonMissing('the multi-agent HTTP environment API test');

describe.skipIf(!pythonAvailable)('HTTP environments of several agents', () => {
  const s = useTestServer();
  let game: Awaited<ReturnType<typeof startPythonExample>> | undefined;
  let api: ReturnType<typeof createTRPCClient<AppRouter>>;
  let teamId = '';

  beforeAll(async () => {
    game = await startPythonExample('tictactoe');
    const owner = await createUserWithTeam(s.server.url, s.t.db);
    teamId = owner.team.id;
    api = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${s.server.url}/api/trpc`, transformer, headers: () => ({ cookie: owner.cookie, origin: s.server.url }) })] });
  }, 120_000);
  afterAll(() => game?.close());

  it('a two-player game from its address and agents: dry-run on the server, every agent a learner', async () => {
    const made = await api.environments.create.mutate({ teamId, name: 'ttt', from: { http: { urls: [game!.url], kind: 'multi-agent', agents: ['x', 'o'], maxTurns: 9, maxTokens: 2 } } });
    expect(made).toMatchObject({ ok: true, version: 1, validation: { ok: true } });
    const version = await api.environments.version.query({ teamId, versionId: made.versionId });
    expect(version).toMatchObject({ validationStatus: 'VALID', manifest: { kind: 'multi-agent', agents: ['x', 'o'], limits: { maxTurns: 9 }, training: { learners: ['x', 'o'] } } });
    // The dry run's random players lose by illegal moves; each game's rewards are the server's, zero-sum.
    const report = version.validation as { episodes: number; rewards: Record<string, { mean: number }> };
    expect(report.episodes).toBeGreaterThan(0);
    expect(report.rewards.x.mean + report.rewards.o.mean).toBeCloseTo(0, 6);
  });

  it('a data-dependent game: the dry run sends the dataset rows the save brings (the CLI\'s env create --dataset)', async () => {
    const math = await startPythonExample('math');
    try {
      const rows = [{ prompt: 'What is 1 + 1?', ground_truth: '2' }, { prompt: 'What is 2 + 3?', ground_truth: '5' }].map((r) => JSON.stringify(r)).join('\n');
      const manifest = httpManifest({ name: 'sums-http', urls: [math.url], kind: 'single-turn', maxTokens: 2, datasetFile: 'rows.jsonl' });
      // Without rows the server refuses every /reset: saved, invalid, its words quoted.
      const without = await api.environments.saveVersion.mutate({ teamId, name: 'sums-http', entry: 'env.ts', files: {}, manifest });
      expect(without).toMatchObject({ created: true, version: 1, validation: { ok: false, errors: [{ message: expect.stringContaining('this game needs a row with ground_truth') }] } });
      // The same content with its rows: the same version, dry-run again (an HTTP game's failure may be fixed since), and valid.
      const saved = await api.environments.saveVersion.mutate({ teamId, name: 'sums-http', entry: 'env.ts', files: {}, manifest, datasetText: rows });
      expect(saved).toMatchObject({ created: false, version: 1, versionId: without.versionId });
      expect(saved.validation).toMatchObject({ ok: true, errors: [], datasetProblems: [] });
      expect(await api.environments.version.query({ teamId, versionId: saved.versionId })).toMatchObject({ validationStatus: 'VALID' });
      expect(saved.validation!.episodes).toBeGreaterThan(0);
      // (Another environment: the same content again would answer the version saved above.)
      const badManifest = httpManifest({ name: 'sums-http-bad', urls: [math.url], kind: 'single-turn', maxTokens: 2, datasetFile: 'rows.jsonl' });
      const bad = await api.environments.saveVersion.mutate({ teamId, name: 'sums-http-bad', entry: 'env.ts', files: {}, manifest: badManifest, datasetText: `${rows}\nnot json` });
      expect(bad.validation).toMatchObject({ ok: false, datasetProblems: [{ path: 'rows.jsonl', line: 3 }] });
    } finally {
      math.close();
    }
  });

  it('answers that make no such game are refused, field by field', async () => {
    const http = (over: Record<string, unknown>) => ({ urls: [game!.url], kind: 'multi-agent' as const, ...over });
    await expect(api.environments.create.mutate({ teamId, name: 'one', from: { http: http({ agents: ['x'] }) } })).rejects.toThrow('a multi-agent game names two agents or more, in turn order');
    await expect(api.environments.create.mutate({ teamId, name: 'twice', from: { http: http({ agents: ['x', 'x'] }) } })).rejects.toThrow('agent names must be unique');
    await expect(api.environments.create.mutate({ teamId, name: 'stray', from: { http: { urls: [game!.url], kind: 'multi-turn', agents: ['x', 'o'] } } })).rejects.toThrow('agents go with kind multi-agent');
  });
});
