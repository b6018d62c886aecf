/**
 * Turns what the runtime produces (step reports, rollouts, match records) into stream items, and
 * numbers log lines. One Emitter per attempt.
 */
import { type Tokenizer } from '../runtime/policy';
import { type EpisodeRollout } from '../runtime/rollout';
import { capText } from '../../sdk/limits';
import { type BoardItem, type LogItem, matchWinner, type MatchItem, type MetricItem, type RolloutItem } from '../../sdk/live';
import { type JobSink } from './sink';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * What an environment may write to its job's log (its console lines): a noisy or hostile
 * environment must not fill the database. The runner's own lines are not counted.
 */
export const USER_LOG_BUDGET = { perFlush: 200, perJob: 20_000 };


export class Emitter {
  private line = 0;
  private logBuffer: LogItem[] = [];
  private userLines = 0;
  private droppedSinceFlush = 0;
  private droppedTotal = 0;

  constructor(readonly sink: JobSink) {}

  /** Buffers a log line; `flushLogs` (called after every step and at the end) sends them. */
  log(level: LogLevel, message: string): void {
    this.logBuffer.push({ line: this.line++, level, message: message.slice(0, 10_000), time: new Date().toISOString() });
  }

  /** A line the environment wrote (its console), within USER_LOG_BUDGET; the rest are counted and reported. */
  userLog(message: string): void {
    const sinceFlush = this.logBuffer.length; // the runner's own lines are few; counting them too keeps this simple
    if (this.userLines >= USER_LOG_BUDGET.perJob || sinceFlush >= USER_LOG_BUDGET.perFlush) {
      this.droppedSinceFlush++;
      this.droppedTotal++;
      return;
    }
    this.userLines++;
    this.log('info', message);
  }

  async flushLogs(): Promise<void> {
    if (this.droppedSinceFlush > 0) {
      const spent = this.userLines >= USER_LOG_BUDGET.perJob;
      this.log(
        'warn',
        `${this.droppedSinceFlush} environment log lines dropped (${this.droppedTotal} in all): a job keeps at most ${USER_LOG_BUDGET.perFlush} a step and ${USER_LOG_BUDGET.perJob} in all` +
          (spent ? '; the job has spent its log budget' : ''),
      );
      this.droppedSinceFlush = 0;
    }
    while (this.logBuffer.length > 0) await this.sink.sendBatch('logs', this.logBuffer.splice(0, 1000));
  }

  /** Finite numbers only: a NaN or infinite value has no place in a series. */
  async metrics(step: number, values: Record<string, number | null | undefined>): Promise<void> {
    const items: MetricItem[] = [];
    for (const [key, value] of Object.entries(values)) {
      if (typeof value === 'number' && Number.isFinite(value)) items.push({ step, key, value });
    }
    if (items.length > 0) await this.sink.sendBatch('metrics', items);
  }

  async rollouts(items: RolloutItem[]): Promise<void> {
    if (items.length > 0) await this.sink.sendBatch('rollouts', items);
  }

  async matches(items: MatchItem[]): Promise<void> {
    if (items.length > 0) await this.sink.sendBatch('matches', items);
  }

  async boards(items: BoardItem[]): Promise<void> {
    if (items.length > 0) await this.sink.sendBatch('boards', items);
  }
}

export interface Segment {
  text: string;
  trainable: boolean;
  role: string;
  /** Trainable segments: each token's text and the sampler's log-probability of it. */
  tokens?: Array<{ text: string; logprob: number }>;
}

/** Tokens of one segment sent with their log-probabilities (sdk/live.ts caps a segment's list there). */
const MAX_SEGMENT_TOKENS = 2_000;

/**
 * Splits a token sequence into text segments: a new segment at every role separator (its role
 * names the segment) and wherever the loss mask changes, so the UI can show which text the policy
 * wrote (trainable) and which it read. BOS, EOS and padding are dropped.
 */
function sequenceSegments(tok: Tokenizer, tokens: readonly number[], lossMask: readonly number[], logprobs: readonly number[] = []): Segment[] {
  const segments: Segment[] = [];
  let role = 'context';
  let current: { ids: number[]; logprobs: number[]; trainable: boolean; role: string } | null = null;
  const close = () => {
    if (current && current.ids.length > 0) {
      const segment: Segment = { text: tok.decode(current.ids), trainable: current.trainable, role: current.role };
      // The policy's own tokens, each with the probability the sampler gave it (the viewer's heat map).
      if (current.trainable) segment.tokens = current.ids.slice(0, MAX_SEGMENT_TOKENS).map((id, k) => ({ text: tok.decode([id]), logprob: current!.logprobs[k] ?? 0 }));
      segments.push(segment);
    }
    current = null;
  };
  for (let i = 0; i < tokens.length; i++) {
    const id = tokens[i];
    const r = tok.turnRole(id);
    if (r !== undefined) {
      close();
      role = r;
      continue;
    }
    if (id === tok.bos || id === tok.eos || id === tok.pad) continue;
    const trainable = lossMask[i] === 1;
    if (!current || current.trainable !== trainable || current.role !== role) {
      close();
      current = { ids: [], logprobs: [], trainable, role };
    }
    current.ids.push(id);
    current.logprobs.push(logprobs[i] ?? 0);
  }
  close();
  return segments;
}

/** The rollout samples of one step: the first `limit` episodes, each learning seat's sequences. */
export function rolloutItems(tok: Tokenizer, step: number, rollouts: readonly EpisodeRollout[], limit: number): RolloutItem[] {
  const items: RolloutItem[] = [];
  let index = 0;
  for (const r of rollouts.slice(0, limit)) {
    for (const traj of Object.values(r.agents)) {
      if (!traj.learn) continue;
      const segments = traj.sequences.flatMap((s, k) => sequenceSegments(tok, s.tokens, s.lossMask, traj.logprobs[k]));
      items.push({
        step,
        agent: traj.agent,
        index: index++,
        segments: segments.slice(0, 500).map((seg) => ({ ...seg, text: capText(seg.text) })),
        reward: traj.totalReward,
        turnRewards: traj.turnRewards.slice(0, 1000),
        endReason: r.endReason,
        info: { episodeId: r.episodeId, group: r.group, task: r.task, ...(r.error ? { error: r.error } : {}), finalInfo: r.finalInfo },
      });
    }
  }
  return items;
}

/** A match record for a multi-agent episode: every move with its raw text, and the result. */
export function matchItem(step: number | null, r: EpisodeRollout, opponents: Record<string, string> = {}): MatchItem {
  const agents = Object.values(r.agents).map((t) => ({ name: t.agent, policy: t.policy ?? `bot:${opponents[t.agent] ?? 'bot'}` }));
  const returns = Object.fromEntries(Object.values(r.agents).map((t) => [t.agent, t.totalReward]));
  return {
    step,
    agents,
    moves: r.moves.slice(0, 10_000).map((m, i) => ({
      index: i,
      agent: m.agent,
      text: capText(m.text),
      byBot: m.byBot,
      observation: capText(m.observation),
      rewards: m.rewards,
      info: m.info,
    })),
    // The task too: a replay draws the game from it (a grid game's size and win length).
    result: { endReason: r.endReason, returns, info: r.finalInfo, task: r.task, ...(r.error ? { error: r.error.message } : {}) },
    winner: matchWinner(r.finalInfo, returns),
  };
}


/** Board texts of one game: the observation before each move (multi-agent games show the board there). */
export function boardItems(step: number, game: number, r: EpisodeRollout): BoardItem[] {
  return r.moves.slice(0, 1000).map((m, move) => ({ step, game, move, text: capText(m.observation, 10_000) }));
}
