/**
 * The multi-agent coordinator. Within an episode, the rollout state machine runs the turns in the
 * environment's order. Across agents it enforces global barriers: every agent finishes the rollout
 * phase before any policy updates, and every update finishes before the next rollout phase.
 *
 * Seats: each learning agent samples from its policy; policies named the same are shared (one
 * set of weights, one optimiser, one batch from all its seats). The other seats are filled per
 * episode from an opponent mix: an environment bot, a fixed policy, or a frozen snapshot of a
 * learning policy, refreshed every few steps (self-play against the past, which peers found keeps
 * self-play from collapsing), or one drawn from a pool of its past snapshots (the league of past
 * selves: one snapshot every K steps, drawn uniformly or favouring the recent).
 */
import { Rng } from '../../sdk/environment/rng';
import { type Json } from '../../sdk/environment/schema';
import { type EnvironmentHandle } from './environment-handle';
import { type Policy, type Sequence, type Tokenizer, type Trainer } from './policy';
import { type EpisodeRollout, type EpisodeSpec, type Player, type RolloutConfig, runRollouts, trainingBatch } from './rollout';

export interface PolicySlot {
  policy: Policy;
  /** Required for policies that learn. */
  trainer?: Trainer;
  /** A frozen copy of the current weights, for `frozen:<policy>` and `pool:<policy>` opponents. */
  freeze?: () => Promise<Policy>;
  /** Frees a frozen copy the coordinator no longer uses (a snapshot dropped from a pool). */
  release?: (policy: Policy) => void;
}

/** The pool of past snapshots behind `pool:<policy>` opponents. */
export interface SnapshotPoolOptions {
  /** Steps between snapshots; the first is taken before the first step. */
  every: number;
  /** Snapshots kept; the oldest is dropped when a new one would exceed it. */
  size: number;
  /** How an episode draws its snapshot: `uniform`, or `recency` (the k-th oldest of n with weight k, 1 … n). */
  sampling: 'uniform' | 'recency';
}

export interface CoordinatorOptions {
  env: EnvironmentHandle;
  tokenizer: Tokenizer;
  policies: Record<string, PolicySlot>;
  /** Agent → the policy it learns with. Agents not listed are opponents. */
  learners: Record<string, string>;
  /**
   * Shares of episodes for each opponent seat: a bot name ("scripted"), "policy:<id>" (a policy
   * that does not learn here), "frozen:<id>" (a snapshot of a learning policy), "pool:<id>"
   * (one of its past snapshots, see `pool`) or "checkpoint:<id>" (a saved checkpoint: the policy
   * of that whole name, which does not learn).
   */
  opponents?: Record<string, number>;
  /** The snapshot pool of `pool:<id>` opponents. Default: a snapshot every 10 steps, 8 kept, uniform. */
  pool?: SnapshotPoolOptions;
  rollout: RolloutConfig;
  /** Tasks per step; each gives `groupSize` episodes. */
  tasksPerStep: number;
  groupSize: number;
  /** Dataset rows for data-dependent environments, cycled through in order. */
  rows?: Json[];
  /** Steps between refreshes of frozen snapshots. */
  refreshFrozenEvery?: number;
  /**
   * One learner that plays every seat in turn: task t of step s seats it as agent
   * (index of its `learners` agent + t + s) mod agents, and the opponent mix fills the other seats.
   * A GRPO group keeps one seat, so its advantages compare games from the same side of the board.
   */
  switchSeats?: boolean;
  seed: number;
  /**
   * The step to run first, for a resumed run: steps are seeded from (seed, step) and take dataset
   * rows in order, tasksPerStep per step, so a run resumed at step S runs what the uninterrupted
   * one would have. Default 0.
   */
  startStep?: number;
  onEvent?: (event: CoordinatorEvent) => void;
}

export type CoordinatorEvent =
  | { type: 'rollout-start'; step: number }
  | { type: 'rollout-end'; step: number; agent: string }
  | { type: 'update-start'; step: number; policy: string; sequences: number }
  | { type: 'update-end'; step: number; policy: string }
  | { type: 'snapshot'; step: number; policy: string; pool?: number };

export interface StepReport {
  step: number;
  rollouts: EpisodeRollout[];
  /** Mean episode return per agent (episodes without errors). */
  meanReward: Record<string, number>;
  /** Trainer metrics per learning policy. */
  metrics: Record<string, Record<string, number>>;
  /** Opponent chosen per episode, by agent (`pool:<id>@<step>` names the snapshot's step). */
  opponents: Record<string, string>[];
}

export class MultiAgentCoordinator {
  private step: number;
  private rowCursor: number;
  /** Frozen snapshots are taken before the first step this coordinator runs, then every refreshFrozenEvery steps. */
  private snapshotsTaken = false;
  private readonly frozen = new Map<string, Policy>();
  /** Past snapshots per policy, oldest first. */
  private readonly pools = new Map<string, { step: number; policy: Policy }[]>();
  private readonly poolOptions: SnapshotPoolOptions;
  private readonly opponentAgents: string[];
  private readonly agents: readonly string[];

