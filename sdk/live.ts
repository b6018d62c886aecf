import { z } from 'zod';
import { userObjectSchema } from './user-json';

// The one live contract (DESIGN.md, "One live contract"): what a job runner streams, what the
// server publishes to the browsers watching a run, the socket.io events between them, and the
// names of metrics. Runner (gpu-worker/job-runner/sink.ts), ingest (server/streams/ingest.ts),
// the realtime gateway, the CLI's watch and the test harness all take their types from here; the
// worker's HTTP and socket contract (sdk/worker-protocol.ts) wraps these items in fenced batches.

// ───────────────────────────── stream items: runner → server ─────────────────────────────

/**
 * Step numbers, one rule for everything a person or a program sees of a run: training steps are
 * counted from 1, as in "step 1 of 250". Step N's metrics, rollouts, matches and boards carry N;
 * its log line reads "step N of S"; the CLI prints N/S; an evaluation after it streams its `eval/`
 * metrics at N; a checkpoint written after it has step N (N steps done, so a run resumed from it
 * runs step N + 1 next). Step 0 is before any training step: an eval job's scores are at 0.
 * Runners count steps from 0 inside (seeds and batches derive from that index); this turns the
 * index into the number shown.
 */
export const stepNumber = (index: number): number => index + 1;

/** The longest metric key the server stores. */
export const METRIC_KEY_MAX = 100;

/**
 * One value of one metric at one step. Keys are `group/name` (METRICS below), but the wire takes
 * any key: a worker that is older than its server must not lose its metrics to a 400.
 */
export const metricItemSchema = z.object({ step: z.number().int().min(0), key: z.string().min(1).max(METRIC_KEY_MAX), value: z.number() });
/**
 * A run of a transcript's tokens with one role and one loss-mask value. A trainable (policy)
 * segment also carries its tokens' texts and the sampler's log-probabilities of them, which the
 * rollout viewer colours token by token.
 */
const segmentSchema = z.object({
  text: z.string().max(100_000),
  trainable: z.boolean(),
  role: z.string().max(40),
  tokens: z.array(z.object({ text: z.string().max(200), logprob: z.number() })).max(2_000).optional(),
});
export const rolloutItemSchema = z.object({
  step: z.number().int().min(0),
  agent: z.string().max(64).default('agent'),
  index: z.number().int().min(0),
  segments: z.array(segmentSchema).max(500),
  reward: z.number(),
  turnRewards: z.array(z.number()).max(1000).default([]),
  endReason: z.string().max(64).nullable().default(null),
  /** The environment's data, with whatever keys it has (`__proto__` included: sdk/user-json.ts). */
  info: userObjectSchema.default({}),
});
const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export const logItemSchema = z.object({
  line: z.number().int().min(0),
  level: z.enum(LOG_LEVELS).default('info'),
  message: z.string().max(10_000),
  time: z.string().optional(),
});
export const matchItemSchema = z.object({
  step: z.number().int().min(0).nullable(),
  agents: z.array(z.object({ name: z.string().max(64), policy: z.string().max(200) })).max(16),
  moves: z.array(userObjectSchema).max(10_000),
  result: userObjectSchema,
  winner: z.string().max(64).nullable(),
});
/**
 * A game's winner: the agent the environment's final info names (`winner` or `result`), else the
 * one agent with the best positive return; null for a draw or no result. One rule for the
 * runner's matches and the play console's.
 */
export function matchWinner(finalInfo: Record<string, unknown>, returns: Record<string, number>): string | null {
  const named = finalInfo.winner ?? finalInfo.result;
  if (typeof named === 'string' && named in returns) return named;
  const entries = Object.entries(returns);
  if (entries.length === 0) return null;
  const best = Math.max(...entries.map(([, v]) => v));
  const top = entries.filter(([, v]) => v === best);
  return best > 0 && top.length === 1 ? top[0][0] : null;
}
/** A live board position: fanned out to watchers, not stored (matches are). */
export const boardItemSchema = z.object({ step: z.number().int().min(0), game: z.number().int().min(0), text: z.string().max(10_000), move: z.number().int().min(0) });

/** Every kind of stream, with the schema of its items. */
export const streamItemSchemas = {
  metrics: metricItemSchema,
  rollouts: rolloutItemSchema,
  logs: logItemSchema,
  matches: matchItemSchema,
  boards: boardItemSchema,
} as const;
export type StreamKind = keyof typeof streamItemSchemas;
/** An item as a runner writes it (fields with defaults may be left out). */
export type StreamItem<K extends StreamKind> = z.input<(typeof streamItemSchemas)[K]>;
export type MetricItem = StreamItem<'metrics'>;
export type RolloutItem = StreamItem<'rollouts'>;
export type LogItem = StreamItem<'logs'>;
export type MatchItem = StreamItem<'matches'>;
export type BoardItem = StreamItem<'boards'>;

