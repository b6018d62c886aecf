/**
 * An environment served over HTTP with OpenTinker's game-server protocol, so that an environment
 * written in another language (OpenTinker's own servers among them) plugs in unchanged:
 *
 *   POST /reset    { instance_id, job_id, seed, task_seed, ...the row's fields }
 *                  -> { observation, system_prompt?, game_state?, agent?, system_prompts? }
 *   POST /step     { instance_id, job_id, action, agent? } -> { observation?, reward?, done?, info?, agent?, rewards? }
 *   POST /finalize { instance_id, job_id }          -> anything (sent at every episode's end)
 *   GET  /health                                    -> 200
 *   POST /stats/reset?job_id=…                      -> anything (once per job, where offered)
 *
 * Field for field as OpenTinker's client: the dataset row's fields go flat at the top of /reset
 * (its `env_kwargs` object when it has one), where the game reads them as keyword arguments; the
 * model's first prompt is the row's prompt followed by the reset observation; a missing reward or
 * done is 0 or false; several servers on consecutive ports are routed by crc32(instance_id), so an
 * episode's calls all reach the one server that holds it.
 *
 * Several agents (Whetstone's extension; a one-agent game never sees it): the manifest lists the
 * agents in turn order; /reset may answer `agent` (who moves first; default the first) and
 * `system_prompts` (one per agent); each /step is sent with `agent` (who acted) and may answer
 * `agent` (who moves next; default the next in turn order) and `rewards` (each agent's reward for
 * the step; without it, `reward` is the mover's).
 *
 * Retries: only where the request cannot have reached the game — a connection that could not be
 * made, or a 503 (the server refused it). A step is never sent twice: a timeout or a connection
 * lost after sending may have applied the action, and applying it again would corrupt the episode.
 */
import { crc32 } from 'node:zlib';
import { z } from 'zod';
import { type EnvironmentHandle, type ResetRequest, type StepRequest } from './environment-handle';
import { SandboxError } from './sandbox/errors';
import { type ResetResponse, type StepResponse } from './sandbox/protocol';
import type { EnvironmentDescription } from '../../sdk/dry-run-report';
import type { Json } from '../../sdk/environment/schema';
import { jsonObjectSchema } from '../../sdk/user-json';

export interface HttpEnvironmentOptions {
  /** e.g. http://127.0.0.1:8081; or several (shards), one per server process. */
  baseUrl: string | string[];
  /** Sent as job_id so one server can keep statistics per job (OpenTinker's multi-job isolation). */
  jobId?: string;
  name?: string;
  /** Per call; OpenTinker's servers may be slow (a simulator's step). Default 60 s. */
  timeoutMs?: number;
  /** Per /reset, which may build a whole world (ALFWorld's take tens of seconds). Default: timeoutMs. */
  resetTimeoutMs?: number;
  /** Extra attempts after the first, for calls that cannot have reached the game (see above). */
  retries?: number;
  retryDelayMs?: number;
  /** Sent with every call (a token from a team secret). */
  headers?: Record<string, string>;
  /** The row's field that holds the problem text shown before the reset observation. Default "prompt". */
  promptField?: string;
  /** Told of what goes wrong without ending the episode (a /finalize that failed). */
  warn?: (message: string) => void;
  /** single-turn, multi-turn or multi-agent, as the manifest says (default multi-turn, or multi-agent with several agents). */
  kind?: 'single-turn' | 'multi-turn' | 'multi-agent';
  /** The manifest's agents, in turn order (default one, "agent"). Several: see "Several agents" above. */
  agents?: string[];
}

const DEFAULT_TIMEOUT_MS = 60_000;
/** What an error quotes of an answer that broke the protocol. */
const QUOTED = 300;
/** Failures that happen before a request is sent: the server never saw it. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

const finite = (what: string) =>
  // zod refuses ±Infinity (which JSON.parse gives for 1e999) with a message of its own; this one says what is wrong.
  z.unknown().refine((v) => v === null || v === undefined || (typeof v === 'number' && Number.isFinite(v)), `${what} must be a finite number`).transform((v) => v as number | null | undefined);
const resetSchema = z.object({
  observation: z.string(),
  system_prompt: z.string().nullish(),
  game_state: jsonObjectSchema.nullish(),
  // Several agents (Whetstone's extension): who moves first, and each one's system prompt.
  agent: z.string().nullish(),
  system_prompts: z.record(z.string(), z.string()).nullish(),
});
// OpenTinker's client takes a missing observation as "", reward as 0 and done as false.
const stepSchema = z.object({
  observation: z.string().nullish(),
  // zod refuses ±Infinity (which JSON.parse gives for 1e999) with a message of its own; this one says what is wrong.
  reward: finite('reward').optional(),
  done: z.boolean().nullish(),
  info: jsonObjectSchema.nullish(),
  // Several agents: who moves next, and each agent's reward for this step.
  agent: z.string().nullish(),
  rewards: z.record(z.string(), finite('each of rewards')).nullish(),
});

/** A call that may be tried again: the server cannot have acted on it. */
class NotSent extends Error {}

