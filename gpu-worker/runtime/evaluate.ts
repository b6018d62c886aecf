/**
 * Evaluation of a policy in a multi-agent environment with seat switching: the policy plays every
 * seat in turn against a fixed opponent (a bot or another policy), because in many turn-based games
 * the seat alone decides a lot (free-style Gomoku strongly favours the first player). Games come in
 * rounds of one game per seat that share their seeds, so each seat meets the same opponent
 * randomness. All games of an evaluation are generated together (one batched rollout).
 *
 * A game counts as a win when the policy's episode return is positive, a loss when negative (an
 * invalid move forfeits: a loss), a draw otherwise (including games cut by the turn or token limits).
 */
import { type EnvironmentHandle } from './environment-handle';
import { type Policy, type Tokenizer } from './policy';
import { type EpisodeRollout, type EpisodeSpec, type Player, type RolloutConfig, runRollouts } from './rollout';

export interface SeatSwitchingOptions {
  env: EnvironmentHandle;
  tokenizer: Tokenizer;
  policies: Record<string, Policy>;
  /** The policy under evaluation (a key of `policies`); it does not learn here. */
  policy: string;
  /** Who fills the other seats: a bot name ("random") or "policy:<id>". */
  opponent: string;
  /** Rounds; each is one game per seat, so `rounds × agents` games. */
  rounds: number;
  rollout: RolloutConfig;
  /** Seeds the games: the same seed gives the same evaluation set. */
  seed: number;
}

export interface SeatRecord {
  games: number;
  wins: number;
  losses: number;
  draws: number;
  /** Games that ended in an environment error (not counted in games). */
  errors: number;
  winRate: number;
  meanReturn: number;
}

export interface SeatSwitchingResult extends SeatRecord {
  /** The same figures per seat the policy played. */
  bySeat: Record<string, SeatRecord>;
  rollouts: EpisodeRollout[];
  /** The seat the policy played in each rollout, aligned with `rollouts`. */
  seats: string[];
}

export async function evaluateSeatSwitching(o: SeatSwitchingOptions): Promise<SeatSwitchingResult> {
  const agents = o.env.description.agents;
  if (!o.policies[o.policy]) throw new Error(`no policy "${o.policy}"`);
  if (!Number.isInteger(o.rounds) || o.rounds < 1) throw new Error(`rounds must be a positive integer, got ${o.rounds}`);
  const opponent = opponentPlayer(o.opponent, o.env, o.policies);
  const specs: EpisodeSpec[] = [];
  const seats: string[] = [];
  for (let round = 0; round < o.rounds; round++) {
    for (const seat of agents) {
      const players: Record<string, Player> = {};
      for (const agent of agents) players[agent] = agent === seat ? { kind: 'policy', policy: o.policy, learn: false } : opponent;
      const seed = o.seed * 100_003 + round;
      specs.push({ episodeId: `eval-${o.seed}-${round}-${seat}`, group: `eval-${seat}`, seed, taskSeed: seed, players });
      seats.push(seat);
    }
  }
  const rollouts = await runRollouts(o.env, o.tokenizer, o.policies, specs, o.rollout);
  const all = emptyRecord();
  const bySeat: Record<string, SeatRecord> = Object.fromEntries(agents.map((a) => [a, emptyRecord()]));
  rollouts.forEach((r, i) => {
    for (const rec of [all, bySeat[seats[i]]]) {
      if (r.endReason === 'error') {
        rec.errors++;
        continue;
      }
      const ret = r.agents[seats[i]].totalReward;
      rec.games++;
      rec.meanReturn += ret;
      if (ret > 0) rec.wins++;
      else if (ret < 0) rec.losses++;
      else rec.draws++;
    }
  });
  for (const rec of [all, ...Object.values(bySeat)]) {
    rec.winRate = rec.games === 0 ? 0 : rec.wins / rec.games;
    rec.meanReturn = rec.games === 0 ? 0 : rec.meanReturn / rec.games;
  }
  return { ...all, bySeat, rollouts, seats };
}

function emptyRecord(): SeatRecord {
  return { games: 0, wins: 0, losses: 0, draws: 0, errors: 0, winRate: 0, meanReturn: 0 };
}

function opponentPlayer(name: string, env: EnvironmentHandle, policies: Record<string, Policy>): Player {
  if (name.startsWith('policy:')) {
    const id = name.slice(7);
    if (!policies[id]) throw new Error(`opponent "${name}": no policy "${id}"`);
    return { kind: 'policy', policy: id, learn: false };
  }
  if (!env.description.bots.includes(name)) throw new Error(`no bot "${name}" in ${env.description.name} (${env.description.bots.join(', ') || 'none'})`);
  return { kind: 'bot', bot: name };
}
