import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { HttpEnvironment } from './http-environment';
import { playEpisode } from './play-episode';
import { SandboxError } from './sandbox/errors';

/**
 * A guess-the-number game server speaking OpenTinker's protocol, with switches to misbehave:
 * fail the next N requests with 503, or stall the next step.
 */
function startGameServer() {
  const games = new Map<string, { target: number; guesses: number }>();
  const control = {
    fail503: 0,
    stallMs: 0,
    /** Drops the connection after reading the next step (it was received: it may have been applied). */
    dropNextStep: false,
    /** The next step's answer, as raw text, instead of the game's. */
    nextStepAnswer: null as string | null,
    requests: [] as string[],
    finalized: [] as string[],
    resets: [] as Array<Record<string, unknown>>,
    steps: new Map<string, number>(),
    headers: [] as Array<string | undefined>,
  };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      control.requests.push(`${req.method} ${req.url}`);
      control.headers.push(req.headers.authorization);
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (control.fail503 > 0) {
        control.fail503--;
        return send(503, { detail: 'busy' });
      }
      const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
      if (req.url === '/health') return send(200, { status: 'healthy' });
      if (req.url === '/reset') {
        control.resets.push(body);
        games.set(String(body.instance_id), { target: (Number(body.seed) * 7) % 10, guesses: 0 });
        return send(200, { observation: 'Guess a digit.', system_prompt: 'Reply with one digit.', ...(body.board ? { game_state: { board: body.board } } : {}) });
      }
      if (req.url?.startsWith('/stats/reset')) return send(200, { step: 1 });
      if (req.url === '/step') {
        control.steps.set(String(body.instance_id), (control.steps.get(String(body.instance_id)) ?? 0) + 1);
        if (control.dropNextStep) {
          control.dropNextStep = false;
          return void req.socket.destroy();
        }
        if (control.nextStepAnswer !== null) {
          const text = control.nextStepAnswer;
          control.nextStepAnswer = null;
          res.writeHead(200, { 'content-type': 'application/json' });
          return void res.end(text);
        }
        const game = games.get(String(body.instance_id));
        if (!game) return send(404, { detail: 'Instance not found. Call /reset first.' });
        const reply = () => {
          game.guesses++;
          const guess = Number(body.action);
          const done = guess === game.target || game.guesses >= 5;
          send(200, { observation: guess < game.target ? 'higher' : 'lower', reward: guess === game.target ? 1 : 0, done, info: { guesses: game.guesses } });
        };
        if (control.stallMs > 0) {
          const ms = control.stallMs;
          control.stallMs = 0;
          return void setTimeout(reply, ms);
        }
        return reply();
      }
      if (req.url === '/finalize') {
        control.finalized.push(String(body.instance_id));
        games.delete(String(body.instance_id));
        return send(200, { message: 'removed' });
      }
      send(404, { detail: 'no such endpoint' });
    });
  });
  return { server, control };
}

let server: Server;
let control: ReturnType<typeof startGameServer>['control'];
let baseUrl: string;