export class HttpEnvironment implements EnvironmentHandle {
  readonly description: EnvironmentDescription;
  private readonly urls: string[];
  private readonly timeoutMs: number;
  private readonly resetTimeoutMs: number;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly jobId: string;
  private readonly headers: Record<string, string>;
  private readonly promptField: string;
  private readonly warn: (message: string) => void;
  /** The reset's game_state of each open episode, given with the first step's info. */
  private readonly gameStates = new Map<string, Json>();
  /** Episodes reset and not yet finalized: a close after the end sends no second /finalize. */
  private readonly open = new Set<string>();
  private readonly agents: string[];
  /** Whose turn it is in each open episode (several agents). */
  private readonly movers = new Map<string, string>();

  private constructor(options: HttpEnvironmentOptions) {
    const urls = (Array.isArray(options.baseUrl) ? options.baseUrl : [options.baseUrl]).map((u) => u.replace(/\/+$/, ''));
    if (urls.length === 0) throw new Error('an HTTP environment needs at least one URL');
    this.urls = urls;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.resetTimeoutMs = options.resetTimeoutMs ?? this.timeoutMs;
    this.retries = options.retries ?? 2;
    this.retryDelayMs = options.retryDelayMs ?? 200;
    this.jobId = options.jobId ?? 'default';
    this.headers = options.headers ?? {};
    this.promptField = options.promptField ?? 'prompt';
    this.warn = options.warn ?? (() => {});
    this.agents = options.agents && options.agents.length > 0 ? options.agents : ['agent'];
    const served = urls.length === 1 ? urls[0] : `${urls[0]} and ${urls.length - 1} more`;
    this.description = {
      kind: options.kind ?? (this.agents.length > 1 ? 'multi-agent' : 'multi-turn'),
      name: options.name ?? `http:${urls[0]}`,
      description: `served by ${served}`,
      agents: this.agents,
      context: 'full',
      rowSchema: null,
      tools: [],
      toolPrompt: '',
      bots: [],
      definedAt: '',
    };
  }

  /**
   * Checks every server's /health first, so that one that is down is reported, by its URL, before
   * any episode starts; then starts the job's statistics where the server keeps them.
   */
  static async connect(options: HttpEnvironmentOptions): Promise<HttpEnvironment> {
    const env = new HttpEnvironment(options);
    for (const url of env.urls) await env.request(url, 'GET', '/health', undefined, env.timeoutMs);
    for (const url of env.urls) await env.resetStats(url);
    return env;
  }

  /** The server that holds this instance: OpenTinker's routing, crc32 of the id over the servers. */
  urlFor(instanceId: string): string {
    return this.urls[crc32(instanceId) % this.urls.length];
  }

  async reset(request: ResetRequest): Promise<ResetResponse> {
    const url = this.urlFor(request.episodeId);
    const fields = rowFields(request.row);
    const body = { seed: request.seed, task_seed: request.taskSeed, ...fields, instance_id: request.episodeId, job_id: this.jobId };
    const r = this.parse(url, '/reset', resetSchema, await this.request(url, 'POST', '/reset', body, this.resetTimeoutMs));
    const first = this.agentNamed(url, '/reset', r.agent) ?? this.agents[0];
    this.open.add(request.episodeId);
    this.movers.set(request.episodeId, first);
    if (r.game_state) this.gameStates.set(request.episodeId, r.game_state as Json);
    // The problem is the row's (OpenTinker's prompt), the reset observation follows it.
    const prompt = promptOf(request.row, this.promptField);
    const observation = prompt ? (r.observation ? `${prompt}\n\n${r.observation}` : prompt) : r.observation;
    const systemPrompts = Object.fromEntries(this.agents.map((a) => [a, r.system_prompts?.[a] ?? r.system_prompt ?? '']));
    return { turn: { agent: first, observation }, systemPrompts, task: request.row ?? null };
  }

