/**
 * An environment served over HTTP with OpenTinker's game-server protocol, so that an environment
 * written in another language plugs in:
 *
 *   POST /reset    { instance_id, job_id, seed, task_seed, row? } -> { observation, system_prompt? }
 *   POST /step     { instance_id, job_id, action }               -> { observation, reward, done, info }
 *   POST /finalize { instance_id, job_id }                        -> anything
 *   GET  /health                                                  -> 200
 *
 * Each call has a timeout and is retried on connection failures and 502/503/504. A `step` that
 * timed out is not retried: the server may have applied the action, and applying it twice would
 * corrupt the episode.
 */
import { z } from 'zod';
import { type EnvironmentHandle, type ResetRequest, type StepRequest } from './environment-handle';
import { SandboxError } from './sandbox/errors';
import { type ResetResponse, type StepResponse } from './sandbox/protocol';
import type { EnvironmentDescription } from '../../sdk/dry-run-report';
import { jsonObjectSchema } from '../../sdk/user-json';

export interface HttpEnvironmentOptions {
  /** e.g. http://127.0.0.1:8081 */
  baseUrl: string;
  /** Sent as job_id so one server can keep statistics per job (OpenTinker's multi-job isolation). */
  jobId?: string;
  name?: string;
  timeoutMs?: number;
  /** Extra attempts after the first. */
  retries?: number;
  retryDelayMs?: number;
}

const AGENT = 'agent';

const resetSchema = z.object({ observation: z.string(), system_prompt: z.string().nullish() });
const stepSchema = z.object({
  observation: z.string(),
  reward: z.number().refine(Number.isFinite, 'reward must be finite'),
  done: z.boolean(),
  info: jsonObjectSchema.nullish(),
});

class Retryable extends Error {}

export class HttpEnvironment implements EnvironmentHandle {
  readonly description: EnvironmentDescription;
  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly jobId: string;

  private constructor(options: HttpEnvironmentOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = options.retries ?? 2;
    this.retryDelayMs = options.retryDelayMs ?? 200;
    this.jobId = options.jobId ?? 'default';
    this.description = {
      kind: 'multi-turn',
      name: options.name ?? `http:${this.base}`,
      description: `served by ${this.base}`,
      agents: [AGENT],
      context: 'full',
      rowSchema: null,
      tools: [],
      toolPrompt: '',
      bots: [],
      definedAt: '',
    };
  }

  /** Checks /health first, so that a service that is down is reported before any episode starts. */
  static async connect(options: HttpEnvironmentOptions): Promise<HttpEnvironment> {
    const env = new HttpEnvironment(options);
    await env.request('GET', '/health', undefined, 'health', true);
    return env;
  }

  async reset(request: ResetRequest): Promise<ResetResponse> {
    const body = { instance_id: request.episodeId, job_id: this.jobId, seed: request.seed, task_seed: request.taskSeed, ...(request.row !== undefined ? { row: request.row } : {}) };
    const r = this.parse(resetSchema, await this.request('POST', '/reset', body, 'reset', true), 'reset');
    return { turn: { agent: AGENT, observation: r.observation }, systemPrompts: { [AGENT]: r.system_prompt ?? '' }, task: request.row ?? null };
  }

  async step(request: StepRequest): Promise<StepResponse> {
    const body = { instance_id: request.episodeId, job_id: this.jobId, action: request.action };
    const r = this.parse(stepSchema, await this.request('POST', '/step', body, 'step', false), 'step');
    const info = JSON.parse(JSON.stringify(r.info ?? {})) as StepResponse['info'];
    return { rewards: { [AGENT]: r.reward }, terminated: r.done, truncated: false, info, next: r.done ? null : { agent: AGENT, observation: r.observation }, tool: null };
  }

  async bot(): Promise<string> {
    throw new SandboxError('protocol', 'bot', 'HTTP environments have no bots', null, '');
  }

  async close(episodeId: string): Promise<void> {
    await this.request('POST', '/finalize', { instance_id: episodeId, job_id: this.jobId }, 'finalize', true);
  }

  async dispose(): Promise<void> {}

  private parse<T>(schema: z.ZodType<T>, value: unknown, during: string): T {
    const r = schema.safeParse(value);
    if (r.success) return r.data;
    const problem = r.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
    throw new SandboxError('protocol', during, `${this.base}/${during} answered outside the protocol: ${problem}`, null, '');
  }

  private async request(method: 'GET' | 'POST', path: string, body: unknown, during: string, retryTimeouts: boolean): Promise<unknown> {
    const url = `${this.base}${path}`;
    let last = '';
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, this.retryDelayMs * attempt));
      try {
        return await this.once(method, url, body);
      } catch (e) {
        if (e instanceof SandboxError) throw e;
        const timedOut = (e as Error).name === 'TimeoutError';
        const code = (e as { cause?: { code?: string } }).cause?.code;
        last = timedOut ? `no answer within ${this.timeoutMs} ms` : code ? `cannot connect (${code})` : (e as Error).message;
        if (timedOut && !retryTimeouts) break;
        if (!(e instanceof Retryable) && !timedOut && !isConnectionError(e)) break;
      }
    }
    const attempts = this.retries + 1;
    throw new SandboxError('unavailable', during, `environment service ${url} is unavailable: ${last} (tried up to ${attempts} times)`, null, '');
  }

  private async once(method: string, url: string, body: unknown): Promise<unknown> {
    const response = await fetch(url, {
      method,
      headers: body === undefined ? undefined : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await response.text();
    if (response.status === 502 || response.status === 503 || response.status === 504) throw new Retryable(`HTTP ${response.status}`);
    if (!response.ok) {
      throw new SandboxError('protocol', new URL(url).pathname.slice(1), `${url} answered HTTP ${response.status}: ${text.slice(0, 300)}`, null, '');
    }
    if (text === '') return {};
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new SandboxError('protocol', new URL(url).pathname.slice(1), `${url} answered with something that is not JSON: ${text.slice(0, 100)}`, null, '');
    }
  }
}

function isConnectionError(e: unknown): boolean {
  // undici reports network failures as "fetch failed" with the system error as cause.
  const cause = (e as { cause?: { code?: string } }).cause;
  return (e as Error).message === 'fetch failed' || ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET'].includes(cause?.code ?? '');
}
