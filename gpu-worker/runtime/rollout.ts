/**
 * The rollout state machine, for a batch of episodes at once:
 *
 *   PENDING ─reset→ GENERATING ─policy writes→ INTERACTING ─environment answers→ GENERATING … → TERMINATED
 *
 * Every episode in GENERATING is sampled together with the others that use the same policy. Each
 * learning agent's token sequence carries a loss mask: 1 on the tokens its policy generated, 0 on
 * the system prompt, observations, tool results and the separators the runtime inserts. Rewards
 * are placed on the last trainable token of the turn they answer; per-turn rewards are kept.
 *
 * Context policy (chosen by the environment): `full` keeps the whole conversation in one sequence
 * per agent; `latest` prompts each turn with the system prompt and the latest observation only,
 * giving one sequence per turn whose reward is the return from that turn on.
 */
import { type Sequence } from '../engine/batch';
import { type Json } from '../../sdk/environment/schema';
import { TOOL_CALL_CLOSE } from '../../sdk/environment/tools';
import { type EnvironmentHandle } from './environment-handle';
import { SandboxError } from './sandbox/errors';
import { type Conversation } from '../engine/tokenizer';
import { type Policy, type SampleResult, type Tokenizer } from './policy';
import { agentSystemPrompt, type SandboxErrorJson, type ToolCallRecord } from '../../sdk/dry-run-report';

export type EpisodeState = 'PENDING' | 'GENERATING' | 'INTERACTING' | 'TERMINATED';

export type RolloutEndReason = 'terminated' | 'truncated' | 'max-turns' | 'max-tokens' | 'context' | 'error';

/** Who plays a seat: a policy (learning or not) or one of the environment's bots. */
export type Player = { kind: 'policy'; policy: string; learn: boolean } | { kind: 'bot'; bot: string };

export interface EpisodeSpec {
  episodeId: string;
  /** GRPO group: episodes of one task share it. */
  group: string;
  seed: number;
  taskSeed: number;
  row?: Json;
  players: Record<string, Player>;
}

export interface RolloutConfig {
  maxTurns: number;
  maxTokensPerTurn: number;
  maxResponseTokens: number;
  temperature: number;
  /** The model's context length: a prompt that cannot fit another turn ends the episode. */
  contextLength: number;
  /** Overrides the environment's context policy. */
  context?: 'full' | 'latest';
  /**
   * Constrain policies to the legal actions an environment offers with a turn (default true); off,
   * a policy writes freely and the environment judges it (how legal its own choices are).
   */
  maskActions?: boolean;
  /** Extra stop strings; `</tool_call>` is added when the environment has tools. */
  stop?: string[];
  seed: number;
}

export interface Move {
  agent: string;
  /** The raw text the player wrote (the model's text, or the bot's). */
  text: string;
  byBot: boolean;
  observation: string;
  rewards: Record<string, number>;
  info: Record<string, Json>;
  tool: ToolCallRecord | null;
  /** Whether the text was one of the turn's legal actions; null when the environment offered none. */
  legal: boolean | null;
}

export interface AgentTrajectory {
  agent: string;
  policy: string | null;
  learn: boolean;
  /** Training sequences: one (full context) or one per turn (latest). */
  sequences: Sequence[];
  /** Log-probabilities of the generated tokens, aligned with each sequence (0 where the mask is 0). */
  logprobs: number[][];
  turnRewards: number[];
  totalReward: number;
  turns: number;
  responseTokens: number;
}

export interface EpisodeRollout {
  episodeId: string;
  group: string;
  state: EpisodeState;
  endReason: RolloutEndReason;
  error: SandboxErrorJson | null;
  task: Json;
  agents: Record<string, AgentTrajectory>;
  /** The match record: every move in order, who played it, the raw text and the result. */
  moves: Move[];
  finalInfo: Record<string, Json>;
}

interface Track {
  traj: AgentTrajectory;
  system: string;
  /** Full mode: the growing sequence, and its conversation (null before the first turn). */
  tokens: number[];
  conversation: Conversation | null;
  mask: number[];
  rewards: number[];
  logprobs: number[];
  /** Index of the last trainable token (full) or of the last turn's sequence (latest). */
  lastTrainable: number;
  pendingReward: number;
  /** Latest mode: rewards per turn, turned into returns-to-go at the end. */
  turnSequenceRewards: number[];
}