// ───────────────────────────── live batches: server → browser ─────────────────────────────

/**
 * What watchers get of each kind: enough to draw charts, lists and boards as they change. Full
 * rollouts and matches are read on demand (runs.rollouts, runs.match); boards are not stored.
 */
export const liveItemSchemas = {
  /** Keyed by (key, step): a later value replaces an earlier one. */
  metrics: metricItemSchema,
  /** Keyed by (step, agent, index). */
  rollouts: z.object({ step: z.number().int().min(0), agent: z.string(), index: z.number().int().min(0), reward: z.number() }),
  /** Keyed by (attempt, seq, line). `time` is ISO 8601 (the server's, if the runner gave none). */
  logs: z.object({ line: z.number().int().min(0), level: z.enum(LOG_LEVELS), message: z.string(), time: z.string() }),
  /** Keyed by (attempt, seq, index in the batch). */
  matches: z.object({ step: z.number().int().min(0).nullable(), winner: z.string().nullable() }),
  /** Live positions of games in progress. */
  boards: boardItemSchema,
} as const satisfies Record<StreamKind, z.ZodType>;
export type LiveItem<K extends StreamKind> = z.infer<(typeof liveItemSchemas)[K]>;

/**
 * (attempt, seq) is the batch's position in the run: it only grows while the run streams (an
 * attempt's batches go out in seq order, and a new attempt starts after the last one ended).
 * `stored` is the seq of the same attempt up to which everything is committed
 * (server/streams/stored-marks.ts): a watcher catches up after a reconnect from there, extended
 * through the batches it holds right after it (sdk/stream-cursor.ts).
 */
const livePosition = {
  jobId: z.string(),
  attempt: z.number().int().min(0),
  seq: z.number().int().min(0),
  stored: z.number().int().min(-1),
};
const liveVariant = <K extends StreamKind>(kind: K) => z.object({ ...livePosition, kind: z.literal(kind), items: z.array(liveItemSchemas[kind]) });

/** Socket.io event `stream`: one batch of a run, as soon as the server has fenced and claimed it. */
export const liveBatchSchema = z.discriminatedUnion('kind', [
  liveVariant('metrics'),
  liveVariant('rollouts'),
  liveVariant('logs'),
  liveVariant('matches'),
  liveVariant('boards'),
]);
export type LiveBatch = z.infer<typeof liveBatchSchema>;
export type LivePosition = Pick<LiveBatch, keyof typeof livePosition>;
/** A live batch without its position: what the server makes of a stream batch before it is placed. */
export type LiveItems = LiveBatch extends infer B ? (B extends LiveBatch ? Omit<B, keyof LivePosition> : never) : never;

// ───────────────────────────── socket.io events: server ↔ browser ─────────────────────────────

/** Rooms a browser may join: a run (job) of one of its teams, or a team's job list. */
export const runRoom = (jobId: string) => `run:${jobId}`;
export const teamRoom = (teamId: string) => `team:${teamId}`;
export const subscribeSchema = z.object({ room: z.string().regex(/^(run|team):[A-Za-z0-9_-]{1,64}$/) });
export type Subscribe = z.infer<typeof subscribeSchema>;
/** Another team's room and a missing one are refused alike (NOT_FOUND). */
export type SubscribeAnswer = { ok: true } | { ok: false; error: string };

/** Event `job`: jobs changed state (coalesced), to the team's room and to the runs' rooms. */
export interface JobsChanged {
  jobIds: string[];
}

/** How a sample ends: eos, stop, length; cancelled (the session stopped); error. */
export const SAMPLE_END_REASONS = ['eos', 'stop', 'length', 'cancelled', 'error'] as const;
/** How long the worker took for a sample: the prompt's forward pass and first token, then the rest. */
export const sampleTimingSchema = z.object({
  promptTokens: z.number().int().min(0),
  tokens: z.number().int().min(0),
  /** Request received until the first token was chosen (prefill included). */
  firstTokenMs: z.number().min(0),
  /** First token until the last: the decode rate is (tokens − 1) / this. */
  decodeMs: z.number().min(0),
});
export type SampleTiming = z.infer<typeof sampleTimingSchema>;
/** Event `sample`: an inference session's tokens as they come, then its end, to the run's room. */
export type SampleEvent = { jobId: string } & RelayedSample;
/** A sampling answer as the worker sent it, relayed by the server (a token's alternatives when asked for). */
export type RelayedSample =
  | { requestId: string; kind: 'token'; text: string; logprob: number; alternatives?: TokenAlternative[] }
  | { requestId: string; kind: 'done'; reason: (typeof SAMPLE_END_REASONS)[number]; text: string; tokens?: SampledToken[]; error?: string; timing?: SampleTiming };
