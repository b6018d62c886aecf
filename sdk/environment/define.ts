import { type Rng } from './rng';
import { type Json, type ObjectSchema } from './schema';
import { type ToolDefinition } from './tools';

/** What every callback of an episode receives. One context per episode. */
export interface EpisodeContext<Task = unknown, State = unknown> {
  /** The episode's seed; `rng` starts from it. */
  readonly seed: number;
  /** The only source of randomness an environment should use (Math.random is seeded from it too). */
  readonly rng: Rng;
  /** The task: the value `sample(rng)` returned, or the dataset row. */
  readonly task: Task;
  /** The dataset row, for data-dependent environments (the same object as `task`); undefined otherwise. */
  readonly row: Task | undefined;
  /** Per-episode state the environment owns: set it in `reset`, read and change it in `step`. */
  state: State;
}

/** What `step` returns, as in Gymnasium. */
export interface StepResult {
  /** The text the agent reads next (ignored when the episode ends). */
  observation: string;
  /** A finite number. */
  reward: number;
  /** The episode reached a natural end (solved, won, lost). */
  terminated: boolean;
  /** The episode was cut short (a step limit of the environment's own). */
  truncated?: boolean;
  /** JSON-serialisable details, shown in rollouts and aggregated in metrics (undefined fields are dropped). */
  info?: Record<string, Json | undefined>;
}

/**
 * How the agent's prompt grows over turns: `full` keeps the whole conversation, `latest` shows
 * only the system prompt and the latest observation (for environments whose observation is the
 * whole state, such as a board).
 */
export type ContextPolicy = 'full' | 'latest';

/** A scripted player provided by the environment: an opponent in games, a stand-in policy in dry runs. */
export type Bot<Task = unknown, State = unknown, Agent extends string = string> = (
  observation: string,
  ctx: EpisodeContext<Task, State>,
  agent: Agent,
) => string;

/** Data-free environments generate their tasks. */
export interface GeneratedTasks<Task> {
  /** Generates one task. Called once per group of episodes that share it (GRPO groups). */
  sample(rng: Rng): Task;
  rowSchema?: undefined;
}

/** Data-dependent environments read rows of a JSONL dataset, validated against `rowSchema`. */
export interface DatasetTasks {
  rowSchema: ObjectSchema;
  sample?: undefined;
}

export type TaskSource<Task> = GeneratedTasks<Task> | DatasetTasks;

/**
 * What the system prompt says about the tools: `full` appends a paragraph listing each tool, its
 * arguments and the call syntax (`describeTools`); `none` appends nothing, for a system prompt
 * that explains the tools itself or a model trained from scratch that learns the calls from
 * demonstrations (the paragraph's ~250 constant characters slow its learning several-fold).
 */
export type ToolPromptStyle = 'full' | 'none';

/** One turn as a symmetry sees it: who acted, what it read, what it wrote. */
export interface SymmetricTurn {
  agent: string;
  observation: string;
  action: string;
}

/**
 * An environment's symmetries, for augmenting warm-start demonstrations (`warmStart.augment:
 * "symmetries"`): the turn as it reads in each symmetric position — a square board's rotations and
 * reflections — the turn itself first. The k-th entry of every call must be the same symmetry (a
 * `full`-context episode is rebuilt turn by turn from them), each observation what the environment
 * shows in that position and each action what a player writes there.
 */
export type Symmetries = (turn: SymmetricTurn) => { observation: string; action: string }[];

interface CommonSpec<Task, State> {
  /** Short identifier, e.g. "gomoku". */
  name: string;
  description?: string;
  context?: ContextPolicy;
  /** Functions the agent may call from its text (see `ToolDefinition` for the syntax). */
  tools?: ToolDefinition<EpisodeContext<Task, State>>[];
  /** What the system prompt says about `tools` (default `full`). */
  toolPrompt?: ToolPromptStyle;
  /** Symmetries of observations and actions, for warm-start augmentation (see `Symmetries`). */
  symmetries?: Symmetries;
}

/** A single-agent environment: Gymnasium's reset/step over text. */
export type EnvironmentSpec<Task, State> = CommonSpec<Task, State> &
  TaskSource<Task> & {
    systemPrompt: string | ((task: Task) => string);
    /** Starts an episode; returns the first observation. */
    reset(ctx: EpisodeContext<Task, State>): string;
    /** Applies the agent's text. */
    step(action: string, ctx: EpisodeContext<Task, State>): StepResult;
    bots?: Record<string, Bot<Task, State>>;
  };