  constructor(private readonly o: CoordinatorOptions) {
    this.step = o.startStep ?? 0;
    this.poolOptions = o.pool ?? { every: 10, size: 8, sampling: 'uniform' };
    if (!(this.poolOptions.every >= 1 && this.poolOptions.size >= 1)) throw new Error('pool: every and size must be at least 1');
    this.rowCursor = this.step * o.tasksPerStep;
    const agents = o.env.description.agents;
    for (const [agent, policy] of Object.entries(o.learners)) {
      if (!agents.includes(agent)) throw new Error(`learner "${agent}" is not an agent of ${o.env.description.name} (${agents.join(', ')})`);
      const slot = o.policies[policy];
      if (!slot?.trainer) throw new Error(`learning policy "${policy}" needs a trainer`);
    }
    this.agents = agents;
    if (o.switchSeats && Object.keys(o.learners).length !== 1) throw new Error('switchSeats needs exactly one learner');
    this.opponentAgents = o.switchSeats ? agents.slice(1) : agents.filter((a) => !(a in o.learners));
    if (this.opponentAgents.length > 0) {
      const mix = o.opponents ?? {};
      if (!Object.values(mix).some((w) => w > 0)) throw new Error(`agents ${this.opponentAgents.join(', ')} need an opponent mix`);
      for (const name of Object.keys(mix)) {
        const [kind, id] = name.includes(':') ? name.split(':') : ['bot', name];
        if (kind === 'bot' && !o.env.description.bots.includes(id)) throw new Error(`no bot "${id}" in ${o.env.description.name}`);
        if (!['bot', 'policy', 'frozen', 'pool', 'checkpoint'].includes(kind)) throw new Error(`opponent "${name}": write a bot name, policy:<id>, frozen:<id>, pool:<id> or checkpoint:<id>`);
        if (kind === 'checkpoint' && !o.policies[name]) throw new Error(`opponent "${name}": no policy "${name}" (the checkpoint, loaded)`);
        if (kind !== 'bot' && kind !== 'checkpoint' && !o.policies[id]) throw new Error(`opponent "${name}": no policy "${id}"`);
        if ((kind === 'frozen' || kind === 'pool') && !o.policies[id].freeze) throw new Error(`opponent "${name}": policy "${id}" cannot be frozen`);
      }
    }
  }

  /** One rollout phase and one update phase, separated by barriers. */
  async runStep(): Promise<StepReport> {
    const step = this.step++;
    const { o } = this;
    if (!this.snapshotsTaken) await this.refreshSnapshots(step);
    if ((step - (o.startStep ?? 0)) % this.poolOptions.every === 0) await this.addPoolSnapshots(step);

    // Rollout phase.
    o.onEvent?.({ type: 'rollout-start', step });
    const rng = new Rng(o.seed * 7919 + step);
    const specs: EpisodeSpec[] = [];
    const opponents: Record<string, string>[] = [];
    for (let t = 0; t < o.tasksPerStep; t++) {
      const taskSeed = rng.int(0, 0x7fffffff);
      const row = o.rows && o.rows.length > 0 ? o.rows[this.rowCursor++ % o.rows.length] : undefined;
      const learners = this.seatLearners(step, t);
      const seat = o.switchSeats ? `-${Object.keys(learners)[0]}` : '';
      for (let g = 0; g < o.groupSize; g++) {
        const players: Record<string, Player> = {};
        const chosen: Record<string, string> = {};
        for (const [agent, policy] of Object.entries(learners)) players[agent] = { kind: 'policy', policy, learn: true };
        for (const agent of this.agents.filter((a) => !(a in learners))) {
          const name = pickWeighted(rng, o.opponents!);
          const player = this.opponentPlayer(name, rng);
          chosen[agent] = player.kind === 'policy' && player.policy.startsWith('pool:') ? player.policy : name;
          players[agent] = player;
        }
        opponents.push(chosen);
        specs.push({ episodeId: `s${step}-t${t}-g${g}`, group: `s${step}-t${t}${seat}`, seed: rng.int(0, 0x7fffffff), taskSeed, row, players });
      }
    }
    const policies: Record<string, Policy> = {};
    for (const [id, slot] of Object.entries(o.policies)) policies[id] = slot.policy;
    for (const [id, policy] of this.frozen) policies[`frozen:${id}`] = policy;
    for (const [id, pool] of this.pools) for (const s of pool) policies[`pool:${id}@${s.step}`] = s.policy;
    const rollouts = await runRollouts(o.env, o.tokenizer, policies, specs, { ...o.rollout, seed: o.seed * 1000003 + step });
    // Barrier: the rollout phase is over for every agent before any update starts.
    for (const agent of o.env.description.agents) o.onEvent?.({ type: 'rollout-end', step, agent });

    // Update phase: one batch per learning policy, from every seat it played.
    const batches = new Map<string, Sequence[]>();
    if (o.switchSeats) {
      const policy = Object.values(o.learners)[0];
      batches.set(policy, this.agents.flatMap((agent) => trainingBatch(rollouts, agent)));
    } else {
      for (const [agent, policy] of Object.entries(o.learners)) {
        batches.set(policy, [...(batches.get(policy) ?? []), ...trainingBatch(rollouts, agent)]);
      }
    }
    const metrics: Record<string, Record<string, number>> = {};
    await Promise.all(
      [...batches].map(async ([policy, batch]) => {
        if (batch.length === 0) return;
        o.onEvent?.({ type: 'update-start', step, policy, sequences: batch.length });
        metrics[policy] = await o.policies[policy].trainer!.train(batch);
        o.onEvent?.({ type: 'update-end', step, policy });
      }),
    );
    // Barrier: all updates are done before snapshots and the next rollout phase.
    if ((step + 1) % (o.refreshFrozenEvery ?? 10) === 0) await this.refreshSnapshots(step);

    return { step, rollouts, meanReward: meanRewards(rollouts, o.env.description.agents), metrics, opponents };
  }

