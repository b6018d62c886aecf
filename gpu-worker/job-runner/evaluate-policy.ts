/**
 * The evaluation a training run makes every `evalEvery` steps (and after its last): greedy
 * episodes of the current policy, seats switched in multi-agent environments against the
 * environment's scripted bot, on the held-out rows of a data-dependent environment; scored as an
 * eval job scores (scores.ts), so the reward curve and the held-out curve sit side by side.
 */
import { type Json } from '../../sdk/environment/schema';
import { type Policy } from '../runtime/policy';
import { type EpisodeSpec, type Player, type RolloutConfig, runRollouts } from '../runtime/rollout';
import { type EnvironmentHandle } from '../runtime/environment-handle';
import { type Tokenizer } from '../engine/tokenizer';
import { scoreEpisodes, type Scores } from './scores';

export interface PolicyEvaluation {
  env: EnvironmentHandle;
  tokenizer: Tokenizer;
  policy: Policy;
  episodes: number;
  /** Held-out rows of a data-dependent environment. */
  rows?: Json[];
  rollout: Omit<RolloutConfig, 'temperature' | 'seed'>;
  seed: number;
}

/** Why no evaluation can run, or null when one can. */
export function cannotEvaluate(env: EnvironmentHandle, rows: Json[] | undefined): string | null {
  const d = env.description;
  if (d.rowSchema && !rows) return 'this environment reads dataset rows and the job names no held-out rows (evalDatasetVersionId)';
  if (d.agents.length > 1 && d.bots.length === 0) return 'this multi-agent environment has no bot to play against';
  return null;
}

/**
 * Evaluation episodes of the policy "policy": in rounds of one per seat sharing their seeds, so each
 * seat meets the same randomness; `opponent` plays the other seats; rows are taken in order. Eval
 * jobs and the evaluations during training lay their games out the same way.
 */
export function seatSwitchedSpecs(agents: readonly string[], games: number, seed: number, opponent: Player | null, rows?: Json[]): { specs: EpisodeSpec[]; seats: string[] } {
  const specs: EpisodeSpec[] = [];
  const seats: string[] = [];
  for (let g = 0; g < games; g++) {
    const seat = agents[g % agents.length];
    const episodeSeed = seed * 100_003 + Math.floor(g / agents.length);
    const players: Record<string, Player> = {};
    for (const agent of agents) players[agent] = agent === seat ? { kind: 'policy', policy: 'policy', learn: false } : opponent!;
    specs.push({ episodeId: `eval-${g}`, group: `eval-${seat}`, seed: episodeSeed, taskSeed: episodeSeed, players, ...(rows ? { row: rows[g % rows.length] } : {}) });
    seats.push(seat);
  }
  return { specs, seats };
}

export async function evaluatePolicy(o: PolicyEvaluation): Promise<Scores> {
  const { agents, bots } = o.env.description;
  const bot = bots.find((b) => b !== 'random') ?? bots[0];
  const { specs, seats } = seatSwitchedSpecs(agents, o.episodes, o.seed, agents.length > 1 ? { kind: 'bot', bot } : null, o.rows);
  const rollouts = await runRollouts(o.env, o.tokenizer, { policy: o.policy }, specs, { ...o.rollout, temperature: 0, seed: o.seed });
  return scoreEpisodes(rollouts, seats, agents.length > 1, { tools: o.env.description.tools.length > 0 });
}
