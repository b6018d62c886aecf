/**
 * The bandit template's game served over HTTP (docs/http-environments.md), for tests of HTTP
 * environments: task_seed picks the colour, the paying arm earns 1; it counts its calls.
 */
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';

const COLOURS = ['red', 'green', 'blue', 'yellow'];
const ARM: Record<string, string> = { red: 'C', green: 'A', blue: 'D', yellow: 'B' };

/**
 * The bandit template's game, over HTTP: task_seed picks the colour; the paying arm earns 1. With
 * `token`, a call without `Authorization: Bearer <token>` gets 401 (a server behind a team secret).
 */
function banditServer(token?: string) {
  const games = new Map<string, string>();
  const calls = { resets: 0, steps: 0, finalized: 0, statsResets: [] as string[], authorizations: new Set<string | undefined>() };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
      const send = (value: unknown, status = 200) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      calls.authorizations.add(req.headers.authorization);
      if (token !== undefined && req.headers.authorization !== `Bearer ${token}`) return send({ detail: 'a bearer token is needed' }, 401);
      if (req.url === '/health') return send({ status: 'healthy' });
      if (req.url?.startsWith('/stats/reset')) return (calls.statsResets.push(new URL(req.url, 'http://x').searchParams.get('job_id') ?? ''), send({}));
      if (req.url === '/reset') {
        calls.resets++;
        const colour = COLOURS[Number(body.task_seed) % COLOURS.length];
        games.set(String(body.instance_id), colour);
        return send({ observation: `colour: ${colour}\narm:`, system_prompt: 'Answer with one letter: A, B, C or D.' });
      }
      if (req.url === '/step') {
        calls.steps++;
        const colour = games.get(String(body.instance_id));
        if (!colour) return send({ detail: 'Call /reset first.' }, 404);
        const arm = String(body.action).trim().charAt(0).toUpperCase();
        return send({ observation: '', reward: arm === ARM[colour] ? 1 : 0, done: true, info: { arm } });
      }
      if (req.url === '/finalize') {
        calls.finalized++;
        games.delete(String(body.instance_id));
        return send({});
      }
      send({ detail: 'no such route' }, 404);
    });
  });
  return { server, calls };
}


/** Listening on a free port of 127.0.0.1. */
export async function startHttpBandit(opts: { token?: string } = {}): Promise<{ url: string; calls: ReturnType<typeof banditServer>['calls']; close: () => Promise<void> }> {
  const { server, calls } = banditServer(opts.token);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
