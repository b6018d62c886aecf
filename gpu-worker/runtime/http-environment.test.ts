import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
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
  const control = { fail503: 0, stallMs: 0, requests: [] as string[], finalized: [] as string[] };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      control.requests.push(`${req.method} ${req.url}`);
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
        games.set(String(body.instance_id), { target: (Number(body.seed) * 7) % 10, guesses: 0 });
        return send(200, { observation: 'Guess a digit.', system_prompt: 'Reply with one digit.' });
      }
      if (req.url === '/step') {
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
    expect(e).toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/\/reset is unavailable: HTTP 503 \(tried up to 2 times\)/) });
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
});