/** The value a reward function returns: a number, or a number with details. */
export type RewardValue = number | { reward: number; info?: Record<string, Json | undefined> };

/** The single-turn shorthand: a prompt per task and a reward over the completion. */
export type SingleTurnSpec<Task> = Omit<CommonSpec<Task, undefined>, 'tools' | 'toolPrompt' | 'context'> &
  TaskSource<Task> & {
    systemPrompt: string | ((task: Task) => string);
    /** The user message for a task. */
    prompt(task: Task, rng: Rng): string;
    /** Scores one completion. `row` is the dataset row, or the generated task. */
    reward(prompt: string, completion: string, row: Task): RewardValue;
    bots?: Record<string, Bot<Task, undefined>>;
  };

/** Whose turn it is and what that agent sees. */
export interface AgentTurn<Agent extends string = string> {
  agent: Agent;
  observation: string;
  /**
   * The actions this agent may take now, when they are a closed set (a board game's legal moves):
   * the policy is then constrained to write exactly one of them (legal-move masking), so it never
   * loses a game to a malformed or illegal move. Leave it out for free text.
   */
  actions?: string[];
}

/** What a multi-agent `step` returns. Rewards go to the agents named; missing ones get 0. */
export interface MultiAgentStepResult<Agent extends string = string> {
  rewards: Partial<Record<Agent, number>>;
  terminated: boolean;
  truncated?: boolean;
  info?: Record<string, Json | undefined>;
  /** The next agent to act and its observation; required unless the episode ended. */
  next?: AgentTurn<Agent>;
}

/** A turn-based multi-agent environment (PettingZoo's agent-iteration model). */
export type MultiAgentSpec<Task, State, Agent extends string> = CommonSpec<Task, State> &
  TaskSource<Task> & {
    agents: readonly Agent[];
    systemPrompt: string | ((agent: Agent, task: Task) => string);
    /** Starts an episode; returns the first agent to act and its observation. */
    reset(ctx: EpisodeContext<Task, State>): AgentTurn<Agent>;
    /** Applies the current agent's text. */
    step(action: string, ctx: EpisodeContext<Task, State>): MultiAgentStepResult<Agent>;
    bots?: Record<string, Bot<Task, State, Agent>>;
  };

export type EnvironmentKind = 'single-turn' | 'multi-turn' | 'multi-agent';

/**
 * Every kind of environment, normalised to the multi-agent shape the runtime drives (a
 * single-agent environment has one agent, "agent"). Produced by the define functions.
 */
export interface EnvironmentDefinition {
  readonly __whetstone: 'environment';
  readonly kind: EnvironmentKind;
  readonly name: string;
  readonly description: string;
  readonly agents: readonly string[];
  readonly context: ContextPolicy;
  readonly rowSchema: ObjectSchema | undefined;
  readonly tools: readonly ToolDefinition<EpisodeContext>[];
  readonly toolPrompt: ToolPromptStyle;
  readonly bots: Readonly<Record<string, Bot>>;
  readonly symmetries: Symmetries | undefined;
  /** The stack where the define function was called: errors point at the user's definition. */
  readonly definedAt: string;
  /**
   * The user's own function behind each call the runtime makes (reset, step, systemPrompt,
   * sample): a value it returns that the runtime cannot use is reported where it returns it.
   */
  readonly origins: Readonly<Partial<Record<'reset' | 'step' | 'systemPrompt' | 'sample', unknown>>>;
  systemPrompt(agent: string, task: unknown): string;
  sample: ((rng: Rng) => unknown) | undefined;
  reset(ctx: EpisodeContext): AgentTurn;
  step(action: string, ctx: EpisodeContext): MultiAgentStepResult;
}

export const SINGLE_AGENT = 'agent';

