/**
 * The driver: bundled with the user's code and run inside QuickJS. It keeps the episodes of this
 * sandbox, calls the user's functions, runs tool calls, and checks every value the user returns
 * before it leaves as JSON. The host re-validates: code in the sandbox can replace anything here.
 */
import { Rng, hash32 } from '../../../sdk/environment/rng';
import { type Json, validateValue } from '../../../sdk/environment/schema';
import { describeTools, formatToolResult, parseToolCall } from '../../../sdk/environment/tools';
import { type AgentTurn, type EnvironmentDefinition, type EpisodeContext } from '../../../sdk/environment/define';
import { REWARD_TESTS_FILE, type RewardTests } from '../../../sdk/environment/tests';
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
  type SymmetriesRequest,
  type SymmetriesResponse,
} from './protocol';
import type { EnvironmentDescription } from '../../../sdk/dry-run-report';

/** The user returned something the runtime cannot use (NaN reward, non-string observation…). */
class InvalidOutput extends Error {
  override name = 'InvalidOutput';
  /** A stack line at the user's code that returned the value (returnSite), when known. */
  at: string | null = null;
}

/** Taken before anything else can replace it: source texts locate a user's return statements. */
const functionSource = Function.prototype.toString;

interface Episode {
  ctx: EpisodeContext;
  turn: AgentTurn;
}

let env: EnvironmentDefinition;
/** The module of tests.ts, when the bundle was compiled with it (reward tests). */
let testsModule: { default?: unknown } | undefined;
const episodes = new Map<string, Episode>();
let during = 'load';

export function installDriver(userModule: { default?: unknown }, tests?: { default?: unknown }): void {
  testsModule = tests;
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
    ...(env.symmetries ? { symmetries: true } : {}),
    definedAt: env.definedAt,
  }),

  reset: (req: ResetRequest): ResetResponse => {
    let task: unknown;
    if (env.rowSchema) {
      const problems = validateValue(env.rowSchema, req.row, 'row');
      if (problems.length > 0) throw new InvalidOutput(`the dataset row does not match rowSchema: ${problems.join('; ')}`);
      task = req.row;
    } else if (req.task !== undefined) {
      task = req.task;
    } else {
      // A stream distinct from the episode's even when the two seeds are equal.
      const taskRng = new Rng(hash32(req.taskSeed) ^ 0x2545f491);
      task = user('sample', taskRng, env.origins.sample, () => env.sample!(taskRng), (t) => (toJson(t, 'the task'), t));
    }
    const ctx: EpisodeContext = { seed: req.seed, rng: new Rng(req.seed), task, row: env.rowSchema ? task : undefined, state: undefined };
    const turn = user('reset', ctx.rng, env.origins.reset, () => env.reset(ctx), (t) => checkTurn(t, 'reset'));
    const systemPrompts: Record<string, string> = {};
    for (const agent of env.agents) {
      systemPrompts[agent] = user('systemPrompt', ctx.rng, env.origins.systemPrompt, () => env.systemPrompt(agent, task), (p) => checkString(p, 'systemPrompt'));
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
    const result = user('step', episode.ctx.rng, env.origins.step, () => env.step(req.action, episode.ctx), (raw) => checkStep(raw, agent));
    if (result.next) episode.turn = result.next;
    else episodes.delete(req.episodeId);
    return result;
  },

  bot: (req: BotRequest): { action: string } => {
    const episode = getEpisode(req.episodeId);
    const bot = env.bots[req.bot];
    if (!bot) throw new InvalidOutput(`no bot named "${req.bot}"; this environment has: ${Object.keys(env.bots).join(', ') || 'none'}`);
    const { agent, observation } = episode.turn;
    const name = `bot "${req.bot}"`;
    return { action: user(name, episode.ctx.rng, bot, () => bot(observation, episode.ctx, agent), (a) => checkString(a, name)) };
  },

  symmetries: (req: SymmetriesRequest): SymmetriesResponse => {
    const symmetries = env.symmetries;
    // A symmetry is a function of the turn: Math.random in it gets a fixed stream.
    const symmetryRng = new Rng(0x5e77);
    if (!symmetries) throw new InvalidOutput('this environment defines no symmetries');
    let count = -1;
    const turns = req.turns.map((turn) =>
      user('symmetries', symmetryRng, symmetries, () => symmetries({ agent: turn.agent, observation: turn.observation, action: turn.action }), (raw) => {
        if (!Array.isArray(raw) || raw.length === 0) throw new InvalidOutput(`symmetries must return a non-empty array of { observation, action }, got ${safeString(raw)}`);
        if (count !== -1 && raw.length !== count) throw new InvalidOutput(`symmetries returned ${raw.length} turns for one turn and ${count} for another: the k-th entry must be the same symmetry for every turn`);
        count = raw.length;
        return raw.map((t: unknown, k: number) => {
          const v = t as { observation?: unknown; action?: unknown } | null;
          if (typeof v !== 'object' || v === null || typeof v.observation !== 'string' || typeof v.action !== 'string') {
            throw new InvalidOutput(`symmetries: entry ${k} must be { observation: string, action: string }, got ${safeString(t)}`);
          }
          return { observation: v.observation, action: v.action };
        });
      }),
    );
    return { turns };
  },

  close: (req: { episodeId: string }) => {
    episodes.delete(req.episodeId);
    return { open: episodes.size };
  },

  tests: () => {
    during = 'tests';
    const defined = testsModule?.default as Partial<RewardTests> | undefined;
    if (!defined || defined.__whetstone !== 'reward-tests' || !Array.isArray(defined.cases)) {
      throw new InvalidOutput(`${REWARD_TESTS_FILE} must \`export default defineRewardTests([...])\``);
    }
    return { cases: defined.cases.map((c, i) => toJson(c, `reward test ${i + 1}`)) };
  },
};

