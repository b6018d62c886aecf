/**
 * Plays one episode at the level of text: each turn an actor (a bot, a scripted or random policy,
 * later a model) writes the current agent's action and the environment answers. The transcript is
 * also the match record: every move, who played it, the raw text, and the result.
 */
import { type Json } from '../../sdk/environment/schema';
import { type EnvironmentHandle } from './environment-handle';
import { SandboxError } from './sandbox/errors';
import type { Transcript } from '../../sdk/dry-run-report';

/** What an acting seat is shown besides its observation (a model's prompt and its legal moves). */
export interface ActorTurn {
  systemPrompt: string;
  /** The turn's legal actions, when the environment names them. */
  actions?: string[];
  /** 'tool' when the observation is a tool's result. */
  role: 'user' | 'tool';
}

export type Actor = (agent: string, observation: string, episodeId: string, turn: ActorTurn) => Promise<string> | string;

export interface PlayOptions {
  episodeId: string;
  seed: number;
  taskSeed: number;
  row?: Json;
  /** A data-free environment's task, instead of sampling one. */
  task?: Json;
  actor: Actor;
  /** Turns per agent before the episode is cut (manifest limits.maxTurns). */
  maxTurns: number;
}

export async function playEpisode(env: EnvironmentHandle, options: PlayOptions): Promise<Transcript> {
  const { episodeId, seed } = options;
  const totalRewards = Object.fromEntries(env.description.agents.map((a) => [a, 0]));
  const transcript: Transcript = {
    episodeId,
    seed,
    task: null,
    systemPrompts: {},
    turns: [],
    endReason: 'error',
    totalRewards,
    finalInfo: {},
    error: null,
  };
  const turnsTaken: Record<string, number> = {};
  try {
    const reset = await env.reset({ episodeId, seed, taskSeed: options.taskSeed, row: options.row, ...(options.task !== undefined ? { task: options.task } : {}) });
    transcript.task = reset.task;
    transcript.systemPrompts = reset.systemPrompts;
    let turn = reset.turn;
    let role: ActorTurn['role'] = 'user';
    for (;;) {
      if ((turnsTaken[turn.agent] ?? 0) >= options.maxTurns) {
        transcript.endReason = 'max-turns';
        await env.close(episodeId);
        break;
      }
      turnsTaken[turn.agent] = (turnsTaken[turn.agent] ?? 0) + 1;
      const action = await options.actor(turn.agent, turn.observation, episodeId, { systemPrompt: reset.systemPrompts[turn.agent] ?? '', actions: turn.actions, role });
      const result = await env.step({ episodeId, action });
      for (const [agent, r] of Object.entries(result.rewards)) totalRewards[agent] = (totalRewards[agent] ?? 0) + r;
      transcript.turns.push({ agent: turn.agent, observation: turn.observation, action, rewards: result.rewards, info: result.info, tool: result.tool });
      transcript.finalInfo = result.info;
      if (!result.next) {
        transcript.endReason = result.terminated ? 'terminated' : 'truncated';
        break;
      }
      turn = result.next;
      role = result.tool ? 'tool' : 'user';
    }
  } catch (e) {
    if (!(e instanceof SandboxError)) throw e;
    transcript.endReason = 'error';
    transcript.error = e.toJSON();
  }
  return transcript;
}