interface Live {
  spec: EpisodeSpec;
  out: EpisodeRollout;
  tracks: Record<string, Track>;
  agent: string;
  observation: string;
  observationRole: 'user' | 'tool';
  /** The legal actions of this turn, when the environment names them: the policy writes one of them. */
  actions: string[] | undefined;
  /** The prompt sent for the current generation (latest mode needs it to build the sequence). */
  prompt: number[];
}

export async function runRollouts(
  env: EnvironmentHandle,
  tokenizer: Tokenizer,
  policies: Record<string, Policy>,
  specs: EpisodeSpec[],
  config: RolloutConfig,
): Promise<EpisodeRollout[]> {
  const context = config.context ?? env.description.context;
  const stop = [...(config.stop ?? []), ...(env.description.tools.length > 0 ? [TOOL_CALL_CLOSE] : [])];
  const toolPrompt = env.description.toolPrompt;

  // PENDING → reset.
  const live: Live[] = [];
  const finished: EpisodeRollout[] = [];
  await Promise.all(
    specs.map(async (spec) => {
      const out: EpisodeRollout = { episodeId: spec.episodeId, group: spec.group, state: 'PENDING', endReason: 'error', error: null, task: null, agents: {}, moves: [], finalInfo: {} };
      try {
        const reset = await env.reset({ episodeId: spec.episodeId, seed: spec.seed, taskSeed: spec.taskSeed, row: spec.row });
        out.task = reset.task;
        const tracks: Record<string, Track> = {};
        for (const agent of env.description.agents) {
          const player = spec.players[agent];
          if (!player) throw new Error(`episode ${spec.episodeId}: no player for agent "${agent}"`);
          const system = agentSystemPrompt(reset.systemPrompts[agent] ?? '', toolPrompt);
          const traj: AgentTrajectory = {
            agent,
            policy: player.kind === 'policy' ? player.policy : null,
            learn: player.kind === 'policy' && player.learn,
            sequences: [],
            logprobs: [],
            turnRewards: [],
            totalReward: 0,
            turns: 0,
            responseTokens: 0,
          };
          tracks[agent] = { traj, system, tokens: [], conversation: null, mask: [], rewards: [], logprobs: [], lastTrainable: -1, pendingReward: 0, turnSequenceRewards: [] };
          out.agents[agent] = traj;
        }
        out.state = 'GENERATING';
        live.push({ spec, out, tracks, agent: reset.turn.agent, observation: reset.turn.observation, observationRole: 'user', actions: reset.turn.actions, prompt: [] });
      } catch (e) {
        fail(out, e);
        finished.push(out);
      }
    }),
  );

  let round = 0;
  while (live.length > 0) {
    // Bots act inside INTERACTING; only policy turns are generated.
    const byPolicy = new Map<string, Live[]>();
    for (const ep of live) {
      const player = ep.spec.players[ep.agent];
      const track = ep.tracks[ep.agent];
      if (track.traj.turns >= config.maxTurns) {
        end(ep, 'max-turns');
        continue;
      }
      if (player.kind === 'bot') continue;
      const budget = Math.min(config.maxTokensPerTurn, config.maxResponseTokens - track.traj.responseTokens);
      if (budget <= 0) {
        end(ep, 'max-tokens');
        continue;
      }
      const prompt = buildPrompt(tokenizer, track, ep, context, config.contextLength);
      if (!prompt) {
        // The next turn does not fit: the episode ends here as truncated (reason "context"), and
        // what it has is trained on; nothing past the context is ever recorded.
        end(ep, 'context');
        continue;
      }
      ep.prompt = prompt;
      const list = byPolicy.get(player.policy) ?? [];
      list.push(ep);
      byPolicy.set(player.policy, list);
    }
    removeEnded();

    // GENERATING: one batched call per policy.
    const generated = new Map<Live, SampleResult>();
    for (const [policyId, eps] of byPolicy) {
      const policy = policies[policyId];
      if (!policy) throw new Error(`no policy "${policyId}"`);
      const maxTokens = Math.max(1, Math.min(config.maxTokensPerTurn, config.contextLength - Math.max(...eps.map((e) => e.prompt.length)) - 1));
      const results = await policy.generate(
        eps.map((e) => e.prompt),
        {
          maxTokens,
          temperature: config.temperature,
          stop,
          seed: config.seed * 100003 + round,
          ...(config.maskActions !== false && eps.some((e) => e.actions) ? { allowed: eps.map((e) => e.actions ?? null) } : {}),
        },
      );
      eps.forEach((ep, i) => {
        const track = ep.tracks[ep.agent];
        const budget = Math.min(config.maxTokensPerTurn, config.maxResponseTokens - track.traj.responseTokens, config.contextLength - ep.prompt.length - 1);
        generated.set(ep, clip(results[i], budget, tokenizer));
      });
    }
    round++;

    // INTERACTING: record the turn, let the environment answer.
    await Promise.all(
      live.map(async (ep) => {
        ep.out.state = 'INTERACTING';
        const player = ep.spec.players[ep.agent];
        const track = ep.tracks[ep.agent];
        let text: string;
        try {
          if (player.kind === 'bot') {
            text = await env.bot({ episodeId: ep.spec.episodeId, bot: player.bot });
          } else {
            const result = generated.get(ep)!;
            recordGeneration(tokenizer, track, ep, result, context);
            text = result.text;
          }
          track.traj.turns++;
          const actingAgent = ep.agent;
          const observation = ep.observation;
          const legal = ep.actions ? ep.actions.includes(text.trim()) : null;
          const step = await env.step({ episodeId: ep.spec.episodeId, action: text });
          ep.out.moves.push({ agent: actingAgent, text, byBot: player.kind === 'bot', observation, rewards: step.rewards, info: step.info, tool: step.tool, legal });
          ep.out.finalInfo = step.info;
          for (const [agent, reward] of Object.entries(step.rewards)) addReward(ep.tracks[agent], reward, context, agent === actingAgent);
          if (!step.next) {
            end(ep, step.terminated ? 'terminated' : 'truncated');
            return;
          }
          ep.agent = step.next.agent;
          ep.observation = step.next.observation;
          ep.actions = step.next.actions;
          ep.observationRole = step.tool ? 'tool' : 'user';
          ep.out.state = 'GENERATING';
        } catch (e) {
          if (!(e instanceof SandboxError)) throw e;
          fail(ep.out, e);
          ep.out.state = 'TERMINATED';
        }
      }),
    );
    removeEnded();
  }
  const order = new Map(specs.map((s, i) => [s.episodeId, i]));
  return finished.sort((a, b) => order.get(a.episodeId)! - order.get(b.episodeId)!);

  function end(ep: Live, reason: RolloutEndReason) {
    if (ep.out.state === 'TERMINATED') return;
    ep.out.endReason = reason;
    ep.out.state = 'TERMINATED';
    if (reason !== 'terminated' && reason !== 'truncated') void env.close(ep.spec.episodeId).catch(() => undefined);
  }

  function removeEnded() {
    for (let i = live.length - 1; i >= 0; i--) {
      const ep = live[i];
      if (ep.out.state !== 'TERMINATED') continue;
      live.splice(i, 1);
      finalise(ep, context);
      finished.push(ep.out);
    }
  }
}