function runTool(episode: Episode, call: ReturnType<typeof parseToolCall>): StepResponse {
  const agent = episode.turn.agent;
  let observation: string;
  let tool: StepResponse['tool'];
  if (call.kind === 'call') {
    const definition = env.tools.find((t) => t.name === call.name)!;
    try {
      const name = `tool "${call.name}"`;
      const value = user(name, episode.ctx.rng, definition.run, () => definition.run(call.args, episode.ctx), (v) => toJson(v ?? null, `the result of ${name}`));
      observation = formatToolResult(value);
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
        stack: error instanceof InvalidOutput ? (error.at ?? env?.definedAt ?? '') : (error.stack ?? ''),
        during,
        invalidOutput: error instanceof InvalidOutput,
      },
      logs: drainLogs(),
    };
  }
  return JSON.stringify(response);
}

/**
 * Runs one user function with Math.random pointed at the episode's generator, then `check`s what
 * it returned. A value the runtime cannot use is reported where `origin` (the user's own function
 * behind the call) returned it.
 */
function user<T, R>(name: string, rng: Rng, origin: unknown, call: () => T, check: (value: T) => R): R {
  during = name;
  setRandomSource(() => rng.next());
  const value = call();
  try {
    if (value instanceof Promise) throw new InvalidOutput(`${name} returned a Promise; environment functions must be synchronous`);
    return check(value);
  } catch (e) {
    if (e instanceof InvalidOutput && e.at === null) e.at = returnSite(origin, name, value === undefined);
    throw e;
  }
}

/**
 * Where a user function returned its value, as a QuickJS stack line that the host maps to the
 * user's TypeScript (source-map.ts). QuickJS knows each function's position in the bundle and its
 * source text: the position is that of the function's only `return` statement when it has one
 * and no nested function whose returns could be confused with it (and did not fall off its end,
 * returning undefined), else that of the function itself. Null for what is not a function (a
 * constant system prompt): the definition is reported then.
 */
function returnSite(origin: unknown, name: string, returnedUndefined: boolean): string | null {
  if (typeof origin !== 'function') return null;
  const { fileName, lineNumber, columnNumber } = origin as unknown as Record<string, unknown>;
  if (typeof fileName !== 'string' || typeof lineNumber !== 'number' || typeof columnNumber !== 'number') return null;
  let text = '';
  try {
    text = functionSource.call(origin);
  } catch {
    // Not every function has a source text (bound and native ones): the function's position then.
  }
  const offset = returnedUndefined ? 0 : soleReturn(text);
  const lines = text.slice(0, offset).split('\n');
  const line = lineNumber + lines.length - 1;
  const column = lines.length === 1 ? columnNumber + offset : lines[lines.length - 1].length + 1;
  return `    at ${name} (${fileName}:${line}:${column})`;
}

/**
 * The offset of a function's only `return` keyword in its source text, or 0 when it has none or
 * several, or contains another function. Strings, template literals and comments are skipped;
 * a regular expression literal with a quote in it can mislead the scan, which costs only the
 * precision of the position (the function's own is given then).
 */
function soleReturn(text: string): number {
  let returns = 0;
  let at = 0;
  let functions = 0;
  let arrowHead = true; // until the body starts, an `=>` is the function's own (an arrow function)
  let parens = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"' || c === "'" || c === '`') {
      for (i++; i < text.length && text[i] !== c; i++) if (text[i] === '\\') i++;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 1;
    } else if (c === '(') parens++;
    else if (c === ')') parens--;
    else if (c === '{' && parens === 0) arrowHead = false;
    else if (c === '=' && text[i + 1] === '>') {
      if (!(arrowHead && parens === 0)) functions++;
      arrowHead = false;
      i++;
    } else if (/[A-Za-z_$]/.test(c) && (i === 0 || !/[\w$.]/.test(text[i - 1]))) {
      let j = i;
      while (j < text.length && /[\w$]/.test(text[j])) j++;
      const word = text.slice(i, j);
      if (word === 'return') {
        returns++;
        at = i;
      } else if ((word === 'function' || word === 'class') && !/^\s*(async\s*)?$/.test(text.slice(0, i))) functions++;
      i = j - 1;
    }
  }
  return returns === 1 && functions === 0 ? at : 0;
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
  const turn: AgentTurnMessage = { agent: t.agent, observation: checkString(t.observation, `${fn}'s observation`) };
  if (t.actions !== undefined) {
    if (!Array.isArray(t.actions) || t.actions.length === 0 || t.actions.some((a) => typeof a !== 'string' || a === '')) {
      const got = !Array.isArray(t.actions) ? safeString(t.actions) : t.actions.length === 0 ? 'an empty array' : 'an array with a value that is not a non-empty string';
      throw new InvalidOutput(`${fn}'s actions are ${got}; expected a non-empty array of non-empty strings (or no actions for free text)`);
    }
    turn.actions = [...(t.actions as string[])];
  }
  return turn;
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
