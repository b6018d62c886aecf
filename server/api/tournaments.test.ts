/**
 * Tournaments over tRPC against a real server and PostgreSQL: creation checks (a two-player game,
 * its bots, the team's checkpoints, no player twice), one EVAL job a pairing tagged with the
 * tournament, and the table computed from the pairings' matches as the runner records them
 * (gpu-worker/job-runner/emit.ts: the evaluated seat's policy is "policy").
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { eloRatings } from '../../sdk/elo';
import { createUserWithTeam, useTestServer } from '../test-support/test-server';
import { sessionClient } from '../test-support/trpc-client';

describe('tournaments', () => {
  const s = useTestServer();
  const client = (cookie: string) => sessionClient(s.server.url, cookie);
  let owner: Awaited<ReturnType<typeof createUserWithTeam>>;
  let stranger: Awaited<ReturnType<typeof createUserWithTeam>>;
  let api: ReturnType<typeof client>;
  let gomoku: { versionId: string };
  let bandit: { versionId: string };
  const checkpoints: string[] = [];

  beforeAll(async () => {
    owner = await createUserWithTeam(s.server.url, s.t.db);
    stranger = await createUserWithTeam(s.server.url, s.t.db);
    api = client(owner.cookie);
    const teamId = owner.team.id;
    gomoku = await api.environments.create.mutate({ teamId, name: 'go', from: { template: 'gomoku' } });
    bandit = await api.environments.create.mutate({ teamId, name: 'coin', from: { template: 'bandit' } });
    for (const step of [1, 2]) {
      const c = await s.t.db.checkpoint.create({ data: { teamId, kind: 'SAMPLER', step, storageKey: `k${step}`, bytes: 4096n, sha256: `x${step}` } });
      checkpoints.push(c.id);
    }
  });

  it('refuses what cannot be a tournament, with the reason', async () => {
    const teamId = owner.team.id;
    const [a, b] = checkpoints;
    const refused = (input: Parameters<typeof api.tournaments.create.mutate>[0]) => api.tournaments.create.mutate(input).then(() => null, (e: { message: string; data?: { code: string } }) => ({ code: e.data?.code, message: e.message }));
    expect(await refused({ teamId, environmentVersionId: bandit.versionId, players: [{ checkpointId: a }, { checkpointId: b }] })).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('not a two-player game') });
    expect(await refused({ teamId, environmentVersionId: gomoku.versionId, players: [{ checkpointId: a }, { bot: 'alphazero' }] })).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('has no bot "alphazero"') });
    expect(await refused({ teamId, environmentVersionId: gomoku.versionId, players: [{ checkpointId: a }, { checkpointId: a }] })).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('named twice') });
    expect(await refused({ teamId, environmentVersionId: gomoku.versionId, players: [{ bot: 'random' }, { bot: 'scripted' }] })).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('at least one checkpoint') });
    const theirs = await s.t.db.checkpoint.create({ data: { teamId: stranger.team.id, kind: 'SAMPLER', step: 1, storageKey: 'k', bytes: 1n, sha256: 'y' } });
    expect(await refused({ teamId, environmentVersionId: gomoku.versionId, players: [{ checkpointId: a }, { checkpointId: theirs.id }] })).toMatchObject({ code: 'NOT_FOUND' });
    expect(await s.t.db.job.count({ where: { teamId, kind: 'EVAL' } })).toBe(0);
  });

  it('queues a pairing an EVAL job and rates the players from the pairings’ games', async () => {
    const teamId = owner.team.id;
    const [a, b] = checkpoints;
    const { tournamentId, jobIds } = await api.tournaments.create.mutate({ teamId, environmentVersionId: gomoku.versionId, players: [{ checkpointId: a }, { checkpointId: b }, { bot: 'random' }], gamesPerPair: 4 });
    expect(jobIds).toHaveLength(3);
    const jobs = await s.t.db.job.findMany({ where: { id: { in: jobIds } }, orderBy: { createdAt: 'asc' } });
    expect(jobs.map((j) => j.config)).toEqual([
      expect.objectContaining({ checkpointId: a, against: { checkpointId: b }, games: 4, tournamentId }),
      expect.objectContaining({ checkpointId: a, against: { bot: 'random' }, games: 4, tournamentId }),
      expect.objectContaining({ checkpointId: b, against: { bot: 'random' }, games: 4, tournamentId }),
    ]);

    // a beats b 3–1; a beats random 4–0; b and random: 2 won, 1 lost, 1 drawn, and 1 game errored.
    const game = (jobId: string, winner: 'policy' | 'other' | null, error?: string) =>
      s.t.db.match.create({
        data: {
          teamId, jobId,
          agents: [{ name: 'black', policy: 'policy' }, { name: 'white', policy: 'opponent' }],
          moves: [],
          result: { endReason: error ? 'error' : 'terminated', returns: {}, ...(error ? { error } : {}) },
          winner: winner === 'policy' ? 'black' : winner === 'other' ? 'white' : null,
        },
      });
    for (const w of ['policy', 'policy', 'policy', 'other'] as const) await game(jobIds[0], w);
    for (let i = 0; i < 4; i++) await game(jobIds[1], 'policy');
    for (const w of ['policy', 'policy', 'other', null] as const) await game(jobIds[2], w);
    await game(jobIds[2], null, 'the environment threw');

    const t = await api.tournaments.get.query({ teamId, tournamentId });
    expect(t.pairings.map((p) => [p.a, p.b, p.aWins, p.bWins, p.draws, p.errors])).toEqual([
      [`checkpoint:${a}`, `checkpoint:${b}`, 3, 1, 0, 0],
      [`checkpoint:${a}`, 'bot:random', 4, 0, 0, 0],
      [`checkpoint:${b}`, 'bot:random', 2, 1, 1, 1],
    ]);
    const expected = eloRatings([`checkpoint:${a}`, `checkpoint:${b}`, 'bot:random'], t.pairings.map((p) => ({ a: p.a, b: p.b, aWins: p.aWins, bWins: p.bWins, draws: p.draws })));
    expect(t.players.map((p) => p.key)).toEqual([`checkpoint:${a}`, `checkpoint:${b}`, 'bot:random']);
    for (const p of t.players) expect(p.elo).toBeCloseTo(expected.find((e) => e.player === p.key)!.elo, 9);
    expect(t.players.find((p) => p.key === 'bot:random')).toMatchObject({ label: 'random (bot)', games: 8, score: 1.5 });
    expect(t.environment).toMatchObject({ name: 'go' });

    const list = await api.tournaments.list.query({ teamId });
    expect(list).toEqual([expect.objectContaining({ id: tournamentId, pairings: 3, finished: 0, games: 12, environment: { name: 'go', version: 1 } })]);
    // Another team sees no such tournament.
    await expect(client(stranger.cookie).tournaments.get.query({ teamId: stranger.team.id, tournamentId })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    expect(await client(stranger.cookie).tournaments.list.query({ teamId: stranger.team.id })).toEqual([]);
  });
});