function fail(out: EpisodeRollout, e: unknown) {
  out.endReason = 'error';
  out.state = 'TERMINATED';
  out.error = e instanceof SandboxError ? e.toJSON() : { kind: 'crash', during: 'rollout', message: (e as Error).message, location: null, userStack: '' };
}

/**
 * The ids of an agent's next turn: the observation and the opening of its reply, appended to its
 * conversation so far (`conversation`; null starts a new one with the system prompt, as in the
 * `latest` context or at an agent's first turn). The conversation is not changed: the one returned
 * has the turn, to keep when the prompt is used.
 */
export function turnIds(tok: Tokenizer, conversation: Conversation | null, system: string, observation: string, role: 'user' | 'tool'): { ids: number[]; conversation: Conversation } {
  const conv = conversation ? conversation.clone() : tok.conversation(system);
  return { ids: [...conv.message(role, observation), ...conv.openTurn()], conversation: conv };
}

/**
 * A whole conversation in the model's chat format, ending with the opening of the policy's turn:
 * what the playground sends. An assistant message is the policy's own earlier turn, closed as a
 * rollout closes it; a conversation that ends with one continues after it.
 */
export function chatPrompt(tok: Tokenizer, system: string, messages: ReadonlyArray<{ role: 'user' | 'tool' | 'assistant'; text: string }>): number[] {
  const conv = tok.conversation(system);
  const out: number[] = [];
  for (const m of messages) {
    if (m.role === 'assistant') out.push(...conv.openTurn(), ...conv.writeTurn(m.text));
    else out.push(...conv.message(m.role, m.text));
  }
  if (messages[messages.length - 1]?.role !== 'assistant') out.push(...conv.openTurn());
  return out;
}