/** A sampled token: its id, its own text (part of a character, for some), its log-probability. A sample's end lists them all, for scripts. */
export interface SampledToken {
  id: number;
  text: string;
  logprob: number;
}
export interface TokenAlternative {
  text: string;
  logprob: number;
}

/** The default namespace, server to browser (socket.io's typed events: `Server<ClientToServerEvents, ServerToClientEvents>`). */
export interface ServerToClientEvents {
  stream(batch: LiveBatch): void;
  job(event: JobsChanged): void;
  sample(event: SampleEvent): void;
}

/** The default namespace, browser to server. Payloads are checked with subscribeSchema. */
export interface ClientToServerEvents {
  subscribe(payload: Subscribe, ack: (answer: SubscribeAnswer) => void): void;
  unsubscribe(payload: Subscribe): void;
}

// ───────────────────────────── metric keys ─────────────────────────────

/**
 * Metric keys are `group/name`, so a page groups charts by the part before the slash without
 * knowing the metrics (as CleanRL's `charts/…`, `losses/…`). Groups in the order pages show them.
 */
export const METRIC_GROUPS = {
  reward: 'Rewards',
  episode: 'Episodes',
  loss: 'Losses',
  policy: 'Policy',
  optim: 'Optimiser',
  perf: 'Throughput',
  data: 'Data',
  eval: 'Evaluation',
  warmstart: 'Warm start',
  env: 'Environment',
} as const;
export type MetricGroup = keyof typeof METRIC_GROUPS;

export interface MetricInfo {
  description: string;
  unit?: string;
}

/** Every metric a runner emits under a fixed name. */
export const METRICS = {
  'reward/mean': { description: 'mean episode return of the learning seats (episodes that ended in an error left out)' },
  'reward/batch_mean': { description: "mean return of the training batch's sequences, as the trainer saw them" },
  'reward/batch_std': { description: "standard deviation of the training batch's returns" },
  'reward/batch_min': { description: 'lowest return in the training batch' },
  'reward/batch_max': { description: 'highest return in the training batch' },
  'reward/zero_variance_groups': { description: "share of the step's groups (episodes of one task) whose learning seats' returns are all equal: GRPO gets no gradient from them", unit: 'share' },
  'episode/count': { description: 'episodes run in the step', unit: 'episodes' },
  'episode/errors': { description: 'episodes that ended in an error (environment or runtime)', unit: 'episodes' },
  'episode/context_truncated': { description: "episodes ended because their next turn would not fit the model's context (trained on what fit)", unit: 'episodes' },
  'episode/turns': { description: 'mean turns a learning seat took per episode', unit: 'turns' },
  'episode/response_tokens': { description: 'mean tokens a learning seat wrote per episode', unit: 'tokens' },
  'episode/win_rate': { description: "multi-agent: share of the learning seats' episodes with a positive return" },
  'loss/total': { description: "the loss the optimiser minimised, mean over the step's updates (SFT: the negative log-likelihood)" },
  'loss/policy': { description: 'clipped policy-gradient loss (GRPO, PPO)' },
  'loss/value': { description: 'value-head loss (PPO)' },
  'policy/kl': { description: 'KL divergence from the reference policy (when a KL estimator is on)' },
  'policy/entropy': { description: 'mean entropy of the policy over trainable tokens' },
  'policy/clip_frac': { description: 'share of trainable tokens whose ratio was clipped' },
  'optim/grad_norm': { description: "gradient norm before clipping, mean over the step's updates" },
  'optim/lr': { description: 'learning rate used in the step' },
  'optim/step': { description: "steps the trainer had made before this one" },
  'optim/updates': { description: 'optimiser updates made in the step (epochs × minibatches, minus skipped)', unit: 'updates' },
  'optim/tokens': { description: 'trainable tokens in the training batch', unit: 'tokens' },
  'perf/tokens_per_s': { description: 'trainable tokens processed per second by the update, all epochs', unit: 'tokens/s' },
  'perf/step_s': { description: 'wall time of the whole step: rollouts and update', unit: 's' },
  'perf/update_ms': { description: 'wall time of the update phase', unit: 'ms' },
  'data/epoch': { description: 'SFT: passes over the dataset completed before this step', unit: 'epochs' },
  'eval/score': { description: 'the evaluation score: win rate in multi-agent environments, else mean return' },
  'eval/games': { description: 'games scored (errors left out)', unit: 'games' },
  'eval/errors': { description: 'games that ended in an error', unit: 'games' },
  'eval/mean_return': { description: "mean return of the evaluated policy's seat" },
  'eval/wins': { description: 'games with a positive return', unit: 'games' },
  'eval/losses': { description: 'games with a negative return', unit: 'games' },
  'eval/draws': { description: 'games with a zero return', unit: 'games' },
  'eval/win_rate': { description: 'multi-agent: wins over games scored' },
  'eval/win_rate_low': { description: 'multi-agent: the Wilson 95% interval of the win rate, lower end' },
  'eval/win_rate_high': { description: 'multi-agent: the Wilson 95% interval of the win rate, upper end' },
  'eval/draw_rate': { description: 'multi-agent: draws over games scored' },
  'eval/loss_rate': { description: 'multi-agent: losses over games scored' },
  'eval/mean_return_low': { description: 'the 95% interval of the mean return (normal approximation), lower end' },
  'eval/mean_return_high': { description: 'the 95% interval of the mean return (normal approximation), upper end' },
  'eval/mean_length': { description: 'mean episode length in moves, every player’s (a game’s length)', unit: 'moves' },
  'eval/legal_move_rate': { description: "share of the evaluated policy's moves that were among the legal actions the environment offered (environments that offer them)" },
  'eval/tool_use_rate': { description: 'environments with tools: share of episodes in which the policy made a tool call that ran' },
  'eval/success_rate': { description: 'single-agent: episodes with a positive return over episodes scored' },
  'eval/success_rate_low': { description: 'single-agent: the Wilson 95% interval of the success rate, lower end' },
  'eval/success_rate_high': { description: 'single-agent: the Wilson 95% interval of the success rate, upper end' },
  'warmstart/loss': { description: "warm start (training.warmStart): the SFT step's negative log-likelihood of the demonstrations' actions; its step is the warm start's own, counted from 0" },
  'warmstart/lr': { description: 'warm start: learning rate used in the SFT step' },
  'warmstart/grad_norm': { description: 'warm start: gradient norm before clipping' },
  'warmstart/tokens': { description: "warm start: trainable (action) tokens in the step's batch", unit: 'tokens' },
  'warmstart/epoch': { description: 'warm start: passes over the demonstrations completed before this step', unit: 'epochs' },
  'warmstart/demonstrations': { description: 'warm start: demonstration sequences that fit the context (at its first step)', unit: 'sequences' },
  'warmstart/eval_legal_move_rate': { description: "warm start: the evaluation's legal-move rate (as eval/legal_move_rate) after the warm start's last step" },
  'warmstart/eval_score': { description: "warm start: the evaluation score (as eval/score) of the policy after the warm start's last step" },
} as const satisfies Record<`${MetricGroup}/${string}`, MetricInfo>;
export type CatalogueKey = keyof typeof METRICS;