  async step(request: StepRequest): Promise<StepResponse> {
    const url = this.urlFor(request.episodeId);
    const mover = this.movers.get(request.episodeId) ?? this.agents[0];
    const several = this.agents.length > 1;
    // The mover is named only with several agents: a one-agent body is OpenTinker's, field for field.
    const body = { instance_id: request.episodeId, job_id: this.jobId, action: request.action, ...(several ? { agent: mover } : {}) };
    const answer = await this.request(url, 'POST', '/step', body, this.timeoutMs, request.episodeId);
    const r = this.parse(url, '/step', stepSchema, answer);
    const info: Record<string, Json> = JSON.parse(JSON.stringify(r.info ?? {})) as Record<string, Json>;
    const state = this.gameStates.get(request.episodeId);
    if (state !== undefined) {
      info.game_state ??= state;
      this.gameStates.delete(request.episodeId);
    }
    for (const name of Object.keys(r.rewards ?? {})) this.agentNamed(url, '/step', name, 'rewards');
    // Each agent's reward: the answer's `rewards` where given, else `reward` is the mover's.
    const rewards = Object.fromEntries(this.agents.map((a) => [a, r.rewards ? (r.rewards[a] ?? 0) : a === mover ? (r.reward ?? 0) : 0]));
    const ended = r.done ?? false;
    // A server that stopped the game for its own limit says so in info; that is no terminal state.
    const truncated = ended && info.truncated === true;
    if (ended) await this.finalize(request.episodeId);
    // Who moves next: the answer's `agent`, else the next in turn order.
    const next = ended ? null : (this.agentNamed(url, '/step', r.agent) ?? this.agents[(this.agents.indexOf(mover) + 1) % this.agents.length]);
    if (next) this.movers.set(request.episodeId, next);
    return {
      rewards,
      terminated: ended && !truncated,
      truncated,
      info,
      next: next ? { agent: next, observation: r.observation ?? '' } : null,
      tool: null,
    };
  }

  /** An agent the server named: one of the manifest's, or a protocol error that lists them. */
  private agentNamed(url: string, route: string, name: string | null | undefined, field = 'agent'): string | undefined {
    if (name === null || name === undefined) return undefined;
    if (this.agents.includes(name)) return name;
    throw new SandboxError('protocol', route.slice(1), `${url}${route} answered outside the protocol: ${field} names "${quote(name)}", which is not one of the manifest's agents (${this.agents.join(', ')})`, null, '');
  }

  async bot(): Promise<string> {
    throw new SandboxError('protocol', 'bot', 'HTTP environments have no bots', null, '');
  }

  /** An episode that ends early (a turn or token limit) is finalized too; one that ended already was. */
  async close(episodeId: string): Promise<void> {
    if (this.open.has(episodeId)) await this.finalize(episodeId);
  }

  async dispose(): Promise<void> {}

  /** /finalize lets the server free the instance; one that fails is told, never fatal. */
  private async finalize(episodeId: string): Promise<void> {
    this.gameStates.delete(episodeId);
    this.movers.delete(episodeId);
    this.open.delete(episodeId);
    const url = this.urlFor(episodeId);
    try {
      await this.request(url, 'POST', '/finalize', { instance_id: episodeId, job_id: this.jobId }, this.timeoutMs);
    } catch (e) {
      this.warn(`${url}/finalize for ${episodeId} failed (the episode stands): ${(e as Error).message}`);
    }
  }

  /** OpenTinker's servers keep per-job statistics; a server without the route is fine. */
  private async resetStats(url: string): Promise<void> {
    try {
      await this.request(url, 'POST', `/stats/reset?job_id=${encodeURIComponent(this.jobId)}`, undefined, this.timeoutMs);
    } catch (e) {
      if (!(e instanceof SandboxError && e.kind === 'protocol' && /HTTP (404|405)\b/.test(e.message))) {
        this.warn(`${url}/stats/reset failed (statistics on the server may mix jobs): ${(e as Error).message}`);
      }
    }
  }

  private parse<T>(url: string, route: string, schema: z.ZodType<T>, value: unknown): T {
    const r = schema.safeParse(value);
    if (r.success) return r.data;
    const problem = r.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
    throw this.hidingHeaders(new SandboxError('protocol', route.slice(1), `${url}${route} answered outside the protocol: ${problem}; it sent ${quote(JSON.stringify(value))}`, null, ''));
  }

