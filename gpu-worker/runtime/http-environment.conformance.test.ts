import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '../../sdk/environment/schema';
import { freePort } from '../../server/db/embedded';
import { repoRoot } from '../../server/paths';
import { waitUntil } from '../../server/test-support/reliability/harness';
import { HttpEnvironment } from './http-environment';
import { playEpisode } from './play-episode';

// The HTTP environment client against a server in another language: the documented example
// (examples/http-environments/math_server.py, FastAPI), started here with Python. The row's
// ground truth reaches the game only through the flattened /reset body, so a right answer earning
// 1 shows the protocol is kept field for field.

const SERVER = path.join(repoRoot, 'examples/http-environments/math_server.py');
const python = spawnSync('python3', ['-c', 'import fastapi, uvicorn'], { encoding: 'utf8' });
const available = python.status === 0;
const why = python.error ? `python3 is not installed (${python.error.message})` : python.stderr.trim().split('\n').pop();

if (!available) {
  if (process.env.CI === 'true') {
    it('needs Python with FastAPI and uvicorn (.ci/run installs them)', () => {
      throw new Error(`the HTTP environment conformance test cannot run: ${why}. Run: python3 -m pip install fastapi uvicorn`);
    });
  } else {
    console.warn(`[skipped] HTTP environment conformance: ${why}. To run it: python3 -m pip install fastapi uvicorn`);
  }
}

describe.skipIf(!available)('an HTTP environment served by Python (FastAPI)', () => {
  let child: ChildProcess;
  let url = '';
  let output = '';

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    child = spawn('python3', [SERVER, '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    // Up when /health answers: Python and FastAPI's imports take their time on a loaded machine.
    const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`the example server exited ${code}:\n${output}`))));
    exited.catch(() => {}); // once it is up, its exit at the end (afterAll) is no failure
    await Promise.race([exited, waitUntil('the example server to answer /health', () => fetch(`${url}/health`).then((r) => r.ok), 110_000)]);
  }, 120_000);

  afterAll(() => {
    child?.kill();
  });

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