/**
 * The prompt of the acting agent's next turn (in full context, its track so far plus the new
 * observation), or null when that prompt leaves no room for one generated token; then the track
 * is left as it was, so its sequence never outgrows the model's context.
 */
function buildPrompt(tok: Tokenizer, track: Track, ep: Live, context: 'full' | 'latest', contextLength: number): number[] | null {
  const latest = context === 'latest';
  const turn = turnIds(tok, latest ? null : track.conversation, track.system, ep.observation, ep.observationRole);
  const length = (latest ? 0 : track.tokens.length) + turn.ids.length;
  if (length + 1 >= contextLength) return null;
  if (latest) return turn.ids;
  track.conversation = turn.conversation;
  push(track, turn.ids, 0);
  return track.tokens.slice();
}

function push(track: Track, tokens: number[], mask: 0 | 1, logprobs?: number[]) {
  for (let i = 0; i < tokens.length; i++) {
    track.tokens.push(tokens[i]);
    track.mask.push(mask);
    track.rewards.push(0);
    track.logprobs.push(logprobs ? logprobs[i] : 0);
  }
}

function recordGeneration(tok: Tokenizer, track: Track, ep: Live, result: SampleResult, context: 'full' | 'latest') {
  track.traj.responseTokens += result.tokens.length;
  if (context === 'latest') {
    const tokens = [...ep.prompt, ...result.tokens];
    const mask = tokens.map((_, i) => (i >= ep.prompt.length ? 1 : 0));
    track.traj.sequences.push({ tokens, lossMask: mask, group: ep.spec.group });
    track.traj.logprobs.push([...ep.prompt.map(() => 0), ...result.logprobs]);
    track.turnSequenceRewards.push(0);
    if (result.tokens.length > 0) track.lastTrainable = track.traj.sequences.length - 1;
  } else {
    push(track, result.tokens, 1, result.logprobs);
    if (result.tokens.length > 0) track.lastTrainable = track.tokens.length - 1;
    // Close the turn when the policy did not (stop string or length): the inserted end of turn is not trainable.
    push(track, track.conversation!.closeTurn(result.tokens), 0);
  }
  track.traj.turnRewards.push(0);
  if (track.pendingReward !== 0 && track.lastTrainable >= 0) {
    addReward(track, track.pendingReward, context, true);
    track.pendingReward = 0;
  }
}

/** Rewards go to the agent's latest trainable token (or turn); before its first one they wait. */
function addReward(track: Track, reward: number, context: 'full' | 'latest', _acting: boolean) {
  if (!track || reward === 0) return;
  track.traj.totalReward += reward;
  if (track.traj.turnRewards.length > 0) track.traj.turnRewards[track.traj.turnRewards.length - 1] += reward;
  if (track.lastTrainable < 0) {
    track.pendingReward += reward;
    return;
  }
  if (context === 'latest') track.turnSequenceRewards[track.lastTrainable] += reward;
  else track.rewards[track.lastTrainable] += reward;
}

function finalise(ep: Live, context: 'full' | 'latest') {
  const truncated = ep.out.endReason !== 'terminated';
  for (const track of Object.values(ep.tracks)) {
    const traj = track.traj;
    if (context === 'latest') {
      // Return-to-go: a move is credited with every reward that followed it.
      let future = 0;
      for (let i = traj.sequences.length - 1; i >= 0; i--) {
        future += track.turnSequenceRewards[i];
        traj.sequences[i].rewards = future;
        traj.sequences[i].truncated = truncated;
      }
    } else if (track.lastTrainable >= 0) {
      traj.sequences = [{ tokens: track.tokens, lossMask: track.mask, rewards: track.rewards, group: ep.spec.group, truncated }];
      traj.logprobs = [track.logprobs];
    }
  }
}

/** Cuts a sample to this episode's remaining budget (the batch was sampled with the largest). */
function clip(result: SampleResult, budget: number, tok: Tokenizer): SampleResult {
  if (result.tokens.length <= budget) return result;
  const tokens = result.tokens.slice(0, Math.max(0, budget));
  return { tokens, logprobs: result.logprobs.slice(0, tokens.length), text: tok.decode(tokens), finishReason: 'length' };
}

/** The sequences a learning agent's trainer takes from a batch of rollouts; failed episodes are left out. */
export function trainingBatch(rollouts: EpisodeRollout[], agent: string): Sequence[] {
  return rollouts.filter((r) => r.endReason !== 'error' && r.agents[agent]?.learn).flatMap((r) => r.agents[agent].sequences);
}