beforeAll(async () => {
  ({ server, control } = startGameServer());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('HTTP environments', () => {
  test('plays an episode over reset, step and finalize', async () => {
    const env = await HttpEnvironment.connect({ baseUrl, jobId: 'job-1' });
    let low = 0;
    let high = 9;
    let last = -1;
    const t = await playEpisode(env, {
      episodeId: 'http-1',
      seed: 3,
      taskSeed: 3,
      maxTurns: 10,
      actor: (_agent, observation) => {
        if (observation === 'higher') low = last + 1;
        if (observation === 'lower') high = last - 1;
        last = Math.floor((low + high) / 2);
        return String(last);
      },
    });
    expect(t.systemPrompts).toEqual({ agent: 'Reply with one digit.' });
    expect(t.endReason).toBe('terminated');
    expect(t.totalRewards.agent).toBe(1); // binary search finds (3*7)%10 = 1 within 5 guesses
    await env.close('http-1');
    expect(control.finalized).toContain('http-1');
  });

  test('retries 503s and succeeds', async () => {
    const env = await HttpEnvironment.connect({ baseUrl, retryDelayMs: 10 });
    control.fail503 = 2;
    const reset = await env.reset({ episodeId: 'http-2', seed: 1, taskSeed: 1 });
    expect(reset.turn.observation).toBe('Guess a digit.');
    expect(control.fail503).toBe(0);
  });

  test('gives up after its retries with a clear error', async () => {
    const env = await HttpEnvironment.connect({ baseUrl, retries: 1, retryDelayMs: 10 });
    control.fail503 = 5;
    const e = await env.reset({ episodeId: 'http-3', seed: 1, taskSeed: 1 }).catch((x: unknown) => x);
    control.fail503 = 0;
    expect(e).toBeInstanceOf(SandboxError);
    expect(e).toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/\/reset is unavailable: HTTP 503: \{"detail":"busy"\} \(tried up to 2 times\)/) });
  });

  test('a step that times out fails without being retried (it may have been applied)', async () => {
    const env = await HttpEnvironment.connect({ baseUrl, timeoutMs: 150, retryDelayMs: 10 });
    await env.reset({ episodeId: 'http-4', seed: 2, taskSeed: 2 });
    const before = control.requests.filter((r) => r === 'POST /step').length;
    control.stallMs = 400;
    const e = await env.step({ episodeId: 'http-4', action: '5' }).catch((x: unknown) => x);
    expect(e).toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/no answer within 150 ms/) });
    expect(control.requests.filter((r) => r === 'POST /step').length - before).toBe(1);
  });

  test('protocol violations are reported, not retried', async () => {
    const env = await HttpEnvironment.connect({ baseUrl });
    const e = await env.step({ episodeId: 'never-reset', action: '1' }).catch((x: unknown) => x);
    expect(e).toMatchObject({ kind: 'protocol', message: expect.stringMatching(/HTTP 404: .*Call \/reset first/) });
  });

  test('a service that is down is reported at connect', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const started = Date.now();
    const e = await HttpEnvironment.connect({ baseUrl: `http://127.0.0.1:${port}`, retries: 2, retryDelayMs: 20 }).catch((x: unknown) => x);
    expect(e).toMatchObject({ kind: 'unavailable', message: expect.stringMatching(new RegExp(`127.0.0.1:${port}/health is unavailable: cannot connect \\(ECONNREFUSED\\) \\(tried up to 3 times\\)`)) });
    // Gave up after its retries rather than waiting for ever (a bound, not a speed figure).
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  test("OpenTinker's /reset: the row's fields flat (its env_kwargs when it has them), seeds, ids; the row's prompt first", async () => {
    const env = await HttpEnvironment.connect({ baseUrl, jobId: 'job-r' });
    const reset = await env.reset({ episodeId: 'row-1', seed: 4, taskSeed: 9, row: { prompt: 'What is 2 + 3?', env_kwargs: { ground_truth: '5', board: 'x..' } } });
    expect(control.resets.at(-1)).toEqual({ instance_id: 'row-1', job_id: 'job-r', seed: 4, task_seed: 9, ground_truth: '5', board: 'x..' });
    expect(reset.turn.observation).toBe('What is 2 + 3?\n\nGuess a digit.');
    // A row without env_kwargs goes flat as it is; a row's instance_id cannot take the episode's.
    await env.reset({ episodeId: 'row-2', seed: 1, taskSeed: 1, row: { prompt: 'p', answer: 7, instance_id: 'not-mine' } });
    expect(control.resets.at(-1)).toEqual({ instance_id: 'row-2', job_id: 'job-r', seed: 1, task_seed: 1, prompt: 'p', answer: 7 });
    // The reset's game_state is in the first step's info.
    const first = await env.step({ episodeId: 'row-1', action: '0' });
    expect(first.info).toMatchObject({ game_state: { board: 'x..' }, guesses: 1 });
    expect((await env.step({ episodeId: 'row-1', action: '1' })).info).not.toHaveProperty('game_state');
  });

  test("a missing reward or done is OpenTinker's 0 or false; done with info.truncated is a truncation; every end is finalized", async () => {
    const env = await HttpEnvironment.connect({ baseUrl });
    await env.reset({ episodeId: 'defaults-1', seed: 1, taskSeed: 1 });
    control.nextStepAnswer = JSON.stringify({ observation: 'go on' });
    expect(await env.step({ episodeId: 'defaults-1', action: '1' })).toMatchObject({ rewards: { agent: 0 }, terminated: false, truncated: false, next: { observation: 'go on' } });
    control.nextStepAnswer = JSON.stringify({ observation: '', reward: 0.5, done: true, info: { truncated: true } });
    expect(await env.step({ episodeId: 'defaults-1', action: '2' })).toMatchObject({ rewards: { agent: 0.5 }, terminated: false, truncated: true, next: null });
    expect(control.finalized).toContain('defaults-1');
  });

  test('a step is never sent twice: a connection lost after the server read it fails the step, naming why', async () => {
    const env = await HttpEnvironment.connect({ baseUrl, retries: 3, retryDelayMs: 10 });
    await env.reset({ episodeId: 'once-1', seed: 1, taskSeed: 1 });
    control.dropNextStep = true;
    const e = await env.step({ episodeId: 'once-1', action: '1' }).catch((x: unknown) => x);
    expect(control.steps.get('once-1')).toBe(1);
    expect(e).toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/\/step failed: .*a step is never sent twice/) });
  });

  test('answers outside the protocol name the URL, the route and what came back', async () => {
    const env = await HttpEnvironment.connect({ baseUrl });
    await env.reset({ episodeId: 'bad-1', seed: 1, taskSeed: 1 });
    control.nextStepAnswer = '<html><body>Bad gateway</body></html>';
    await expect(env.step({ episodeId: 'bad-1', action: '1' })).rejects.toMatchObject({ kind: 'protocol', message: `${baseUrl}/step answered with something that is not JSON: <html><body>Bad gateway</body></html>` });
    control.nextStepAnswer = '{"observation": "x", "reward": 1e999, "done": false}';
    await expect(env.step({ episodeId: 'bad-1', action: '1' })).rejects.toMatchObject({ kind: 'protocol', message: expect.stringContaining(`${baseUrl}/step answered outside the protocol: reward: reward must be a finite number`) });
    const unknown = await env.step({ episodeId: 'forgotten', action: '1' }).catch((x: unknown) => x);
    expect(unknown).toMatchObject({ kind: 'protocol', message: expect.stringMatching(/\/step does not know instance forgotten \(HTTP 404/) });
  });

  test("headers go with every call, and the job's statistics are started once at connect", async () => {
    const before = control.requests.length;
    await HttpEnvironment.connect({ baseUrl, jobId: 'job/stats', headers: { authorization: 'Bearer s3cret' } });
    expect(control.requests.slice(before)).toEqual(['GET /health', 'POST /stats/reset?job_id=job%2Fstats']);
    expect(control.headers.slice(before)).toEqual(['Bearer s3cret', 'Bearer s3cret']);
  });

  test('an error never quotes a header value, even where the server echoes it back', async () => {
    const env = await HttpEnvironment.connect({ baseUrl, headers: { authorization: 'Bearer s3cret-token-value' } });
    await env.reset({ episodeId: 'echo-1', seed: 1, taskSeed: 1 });
    control.nextStepAnswer = 'you sent authorization: Bearer s3cret-token-value';
    const e = (await env.step({ episodeId: 'echo-1', action: '1' }).catch((x: unknown) => x)) as SandboxError;
    expect(e).toBeInstanceOf(SandboxError);
    expect(e.message).toBe(`${baseUrl}/step answered with something that is not JSON: you sent authorization: [a header value, hidden]`);
    control.nextStepAnswer = '{"reward": "Bearer s3cret-token-value"}';
    const parsed = (await env.step({ episodeId: 'echo-1', action: '1' }).catch((x: unknown) => x)) as SandboxError;
    expect(parsed.message).toContain('/step answered outside the protocol');
    expect(parsed.message).not.toContain('s3cret-token-value');
    // The token alone, without its "Bearer ".
    control.nextStepAnswer = 'invalid token s3cret-token-value';
    const bare = (await env.step({ episodeId: 'echo-1', action: '1' }).catch((x: unknown) => x)) as SandboxError;
    expect(bare.message).toBe(`${baseUrl}/step answered with something that is not JSON: invalid token [a header value, hidden]`);
    // An answer quoted in part, cut in the middle of the token.
    control.nextStepAnswer = `${'x'.repeat(290)} s3cret-token-value and more`;
    const cut = (await env.step({ episodeId: 'echo-1', action: '1' }).catch((x: unknown) => x)) as SandboxError;
    expect(cut.message).not.toContain('s3cret-t');
    expect(cut.message).toContain('[a header value, hidden]… (');
  });

  test('several agents: turns go round in the manifest\'s order unless the server names the next, `reward` is the mover\'s, and an unknown agent is a protocol error', async () => {
    // A counting game: each agent adds its number; the server names no agent, so turns go round.
    const bodies: Array<Record<string, unknown>> = [];
    let answerAgent: string | null = null;
    const counting = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
        res.writeHead(200, { 'content-type': 'application/json' });
        if (req.url === '/step') bodies.push(body);
        const answer = req.url === '/reset' ? { observation: 'count', system_prompt: 'Say a number.' } : req.url === '/step' ? { observation: 'next', reward: Number(body.action), done: bodies.length >= 3, ...(answerAgent ? { agent: answerAgent } : {}) } : {};
        res.end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((resolve) => counting.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(counting.address() as AddressInfo).port}`;
    try {
      const env = await HttpEnvironment.connect({ baseUrl: url, agents: ['a', 'b'] });
      const t = await playEpisode(env, { episodeId: 'count-1', seed: 1, taskSeed: 1, maxTurns: 5, actor: (agent) => (agent === 'a' ? '1' : '10') });
      expect(bodies.map((b) => b.agent)).toEqual(['a', 'b', 'a']);
      expect(t.systemPrompts).toEqual({ a: 'Say a number.', b: 'Say a number.' });
      expect(t.totalRewards).toEqual({ a: 2, b: 10 });
      // One agent: the step body is OpenTinker's, with no agent field.
      bodies.length = 0;
      const one = await HttpEnvironment.connect({ baseUrl: url });
      await one.reset({ episodeId: 'count-2', seed: 1, taskSeed: 1 });
      await one.step({ episodeId: 'count-2', action: '1' });
      expect(bodies[0]).not.toHaveProperty('agent');
      // A next mover that is none of the manifest's agents.
      bodies.length = 0;
      answerAgent = 'c';
      await env.reset({ episodeId: 'count-3', seed: 1, taskSeed: 1 });
      await expect(env.step({ episodeId: 'count-3', action: '1' })).rejects.toMatchObject({
        kind: 'protocol',
        message: `${url}/step answered outside the protocol: agent names "c", which is not one of the manifest's agents (a, b)`,
      });
    } finally {
      await new Promise<void>((resolve) => counting.close(() => resolve()));
    }
  });

  test('shards: each instance goes to the server crc32(instance_id) picks, for all its calls', async () => {
    const second = startGameServer();
    await new Promise<void>((resolve) => second.server.listen(0, '127.0.0.1', resolve));
    const secondUrl = `http://127.0.0.1:${(second.server.address() as AddressInfo).port}`;
    try {
      const env = await HttpEnvironment.connect({ baseUrl: [baseUrl, secondUrl] });
      const ids = Array.from({ length: 12 }, (_, i) => `shard-${i}`);
      for (const id of ids) {
        await env.reset({ episodeId: id, seed: 1, taskSeed: 1 });
        await env.step({ episodeId: id, action: '7' }); // (1 × 7) % 10: the right guess, the game ends
      }
      const onSecond = ids.filter((id) => second.control.steps.has(id));
      expect(onSecond.length).toBeGreaterThan(0);
      expect(onSecond.length).toBeLessThan(ids.length);
      for (const id of ids) {
        const expected = crc32(id) % 2 === 0 ? control : second.control;
        expect(expected.steps.get(id), id).toBe(1);
        expect(expected.finalized, id).toContain(id);
        expect(expected.resets.some((r) => r.instance_id === id), id).toBe(true);
      }
    } finally {
      await new Promise<void>((resolve) => second.server.close(() => resolve()));
    }
  });
});