  /** The learning seats of task t: fixed, or the one learner moved round the table. */
  private seatLearners(step: number, t: number): Record<string, string> {
    if (!this.o.switchSeats) return this.o.learners;
    const [[agent, policy]] = Object.entries(this.o.learners);
    const n = this.agents.length;
    return { [this.agents[(this.agents.indexOf(agent) + t + step) % n]]: policy };
  }

  private opponentPlayer(name: string, rng: Rng): Player {
    if (name.startsWith('policy:')) return { kind: 'policy', policy: name.slice(7), learn: false };
    if (name.startsWith('pool:')) {
      const pool = this.pools.get(name.slice(5))!;
      return { kind: 'policy', policy: `pool:${name.slice(5)}@${pool[drawSnapshot(rng, pool.length, this.poolOptions.sampling)].step}`, learn: false };
    }
    if (name.startsWith('frozen:') || name.startsWith('checkpoint:')) return { kind: 'policy', policy: name, learn: false };
    return { kind: 'bot', bot: name };
  }

  /** A new snapshot in each pool (the oldest dropped beyond the pool's size). */
  private async addPoolSnapshots(step: number) {
    const wanted = Object.keys(this.o.opponents ?? {}).filter((n) => n.startsWith('pool:')).map((n) => n.slice(5));
    for (const id of new Set(wanted)) {
      const pool = this.pools.get(id) ?? [];
      pool.push({ step, policy: await this.o.policies[id].freeze!() });
      while (pool.length > this.poolOptions.size) this.o.policies[id].release?.(pool.shift()!.policy);
      this.pools.set(id, pool);
      this.o.onEvent?.({ type: 'snapshot', step, policy: id, pool: pool.length });
    }
  }

  private async refreshSnapshots(step: number) {
    this.snapshotsTaken = true;
    const wanted = Object.keys(this.o.opponents ?? {}).filter((n) => n.startsWith('frozen:')).map((n) => n.slice(7));
    for (const id of new Set(wanted)) {
      const previous = this.frozen.get(id);
      this.frozen.set(id, await this.o.policies[id].freeze!());
      if (previous) this.o.policies[id].release?.(previous);
      this.o.onEvent?.({ type: 'snapshot', step, policy: id });
    }
  }
}

/** Index of the snapshot an episode plays, oldest first: uniform, or the k-th oldest with weight k. */
export function drawSnapshot(rng: Rng, n: number, sampling: SnapshotPoolOptions['sampling']): number {
  if (sampling === 'uniform') return rng.int(0, n);
  let x = rng.next() * ((n * (n + 1)) / 2);
  for (let k = 0; k < n; k++) {
    x -= k + 1;
    if (x < 0) return k;
  }
  return n - 1;
}

function pickWeighted(rng: Rng, mix: Record<string, number>): string {
  const entries = Object.entries(mix).filter(([, w]) => w > 0);
  const total = entries.reduce((a, [, w]) => a + w, 0);
  let x = rng.next() * total;
  for (const [name, w] of entries) {
    x -= w;
    if (x < 0) return name;
  }
  return entries[entries.length - 1][0];
}

function meanRewards(rollouts: EpisodeRollout[], agents: readonly string[]): Record<string, number> {
  const ok = rollouts.filter((r) => r.endReason !== 'error');
  return Object.fromEntries(agents.map((a) => [a, ok.length === 0 ? 0 : ok.reduce((s, r) => s + (r.agents[a]?.totalReward ?? 0), 0) / ok.length]));
}
