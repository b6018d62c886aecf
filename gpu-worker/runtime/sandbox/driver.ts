/**
 * The driver: bundled with the user's code and run inside QuickJS. It keeps the episodes of this
 * sandbox, calls the user's functions, runs tool calls, and checks every value the user returns
 * before it leaves as JSON. The host re-validates: code in the sandbox can replace anything here.
 */
import { Rng, hash32 } from '../../../sdk/environment/rng';
import { type Json, validateValue } from '../../../sdk/environment/schema';
import { describeTools, formatToolResult, parseToolCall } from '../../../sdk/environment/tools';
import { type AgentTurn, type EnvironmentDefinition, type EpisodeContext } from '../../../sdk/environment/define';
import { drainLogs, setRandomSource } from './prelude';
import {
  DISPATCH_GLOBAL,
  type AgentTurnMessage,
  type BotRequest,
  type DriverResponse,
  type ResetRequest,
  type ResetResponse,
  type StepRequest,
  type StepResponse,
} from './protocol';
import type { EnvironmentDescription } from '../../../sdk/dry-run-report';

/** The user returned something the runtime cannot use (NaN reward, non-string observation…). */
class InvalidOutput extends Error {
  override name = 'InvalidOutput';
}

interface Episode {
  ctx: EpisodeContext;
  turn: AgentTurn;
}

let env: EnvironmentDefinition;
const episodes = new Map<string, Episode>();
let during = 'load';

export function installDriver(userModule: { default?: unknown }): void {
  const candidate = userModule.default as Partial<EnvironmentDefinition> | undefined;
  if (!candidate || candidate.__whetstone !== 'environment') {
    throw new TypeError(
      'the entry file must `export default` an environment made with defineEnvironment, defineSingleTurn or defineMultiAgentEnvironment',
    );
  }
  env = candidate as EnvironmentDefinition;
  (globalThis as Record<string, unknown>)[DISPATCH_GLOBAL] = dispatch;
}

const handlers: Record<string, (args: never) => unknown> = {
  describe: (): EnvironmentDescription => ({
    kind: env.kind,
    name: env.name,
    description: env.description,
    agents: env.agents.slice(),
    context: env.context,
    rowSchema: env.rowSchema ?? null,
    tools: env.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
    toolPrompt: env.toolPrompt === 'none' ? '' : describeTools(env.tools),
    bots: Object.keys(env.bots),
    definedAt: env.definedAt,
  }),

  reset: (req: ResetRequest): ResetResponse => {
    let task: unknown;
    if (env.rowSchema) {
      const problems = validateValue(env.rowSchema, req.row, 'row');
      if (problems.length > 0) throw new InvalidOutput(`the dataset row does not match rowSchema: ${problems.join('; ')}`);
      task = req.row;
    } else {
      // A stream distinct from the episode's even when the two seeds are equal.
      const taskRng = new Rng(hash32(req.taskSeed) ^ 0x2545f491);
      task = user('sample', taskRng, () => env.sample!(taskRng));
    }
    const ctx: EpisodeContext = { seed: req.seed, rng: new Rng(req.seed), task, row: env.rowSchema ? task : undefined, state: undefined };
    const turn = checkTurn(user('reset', ctx.rng, () => env.reset(ctx)), 'reset');
    const systemPrompts: Record<string, string> = {};
    for (const agent of env.agents) {
      systemPrompts[agent] = checkString(user('systemPrompt', ctx.rng, () => env.systemPrompt(agent, task)), 'systemPrompt');
    }
    episodes.set(req.episodeId, { ctx, turn });
    return { turn, systemPrompts, task: toJson(task, 'the task') };
  },

  step: (req: StepRequest): StepResponse => {
    const episode = getEpisode(req.episodeId);
    const agent = episode.turn.agent;
    if (env.tools.length > 0) {
      const call = parseToolCall(req.action, env.tools);
      if (call.kind !== 'none') return runTool(episode, call);
    }
    const raw = user('step', episode.ctx.rng, () => env.step(req.action, episode.ctx));
    const result = checkStep(raw, agent);
    if (result.next) episode.turn = result.next;
    else episodes.delete(req.episodeId);
    return result;
  },

  bot: (req: BotRequest): { action: string } => {
    const episode = getEpisode(req.episodeId);
    const bot = env.bots[req.bot];
    if (!bot) throw new InvalidOutput(`no bot named "${req.bot}"; this environment has: ${Object.keys(env.bots).join(', ') || 'none'}`);
    const { agent, observation } = episode.turn;
    return { action: checkString(user(`bot "${req.bot}"`, episode.ctx.rng, () => bot(observation, episode.ctx, agent)), `bot "${req.bot}"`) };
  },

  close: (req: { episodeId: string }) => {
    episodes.delete(req.episodeId);
    return { open: episodes.size };
  },
};

function runTool(episode: Episode, call: ReturnType<typeof parseToolCall>): StepResponse {
  const agent = episode.turn.agent;
  let observation: string;
  let tool: StepResponse['tool'];
  if (call.kind === 'call') {
    const definition = env.tools.find((t) => t.name === call.name)!;
    try {
      const value = user(`tool "${call.name}"`, episode.ctx.rng, () => definition.run(call.args, episode.ctx));
      observation = formatToolResult(toJson(value ?? null, `the result of tool "${call.name}"`));
      tool = { name: call.name, ok: true };
    } catch (e) {
      // A tool that throws reports an error to the agent, who may retry; it does not end the episode.
      if (e instanceof InvalidOutput) throw e;
      const message = e instanceof Error ? e.message : String(e);
      observation = formatToolResult({ error: message });
      tool = { name: call.name, ok: false, error: message };
    }
  } else {
    const problem = call.kind === 'malformed' ? call.problem : 'no call';
    observation = formatToolResult({ error: problem });
    tool = { name: null, ok: false, error: problem };
  }
  episode.turn = { agent, observation };
  return { rewards: zeroRewards(), terminated: false, truncated: false, info: {}, next: { agent, observation }, tool };
}

