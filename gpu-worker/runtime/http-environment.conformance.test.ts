import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '../../sdk/environment/schema';
import { pythonAvailable, reportPythonMissing, startPythonExample } from '../test-support/python-examples';
import { HttpEnvironment } from './http-environment';
import { playEpisode } from './play-episode';

// The HTTP environment client against a server in another language: the documented example
// (examples/http-environments/math_server.py, FastAPI), started here with Python. The row's
// ground truth reaches the game only through the flattened /reset body, so a right answer earning
// 1 shows the protocol is kept field for field.

reportPythonMissing('the HTTP environment conformance test');

describe.skipIf(!pythonAvailable)('an HTTP environment served by Python (FastAPI)', () => {
  let server: Awaited<ReturnType<typeof startPythonExample>> | undefined;
  let url = '';

  beforeAll(async () => {
    server = await startPythonExample();
    url = server.url;
  }, 120_000);

  afterAll(() => server?.close());

  it("learns the answer from the row's fields, shows the row's problem, and rewards the right answer", async () => {
    const env = await HttpEnvironment.connect({ baseUrl: url, jobId: 'conformance' });
    const rows: Array<{ prompt: string } & Record<string, Json>> = [
      { prompt: 'What is 12 + 30?', env_kwargs: { ground_truth: '42' } },
      { prompt: 'What is 7 * 6?', ground_truth: '42' },
      { prompt: 'What is 9 - 4?', env_kwargs: { ground_truth: '5' } },
    ];
    const seen: string[] = [];
    const rewards: number[] = [];
    for (const [i, row] of rows.entries()) {
      const t = await playEpisode(env, {
        episodeId: `conf-${i}`,
        seed: i,
        taskSeed: i,
        row,
        maxTurns: 2,
        // Answers 42 every time: right for the first two rows, wrong for the third.
        actor: (_agent, observation) => (seen.push(observation), 'The answer is 42.'),
      });
      expect(t.endReason).toBe('terminated');
      expect(t.systemPrompts).toEqual({ agent: 'You solve arithmetic problems.' });
      rewards.push(t.totalRewards.agent);
    }
    expect(seen).toEqual(rows.map((r) => `${r.prompt}\n\nAnswer with the number only.`));
    expect(rewards).toEqual([1, 1, 0]);
    // The job's statistics were started at connect and count this job's games.
    const stats = (await (await fetch(`${url}/stats?job_id=conformance`)).json()) as { games: number; correct: number };
    expect(stats).toMatchObject({ games: 3, correct: 2 });
    // Every episode was finalized: the server no longer knows them.
    await expect(env.step({ episodeId: 'conf-0', action: '42' })).rejects.toMatchObject({ kind: 'protocol', message: expect.stringContaining('does not know instance conf-0') });
  });

  it("a row the game cannot use is refused with the server's own words, naming the URL and route", async () => {
    const env = await HttpEnvironment.connect({ baseUrl: url });
    await expect(env.reset({ episodeId: 'no-truth', seed: 1, taskSeed: 1, row: { prompt: 'What is 1 + 1?' } })).rejects.toMatchObject({
      kind: 'protocol',
      message: expect.stringMatching(new RegExp(`^${url}/reset answered HTTP 400: .*this game needs a row with ground_truth`)),
    });
  });
});

describe.skipIf(!pythonAvailable)('a two-player game served by Python (several agents)', () => {
  let server: Awaited<ReturnType<typeof startPythonExample>> | undefined;
  const connect = () => HttpEnvironment.connect({ baseUrl: server!.url, agents: ['x', 'o'] });

  beforeAll(async () => {
    server = await startPythonExample('tictactoe');
  }, 120_000);
  afterAll(() => server?.close());

  it('the agents take turns as the server says, each with its system prompt, and the win is zero-sum', async () => {
    const env = await connect();
    expect(env.description).toMatchObject({ kind: 'multi-agent', agents: ['x', 'o'] });
    const moves: Record<string, string[]> = { x: ['1', '2', '3'], o: ['5', '9'] };
    const turns: string[] = [];
    const t = await playEpisode(env, {
      episodeId: 'ttt-1',
      seed: 1,
      taskSeed: 1,
      maxTurns: 9,
      actor: (agent, observation) => {
        turns.push(agent);
        expect(observation).toContain(`You are ${agent}.`);
        return moves[agent].shift()!;
      },
    });
    expect(turns).toEqual(['x', 'o', 'x', 'o', 'x']);
    expect(t.endReason).toBe('terminated');
    expect(t.systemPrompts).toEqual({ x: expect.stringContaining('You play x.'), o: expect.stringContaining('You play o.') });
    expect(t.totalRewards).toEqual({ x: 1, o: -1 });
    expect(t.finalInfo).toMatchObject({ winner: 'x' });
  });

  it('an illegal move loses for its mover; a step the server refuses names the URL and its words', async () => {
    const env = await connect();
    const t = await playEpisode(env, { episodeId: 'ttt-2', seed: 2, taskSeed: 2, maxTurns: 9, actor: () => '5' });
    expect(t.totalRewards).toEqual({ x: 1, o: -1 });
    expect(t.finalInfo).toMatchObject({ illegal: true, winner: 'x' });
    // Out of turn (the server keeps whose turn it is): refused with its reason.
    const raw = await fetch(`${server!.url}/reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instance_id: 'ttt-3' }) });
    expect(raw.ok).toBe(true);
    const refused = await fetch(`${server!.url}/step`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ instance_id: 'ttt-3', action: '1', agent: 'o' }) });
    expect(refused.status).toBe(409);
  });
});
