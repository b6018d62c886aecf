import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createTRPCClient, httpBatchLink, httpLink, splitLink, type TRPCClient } from '@trpc/client';
import { transformer } from '../transformer';
import type { AppRouter } from '../../server/api/root';
import { CliError, EXIT, keyRefused, toCliError, type KeySource } from './errors';

// Where the server is and who we are: --server / WHETSTONE_URL, and --api-key /
// WHETSTONE_API_KEY, else the local-mode credentials `npm start` keeps in WHETSTONE_HOME.

const DEFAULT_URL = 'http://127.0.0.1:3000';
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REQUEST_TIMEOUT_MS = 30_000;

export type Api = TRPCClient<AppRouter>;

export interface Credentials {
  apiKey: string;
  source: KeySource;
  /** The team the local credentials were made for. */
  teamId?: string;
}

export interface Connection {
  url: string;
  api: Api;
  apiKey: string;
  keySource: KeySource;
  teamId: string;
  /** Any error from a call as a CliError with the right exit code. */
  fail(error: unknown): CliError;
}

export function serverUrl(flag: string | undefined, env: Record<string, string | undefined>): string {
  return (flag ?? env.WHETSTONE_URL ?? DEFAULT_URL).replace(/\/+$/, '');
}

/**
 * Where `npm start` keeps its local credentials: WHETSTONE_HOME when set, else the nearest
 * `.whetstone` holding them, searched upward from the working directory as git finds `.git`, else
 * this checkout's.
 */
function whetstoneHome(env: Record<string, string | undefined>, cwd = process.cwd()): string {
  if (env.WHETSTONE_HOME) return path.resolve(env.WHETSTONE_HOME);
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, '.whetstone', 'local-credentials.json'))) return path.join(dir, '.whetstone');
    if (path.dirname(dir) === dir) break;
  }
  return path.join(REPO_ROOT, '.whetstone');
}

/** The key to use and where it came from, or null when there is none anywhere. */
export function findCredentials(flag: string | undefined, env: Record<string, string | undefined>, cwd?: string): Credentials | null {
  if (flag) return { apiKey: flag, source: { description: '--api-key' } };
  if (env.WHETSTONE_API_KEY) return { apiKey: env.WHETSTONE_API_KEY, source: { description: 'WHETSTONE_API_KEY' } };
  const file = path.join(whetstoneHome(env, cwd), 'local-credentials.json');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  try {
    const saved = JSON.parse(text) as { apiKey?: unknown; teamId?: unknown };
    if (typeof saved.apiKey !== 'string') return null;
    return { apiKey: saved.apiKey, source: { description: file }, teamId: typeof saved.teamId === 'string' ? saved.teamId : undefined };
  } catch {
    throw new CliError(`${file} is not valid JSON: delete it and restart npm start`, EXIT.UNAUTHORIZED);
  }
}

/**
 * A call whose answer comes when the server's work is done (a model the server downloads from the
 * hub): `mutate(input, LONG_CALL)` sends it alone and waits for as long as it takes.
 */
export const LONG_CALL = { context: { long: true } };

function createApi(url: string, apiKey: string): Api {
  const headers = () => ({ authorization: `Bearer ${apiKey}` });
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.context.long === true,
        true: httpLink({ url: `${url}/api/trpc`, transformer, headers, fetch: patientFetch }),
        false: httpBatchLink({
          url: `${url}/api/trpc`,
          transformer,
          headers,
          fetch: (input, init) => {
            const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
            const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
            return fetch(input, { ...(init as RequestInit), signal });
          },
        }),
      }),
    ],
  });
}

/**
 * fetch over node:http without a time limit: Node's own fetch gives up on a server that has not
 * answered within 5 minutes, which a long call's answer may well take.
 */
function patientFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const target = new URL(input instanceof Request ? input.url : String(input));
  return new Promise((resolve, reject) => {
    const request = (target.protocol === 'https:' ? https : http).request(target, { method: init?.method ?? 'GET', headers: Object.fromEntries(new Headers(init?.headers).entries()) }, (res) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(res.headers)) for (const v of [value ?? []].flat()) headers.append(name, v);
      resolve(new Response(Readable.toWeb(res) as ReadableStream, { status: res.statusCode, statusText: res.statusMessage, headers }));
    });
    request.on('error', reject);
    init?.signal?.addEventListener('abort', () => request.destroy(init.signal?.reason as Error));
    request.end(typeof init?.body === 'string' ? init.body : undefined);
  });
}

/**
 * Connects: finds the key, asks the server who it is (which also tells a refused key from a
 * server that is down) and settles the team: --team, the local credentials' team, or the key's
 * one team.
 */
export async function connect(opts: { server?: string; apiKey?: string; team?: string; env: Record<string, string | undefined>; cwd?: string }): Promise<Connection> {
  const url = serverUrl(opts.server, opts.env);
  const credentials = findCredentials(opts.apiKey, opts.env, opts.cwd);
  if (!credentials) {
    throw new CliError('no API key', EXIT.UNAUTHORIZED, [
      'pass --api-key wsk_… or set WHETSTONE_API_KEY (create a key under Team → API keys);',
      `on the machine running npm start, the local key is read from ${path.join(whetstoneHome(opts.env, opts.cwd), 'local-credentials.json')} (WHETSTONE_HOME, else the nearest .whetstone above the working directory)`,
    ]);
  }
  const api = createApi(url, credentials.apiKey);
  const fail = (error: unknown) => toCliError(error, url, credentials.source);
  let me: Awaited<ReturnType<Api['account']['me']['query']>>;
  try {
    me = await api.account.me.query();
  } catch (e) {
    throw fail(e);
  }
  if (!me) throw keyRefused(credentials.source);
  const wanted = opts.team ?? opts.env.WHETSTONE_TEAM ?? credentials.teamId;
  let teamId: string;
  if (wanted) {
    const team = me.teams.find((t) => t.id === wanted || t.slug === wanted);
    if (!team) throw new CliError(`the API key cannot act in team ${wanted}`, EXIT.NOT_FOUND, [`its teams: ${me.teams.map((t) => `${t.slug} (${t.id})`).join(', ') || 'none'}`]);
    teamId = team.id;
  } else if (me.teams.length === 1) {
    teamId = me.teams[0].id;
  } else {
    throw new CliError(me.teams.length === 0 ? 'the API key belongs to no team' : 'which team? pass --team', EXIT.USAGE, me.teams.map((t) => `  ${t.slug} (${t.id})`));
  }
  return { url, api, apiKey: credentials.apiKey, keySource: credentials.source, teamId, fail };
}