  /**
   * The error with every header value taken out of its message: they may be team secrets, and an
   * answer (a server that echoes its request) or fetch's own words (an invalid header value) may
   * quote them, while these messages go to job logs, reports and the IDE.
   */
  private hidingHeaders(e: SandboxError): SandboxError {
    const HIDDEN = '[a header value, hidden]';
    // A value, its words (a server may echo the token without "Bearer "), and each as JSON writes it.
    const plain = [...new Set(Object.values(this.headers).flatMap((v) => [v, ...v.split(/\s+/)]))].filter((v) => v.length >= 6);
    const values = [...new Set(plain.flatMap((v) => [v, JSON.stringify(v).slice(1, -1)]))].sort((a, b) => b.length - a.length);
    let detail = values.reduce((text, v) => text.split(v).join(HIDDEN), e.detail);
    // An answer quoted in part may end in the first characters of one.
    detail = detail.replace(/(\S{6,})… \((\d+) characters\)/g, (whole, tail: string, n: string) =>
      values.some((v) => [...Array(v.length - 5).keys()].some((k) => tail.endsWith(v.slice(0, v.length - k)))) ? `${HIDDEN}… (${n} characters)` : whole,
    );
    return detail === e.detail ? e : new SandboxError(e.kind, e.during, detail, e.location, e.userStack, e.logs);
  }

  private async request(url: string, method: 'GET' | 'POST', route: string, body: unknown, timeoutMs: number, instanceId?: string): Promise<unknown> {
    try {
      return await this.requestWithRetries(url, method, route, body, timeoutMs, instanceId);
    } catch (e) {
      throw e instanceof SandboxError ? this.hidingHeaders(e) : e;
    }
  }

  private async requestWithRetries(url: string, method: 'GET' | 'POST', route: string, body: unknown, timeoutMs: number, instanceId?: string): Promise<unknown> {
    const during = route.slice(1).split('?')[0];
    let last = '';
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, this.retryDelayMs * attempt));
      try {
        return await this.once(url, method, route, body, timeoutMs, instanceId);
      } catch (e) {
        if (e instanceof SandboxError) throw e;
        const timedOut = (e as Error).name === 'TimeoutError';
        last = timedOut ? `no answer within ${timeoutMs} ms` : describeFailure(e);
        if (!(e instanceof NotSent) && !notSent(e)) {
          // It may have reached the game: said once, with why it is not tried again.
          const once = route === '/step' ? ' (a step is never sent twice: the server may have applied it)' : '';
          throw new SandboxError('unavailable', during, `environment service ${url}${route} failed: ${last}${once}`, null, '');
        }
      }
    }
    const tried = this.retries === 0 ? 'tried once' : `tried up to ${this.retries + 1} times`;
    throw new SandboxError('unavailable', during, `environment service ${url}${route} is unavailable: ${last} (${tried})`, null, '');
  }

  private async once(url: string, method: string, route: string, body: unknown, timeoutMs: number, instanceId?: string): Promise<unknown> {
    const response = await fetch(`${url}${route}`, {
      method,
      headers: { ...this.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
      // Never followed: the headers (team secrets among them) go only to the servers the manifest names; a redirect is answered as an error.
      redirect: 'manual',
    });
    const text = await response.text();
    if (response.status === 503) throw new NotSent(`HTTP 503: ${quote(text)}`);
    const during = route.slice(1).split('?')[0];
    if (response.status === 404 && instanceId !== undefined) {
      throw new SandboxError('protocol', during, `${url}${route} does not know instance ${instanceId} (HTTP 404: ${quote(text)}): did the server restart, or is another server holding it?`, null, '');
    }
    if (!response.ok) throw new SandboxError('protocol', during, `${url}${route} answered HTTP ${response.status}: ${quote(text)}`, null, '');
    if (text === '') return {};
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new SandboxError('protocol', during, `${url}${route} answered with something that is not JSON: ${quote(text)}`, null, '');
    }
  }
}

/** The row's fields as /reset sends them: its `env_kwargs` object when it has one (OpenTinker's datasets), else the row. */
function rowFields(row: Json | undefined): Record<string, Json> {
  if (row === null || row === undefined || typeof row !== 'object' || Array.isArray(row)) return {};
  const kwargs = row.env_kwargs;
  if (kwargs && typeof kwargs === 'object' && !Array.isArray(kwargs)) return kwargs;
  return row;
}

function promptOf(row: Json | undefined, field: string): string {
  if (row === null || row === undefined || typeof row !== 'object' || Array.isArray(row)) return '';
  const value = row[field];
  return typeof value === 'string' ? value : '';
}

function quote(text: string): string {
  return text.length > QUOTED ? `${text.slice(0, QUOTED)}… (${text.length} characters)` : text;
}

function describeFailure(e: unknown): string {
  if (e instanceof NotSent) return e.message;
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return `cannot connect (${cause.code})`;
  // undici's "fetch failed" says little; its cause says why (a port fetch refuses, a bad URL).
  return cause?.message ? `${(e as Error).message}: ${cause.message}` : (e as Error).message;
}

/** A failure before the request went out: undici says "fetch failed" with the system error as cause. */
function notSent(e: unknown): boolean {
  const code = (e as { cause?: { code?: string } }).cause?.code ?? '';
  return NOT_SENT.has(code);
}