function dispatch(request: string): string {
  let response: DriverResponse;
  during = 'driver';
  let episodeId: string | undefined;
  try {
    const { method, args } = JSON.parse(request) as { method: string; args: never };
    episodeId = (args as { episodeId?: string } | undefined)?.episodeId;
    const handler = handlers[method];
    if (!handler) throw new TypeError(`unknown driver method ${method}`);
    response = { ok: true, value: handler(args) as Json, logs: drainLogs() };
  } catch (e) {
    // An episode whose call failed is over: its state may be half-updated.
    if (episodeId !== undefined) episodes.delete(episodeId);
    const error = e instanceof Error ? e : new Error(`a non-Error value was thrown: ${safeString(e)}`);
    response = {
      ok: false,
      error: {
        name: error.name,
        message: error.message,
        stack: error instanceof InvalidOutput ? env?.definedAt ?? '' : (error.stack ?? ''),
        during,
        invalidOutput: error instanceof InvalidOutput,
      },
      logs: drainLogs(),
    };
  }
  return JSON.stringify(response);
}

/** Runs one user function with Math.random pointed at the episode's generator. */
function user<T>(name: string, rng: Rng, fn: () => T): T {
  during = name;
  setRandomSource(() => rng.next());
  const value = fn();
  if (value instanceof Promise) throw new InvalidOutput(`${name} returned a Promise; environment functions must be synchronous`);
  return value;
}

function getEpisode(id: string): Episode {
  const episode = episodes.get(id);
  if (!episode) throw new InvalidOutput(`no open episode "${id}" (it ended or was never reset)`);
  return episode;
}

function zeroRewards(): Record<string, number> {
  const rewards: Record<string, number> = {};
  for (const agent of env.agents) rewards[agent] = 0;
  return rewards;
}

function checkStep(raw: unknown, actingAgent: string): StepResponse {
  if (typeof raw !== 'object' || raw === null) throw new InvalidOutput(`step returned ${safeString(raw)}; expected an object`);
  const r = raw as Record<string, unknown>;
  if (typeof r.terminated !== 'boolean') throw new InvalidOutput(`step returned terminated = ${safeString(r.terminated)}; expected true or false`);
  const truncated = r.truncated ?? false;
  if (typeof truncated !== 'boolean') throw new InvalidOutput(`step returned truncated = ${safeString(truncated)}; expected true or false`);
  const rewards = zeroRewards();
  const given = r.rewards;
  if (typeof given !== 'object' || given === null) throw new InvalidOutput('step returned no rewards');
  for (const [agent, value] of Object.entries(given as Record<string, unknown>)) {
    if (!(agent in rewards)) throw new InvalidOutput(`step gave a reward to unknown agent "${agent}"`);
    // An agent left out of `rewards` gets 0; one named with no value (a forgotten `reward`) is a mistake, not 0.
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      const who = env.agents.length > 1 ? ` for agent "${agent}"` : '';
      const hint = value === undefined ? ' (return reward: 0 for no reward)' : '';
      throw new InvalidOutput(`step returned reward ${safeString(value)}${who}; a reward must be a finite number${hint}`);
    }
    rewards[agent] = value;
  }
  const ended = r.terminated || truncated;
  const next = ended ? null : checkTurn(r.next, 'step', actingAgent);
  return { rewards, terminated: r.terminated, truncated, info: checkInfo(r.info), next, tool: null };
}

function checkTurn(raw: unknown, fn: string, _previous?: string): AgentTurnMessage {
  if (typeof raw !== 'object' || raw === null) throw new InvalidOutput(`${fn} returned no next turn; expected { agent, observation }`);
  const t = raw as Record<string, unknown>;
  if (typeof t.agent !== 'string' || !env.agents.includes(t.agent)) {
    throw new InvalidOutput(`${fn} named agent ${safeString(t.agent)}; expected one of ${env.agents.join(', ')}`);
  }
  return { agent: t.agent, observation: checkString(t.observation, `${fn}'s observation`) };
}

function checkString(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new InvalidOutput(`${what} is ${safeString(value)}; expected a string`);
  return value;
}

function checkInfo(info: unknown): Record<string, Json> {
  if (info === undefined || info === null) return {};
  if (typeof info !== 'object' || Array.isArray(info)) throw new InvalidOutput(`step returned info = ${safeString(info)}; expected an object`);
  return toJson(info, 'info') as Record<string, Json>;
}

/** Round-trips through JSON and rejects values that would change on the way (NaN, functions, cycles). */
function toJson(value: unknown, what: string): Json {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'number' && !Number.isFinite(v)) throw new InvalidOutput(`${what} contains ${v}, which JSON cannot carry`);
      if (typeof v === 'function' || typeof v === 'symbol' || typeof v === 'bigint') {
        throw new InvalidOutput(`${what} contains a ${typeof v}, which JSON cannot carry`);
      }
      return v;
    });
  } catch (e) {
    if (e instanceof InvalidOutput) throw e;
    throw new InvalidOutput(`${what} cannot be sent as JSON: ${(e as Error).message}`);
  }
  return text === undefined ? null : (JSON.parse(text) as Json);
}

function safeString(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