/** Keys with a part the run names (an agent, a field of the environment's info). */
export const METRIC_FAMILIES = {
  'reward/<agent>': { description: 'multi-agent: mean episode return of one agent' },
  'episode/win_rate/<agent>': { description: "multi-agent: share of the step's episodes that one agent won (a positive return)" },
  'eval/win_rate/<agent>': { description: 'multi-agent evaluation: win rate of the policy in one seat' },
  'env/<name>': { description: "mean over the step's episodes of a number the environment reported in its final step's info" },
} as const satisfies Record<`${MetricGroup}/${string}<${string}>`, MetricInfo>;

/** The part of a family key the run names: no slash (it would read as another level), within the key length. */
function part(prefix: string, name: string): string {
  const clean = name.replace(/[\s/]+/g, '_') || '_';
  return `${prefix}${clean}`.slice(0, METRIC_KEY_MAX);
}

/** `reward/<agent>`; an agent named like a catalogued reward metric (`mean`…) becomes `reward/agent_<name>`. */
export function agentRewardKey(agent: string): string {
  const key = part('reward/', agent);
  return key in METRICS ? part('reward/agent_', agent) : key;
}

/** `episode/win_rate/<agent>`: a training step's win rate of one agent. */
export function agentWinRateKey(agent: string): string {
  return part('episode/win_rate/', agent);
}

/** `eval/win_rate/<agent>`. */
export function seatWinRateKey(agent: string): string {
  return part('eval/win_rate/', agent);
}

/** `env/<name>`. */
export function envMetricKey(name: string): string {
  return part('env/', name);
}

/** The group of a key: the part before the first slash ("other" for a key without one, from an old run). */
export function metricGroup(key: string): string {
  const slash = key.indexOf('/');
  return slash > 0 ? key.slice(0, slash) : 'other';
}

/** The key without its group. */
export function metricName(key: string): string {
  return key.slice(key.indexOf('/') + 1);
}

/** What a key means: a catalogued metric or a member of a family; null for anything else. */
export function describeMetric(key: string): MetricInfo | null {
  if (key in METRICS) return METRICS[key as CatalogueKey];
  for (const [template, info] of Object.entries(METRIC_FAMILIES)) {
    const prefix = template.slice(0, template.indexOf('<'));
    const rest = key.slice(prefix.length);
    if (key.startsWith(prefix) && rest !== '' && !rest.includes('/')) return info;
  }
  return null;
}