/** Defines a single-agent environment (multi-turn, or single-turn if `step` always terminates). */
export function defineEnvironment<Task = undefined, State = undefined>(spec: EnvironmentSpec<Task, State>): EnvironmentDefinition {
  const env = spec as EnvironmentSpec<unknown, unknown>;
  return {
    ...common(spec, 'multi-turn', [SINGLE_AGENT], new Error().stack ?? ''),
    origins: { reset: env.reset, step: env.step, systemPrompt: env.systemPrompt, sample: env.sample },
    bots: (env.bots ?? {}) as Record<string, Bot>,
    systemPrompt: (_agent, task) => (typeof env.systemPrompt === 'function' ? env.systemPrompt(task) : env.systemPrompt),
    reset: (ctx) => ({ agent: SINGLE_AGENT, observation: env.reset(ctx) }),
    step: (action, ctx) => {
      const r = env.step(action, ctx);
      // Not an object: passed on as it is, for the driver to say what step returned.
      if (typeof r !== 'object' || r === null) return r;
      // Read fields explicitly: the result is user data and is validated by the driver.
      const ended = r.terminated === true || r.truncated === true;
      return {
        rewards: { [SINGLE_AGENT]: r.reward },
        terminated: r.terminated,
        truncated: r.truncated ?? false,
        info: r.info,
        next: ended ? undefined : { agent: SINGLE_AGENT, observation: r.observation },
      };
    },
  };
}

/** Defines a single-turn environment from a prompt and a reward function. */
export function defineSingleTurn<Task = undefined>(spec: SingleTurnSpec<Task>): EnvironmentDefinition {
  const env = spec as SingleTurnSpec<unknown>;
  return {
    ...common(spec, 'single-turn', [SINGLE_AGENT], new Error().stack ?? ''),
    // The prompt is the first observation; the reward is what step returns.
    origins: { reset: env.prompt, step: env.reward, systemPrompt: env.systemPrompt, sample: env.sample },
    context: 'full',
    tools: [],
    bots: (env.bots ?? {}) as Record<string, Bot>,
    systemPrompt: (_agent, task) => (typeof env.systemPrompt === 'function' ? env.systemPrompt(task) : env.systemPrompt),
    reset: (ctx) => {
      const prompt = env.prompt(ctx.task, ctx.rng);
      ctx.state = prompt;
      return { agent: SINGLE_AGENT, observation: prompt };
    },
    step: (completion, ctx) => {
      const value = env.reward(ctx.state as string, completion, ctx.task);
      const { reward, info } = typeof value === 'object' && value !== null ? value : { reward: value, info: undefined };
      return { rewards: { [SINGLE_AGENT]: reward }, terminated: true, truncated: false, info };
    },
  };
}

/** Defines a turn-based multi-agent environment. */
export function defineMultiAgentEnvironment<Task = undefined, State = undefined, Agent extends string = string>(
  spec: MultiAgentSpec<Task, State, Agent>,
): EnvironmentDefinition {
  const env = spec as unknown as MultiAgentSpec<unknown, unknown, string>;
  if (!Array.isArray(env.agents) || env.agents.length < 1) throw new TypeError('defineMultiAgentEnvironment: agents must name at least one agent');
  return {
    ...common(spec, 'multi-agent', env.agents.slice(), new Error().stack ?? ''),
    origins: { reset: env.reset, step: env.step, systemPrompt: env.systemPrompt, sample: env.sample },
    bots: (env.bots ?? {}) as Record<string, Bot>,
    systemPrompt: (agent, task) => (typeof env.systemPrompt === 'function' ? env.systemPrompt(agent, task) : env.systemPrompt),
    reset: (ctx) => env.reset(ctx),
    step: (action, ctx) => env.step(action, ctx),
  };
}

function common<Task, State>(
  spec: CommonSpec<Task, State> & TaskSource<Task>,
  kind: EnvironmentKind,
  agents: string[],
  definedAt: string,
) {
  if (typeof spec?.name !== 'string' || spec.name === '') throw new TypeError('an environment needs a name');
  const source = spec as { sample?: unknown; rowSchema?: unknown };
  if (!source.sample && !source.rowSchema) throw new TypeError(`environment "${spec.name}": give either sample(rng) or rowSchema`);
  return {
    __whetstone: 'environment' as const,
    kind,
    name: spec.name,
    description: spec.description ?? '',
    agents,
    context: spec.context ?? 'full',
    rowSchema: spec.rowSchema,
    tools: (spec.tools ?? []) as ToolDefinition<EpisodeContext>[],
    toolPrompt: spec.toolPrompt ?? 'full',
    symmetries: spec.symmetries,
    definedAt,
    sample: spec.sample as ((rng: Rng) => unknown) | undefined,
  };
}
