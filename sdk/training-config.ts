import { z } from 'zod';
import { type ModelCard } from './models';

/**
 * Every training option, once: its name (the engine's own), its default with where that default
 * comes from, its bounds and a one-line description, grouped as TRL's `grpo_config.py` groups
 * them. The manifest's `training`, the job configs, the CLI's `--set` and the launcher form read
 * these schemas, and the engine's configs (gpu-worker/engine: GRPOConfig, PPOConfig, SFTConfig,
 * ModelConfig) are their output types, so there is no renaming layer anywhere between them.
 *
 * Adding an option: add it to the group it belongs to here, then read it in the trainer. The test
 * in training-config.test.ts fails if an engine option cannot be set from a job.
 */

/** The form groups options by this, and `whetstone jobs <id> --config` prints them by it. */
export type OptionGroup = 'run' | 'model' | 'optimiser' | 'sampling' | 'grpo' | 'ppo' | 'multi-agent' | 'warm-start';

/** Each group's title, in the order the launcher's form lists them (the run page's config too). */
export const OPTION_GROUP_TITLES: Record<OptionGroup, string> = {
  run: 'Run',
  optimiser: 'Optimiser',
  sampling: 'Sampling',
  grpo: 'GRPO',
  ppo: 'PPO',
  'multi-agent': 'Multi-agent',
  'warm-start': 'Warm start (imitation before RL)',
  model: 'Model',
};

function option<T extends z.ZodType>(schema: T, group: OptionGroup, description: string): T {
  return schema.meta({ group, description }) as T;
}

const int = (min: number, max: number) => z.number().int().min(min).max(max);
const num = (min: number, max: number) => z.number().min(min).max(max);

// ── model: the policy's shape when a run starts from scratch ────────────────────────────────────

export const modelOptionsSchema = z
  .strictObject({
    contextLength: option(
      int(8, 8192).default(128),
      'model',
      'Longest sequence (prompt + completion) the model sees, in tokens. Default 128: fits the single-turn templates; a multi-turn game needs more.',
    ),
    layers: option(int(1, 48).default(2), 'model', 'Transformer blocks. Default 2: what a 2-core machine trains in minutes (OFFLINE.md).'),
    width: option(int(8, 4096).default(64), 'model', 'Residual width. Default 64 (0.1 M parameters with 2 layers).'),
    heads: option(int(1, 64).default(4), 'model', 'Attention heads; must divide width. Default 4 (head size 16).'),
    mlpRatio: option(int(1, 64).default(4), 'model', 'MLP hidden size as a multiple of width. Default 4, as in GPT-2.'),
    dropout: option(
      num(0, 0.999).default(0),
      'model',
      'Dropout while training. Default 0: RL runs are data-rich, and dropout makes the sampling policy differ from the trained one.',
    ),
    tiedHead: option(z.boolean().default(true), 'model', 'Share the token embedding with the output head (GPT-2). Default true: fewer parameters, same quality at this size.'),
  })
  .refine((m) => m.width % m.heads === 0, { message: 'heads must divide width', path: ['heads'] });
export type ModelOptions = z.output<typeof modelOptionsSchema>;

// ── optimiser: AdamW with warm-up, cosine decay and clipping (every algorithm) ──────────────────

/** The optimiser's options; the learning rate and warm-up defaults differ by algorithm. */
function optimiserOptions(defaults: { learningRate: number; learningRateWhy: string; warmupSteps: number }) {
  return {
    learningRate: option(z.number().positive().max(1).default(defaults.learningRate), 'optimiser', `Peak learning rate. Default ${defaults.learningRate}: ${defaults.learningRateWhy}`),
    warmupSteps: option(int(0, 1_000_000).default(defaults.warmupSteps), 'optimiser', `Linear warm-up from 0 over this many optimiser steps. Default ${defaults.warmupSteps}.`),
    totalSteps: option(
      int(0, 10_000_000).default(0),
      'optimiser',
      'Cosine decay to minLearningRateRatio × peak at this optimiser step. Default 0: the peak is kept after warm-up (short RL runs, verl).',
    ),
    minLearningRateRatio: option(num(0, 1).default(0.1), 'optimiser', 'Floor of the cosine decay as a share of the peak. Default 0.1 (nanoGPT, Chinchilla).'),
    beta1: option(num(0, 0.9999999).default(0.9), 'optimiser', "Adam's first-moment decay. Default 0.9 (Adam paper)."),
    beta2: option(num(0, 0.9999999).default(0.99), 'optimiser', "Adam's second-moment decay. Default 0.99 rather than 0.999: small batches and short runs (nanoGPT's choice for small models)."),
    epsilon: option(num(0, 1).default(1e-8), 'optimiser', "Adam's denominator epsilon. Default 1e-8 (Adam paper)."),
    weightDecay: option(num(0, 10).default(0), 'optimiser', 'Decoupled weight decay on matrices (AdamW). Default 0: short runs from small models do not overfit.'),
    gradClip: option(num(0, 1e6).default(1), 'optimiser', 'Clip the global gradient norm to this; 0 disables. Default 1 (verl, TRL).'),
  };
}

const seed = option(int(0, 2 ** 32 - 1).default(0), 'run', 'Seed of everything random: weights, tasks, sampling, minibatches. Default 0.');
const temperature = option(
  z.number().min(1e-6).max(5).default(1),
  'sampling',
  'Sampling temperature of rollouts; the trainer computes log-probabilities at the same one. Default 1: on-policy sampling.',
);
const epochs = (d: number, why: string) => option(int(1, 100).default(d), 'run', `Passes over each step's batch. Default ${d}: ${why}`);
const miniBatches = option(int(1, 1024).default(1), 'run', 'Optimiser updates per epoch (the batch split in this many parts). Default 1: one update per pass.');
const klCoef = option(num(0, 100).default(0), 'optimiser', 'Weight β of the KL penalty to the starting policy. Default 0 (TRL, DAPO): the clip already bounds each step; 0.001 is verl’s.');
const klEstimator = option(z.enum(['k1', 'k3']).default('k3'), 'optimiser', 'KL estimator: k3 (unbiased, non-negative; verl’s choice) or k1. Default k3.');
const entropyCoef = option(num(-10, 10).default(0), 'optimiser', 'Weight of the entropy bonus. Default 0 (verl, DAPO).');

// ── the engine's trainer configs (gpu-worker/engine's GRPOConfig, PPOConfig, SFTConfig) ─────────

export const grpoOptionsSchema = z.strictObject({
  ...optimiserOptions({ learningRate: 1e-4, learningRateWhy: 'what moved a 0.1 M-parameter policy on this machine (OFFLINE.md); use 1e-6 … 1e-5 for large pretrained models.', warmupSteps: 0 }),
  normalizeByStd: option(z.boolean().default(true), 'grpo', "Divide group advantages by the group's standard deviation (GRPO, verl). False is Dr. GRPO (mean only). Default true."),
  dropZeroVarianceGroups: option(
    z.boolean().default(true),
    'grpo',
    "Drop groups whose rewards are all equal before the update (DAPO's dynamic sampling): they carry no gradient but dilute a token mean. Default true.",
  ),
  aggregation: option(
    z.enum(['token-mean', 'seq-mean-token-mean', 'seq-sum-norm']).default('token-mean'),
    'grpo',
    'How token losses are averaged: token-mean (verl, DAPO: long answers are not down-weighted), seq-mean-token-mean (GRPO paper), seq-sum-norm (Dr. GRPO). Default token-mean.',
  ),
  normConstant: option(num(0, 1e6).default(0), 'grpo', 'The constant of seq-sum-norm; 0 means the context length (Dr. GRPO uses the generation budget). Default 0.'),
  clipLow: option(num(0, 1).default(0.2), 'grpo', 'Lower clip: the ratio stays ≥ 1 − clipLow. Default 0.2 (PPO, verl).'),
  clipHigh: option(num(0, 10).default(0.28), 'grpo', "Upper clip: the ratio stays ≤ 1 + clipHigh. Default 0.28 (DAPO's clip-higher: unlikely good tokens can grow, slowing entropy collapse)."),
  epochs: epochs(1, 'fresh samples are cheap here, and later epochs are off-policy (verl).'),
  miniBatches,
  klCoef,
  klEstimator,
  entropyCoef,
  temperature,
  advantageEpsilon: option(num(0, 1).default(1e-6), 'grpo', 'Added to the group standard deviation. Default 1e-6.'),
  seed,
});
export type GRPOOptions = z.output<typeof grpoOptionsSchema>;

export const ppoOptionsSchema = z.strictObject({
  ...optimiserOptions({ learningRate: 1e-4, learningRateWhy: 'as GRPO (OFFLINE.md).', warmupSteps: 0 }),
  gamma: option(num(0, 1).default(1), 'ppo', 'Discount γ. Default 1 (verl): episodes are short and the reward comes at the end.'),
  lambda: option(num(0, 1).default(0.95), 'ppo', 'GAE λ. Default 0.95 (GAE paper): a little bias for much less variance while the critic is young.'),
  clipLow: option(num(0, 1).default(0.2), 'ppo', 'Lower ratio clip. Default 0.2 (PPO paper).'),
  clipHigh: option(num(0, 10).default(0.2), 'ppo', 'Upper ratio clip. Default 0.2 (PPO paper).'),
  valueClip: option(num(0, 100).default(0.2), 'ppo', "Clip the value update to ± this around the old value; 0 disables. Default 0.2 (rewards here are ~1; verl's 0.5 is for rewards ~1–10)."),
  valueCoef: option(num(0, 100).default(0.5), 'ppo', 'Weight of the value loss. Default 0.5 (CleanRL).'),
  entropyCoef,
  whitenAdvantages: option(z.boolean().default(true), 'ppo', "Whiten advantages over the batch's trainable tokens. Default true (CleanRL, verl)."),
  epochs: epochs(2, 'the critic needs more than one look at each batch.'),
  miniBatches,
  klCoef,
  klEstimator,
  temperature,
  seed,
});
export type PPOOptions = z.output<typeof ppoOptionsSchema>;

export const sftOptionsSchema = z.strictObject({
  ...optimiserOptions({ learningRate: 1e-3, learningRateWhy: 'with a short warm-up it trains the small models of this engine fastest; use 1e-4 … 1e-5 for a larger pretrained policy.', warmupSteps: 20 }),
  seed,
});
export type SFTOptions = z.output<typeof sftOptionsSchema>;

// ── a run: what the job runner reads, algorithm by algorithm ─────────────────────────────────────

/** LoRA's targets: "attn" and "mlp" groups, a pretrained model's projections, the engine GPT's linear layers. */
const LORA_TARGETS = ['attn', 'mlp', 'q', 'k', 'v', 'o', 'gate', 'up', 'down', 'attn.qkv', 'attn.proj', 'mlp.fc', 'mlp.proj'] as const;

export const loraOptionsSchema = z.strictObject({
  rank: option(int(1, 1024).default(8), 'model', 'Rank r of each adapter. Default 8 (the LoRA paper’s and PEFT’s common choice).'),
  alpha: option(num(0, 1e6).default(16), 'model', 'Scale numerator: updates are multiplied by alpha / rank. Default 16 (2 × rank).'),
  targets: option(
    z.array(z.enum(LORA_TARGETS)).min(1).default(['attn', 'mlp']),
    'model',
    'Layers to adapt: "attn" (q, k, v, o), "mlp" (gate, up, down), or single projections. Default both groups (every linear layer, as QLoRA found best).',
  ),
});

const runOptions = {
  steps: option(int(1, 1_000_000).default(100), 'run', 'Training steps (a rollout phase and an update phase each, for RL).'),
  batchSize: option(int(1, 4096).default(16), 'run', 'Tasks per step for RL (each gives groupSize episodes); demonstrations per step for SFT.'),
  checkpointEvery: option(int(1, 1_000_000).default(50), 'run', 'A training checkpoint every this many steps (and always at the end).'),
  model: modelOptionsSchema.prefault({}),
  lora: option(
    z.union([z.literal(false), loraOptionsSchema]).optional(),
    'model',
    'Low-rank adapters on a frozen base: an object (rank, alpha, targets) or false (train every weight). Default: adapters of rank 8 on every linear layer when the run starts from an imported pretrained model (baseModelId), none for the engine’s own GPT. Checkpoints then hold the adapters alone.',
  ),
};

// ── warm start: supervised steps on demonstrations before the RL phase (RL runs only) ──────────

/** Options both sources of demonstrations share: the SFT phase's length and optimiser. */
const warmStartSftOptions = {
  steps: option(
    int(1, 1_000_000).default(500),
    'warm-start',
    'SFT steps before the RL phase. Default 500: math and math-tools reached 0.94–0.99 held-out exact match after 500–550 (env-templates/LEARNING.md).',
  ),
  batchSize: option(int(1, 4096).default(32), 'warm-start', 'Demonstrations per SFT step. Default 32 (LEARNING.md: math-tools, gomoku; math used 128).'),
  learningRate: option(z.number().positive().max(1).default(3e-3), 'warm-start', 'Peak SFT learning rate. Default 3e-3: what every warm start of LEARNING.md used on the 0.1 M-parameter policy.'),
  warmupSteps: option(int(0, 1_000_000).default(20), 'warm-start', 'Linear learning-rate warm-up over this many SFT steps. Default 20.'),
  decay: option(
    z.boolean().default(true),
    'warm-start',
    'Cosine decay of the learning rate to 0.1 × peak over the warm start’s steps. Default true: math-tools plateaued at 0.94 with a constant rate and reached 0.99 with decay (LEARNING.md, T1 against T3).',
  ),
};

export const warmStartSchema = z.discriminatedUnion('from', [
  z.strictObject({
    from: z.literal('bot').meta({ description: 'Imitate one of the environment’s bots, playing every seat.' }),
    bot: option(z.string().min(1).max(64), 'warm-start', 'The bot to imitate: a name in the environment’s `bots` (e.g. "oracle", "tool-user").'),
    episodes: option(
      int(1, 100_000).default(1000),
      'warm-start',
      "Episodes the bot plays to make the demonstrations (on the train rows, in order after a seeded shuffle, for a data-dependent environment). Default 1000.",
    ),
    opponents: option(
      z
        .record(z.string().min(1).max(64), z.number().min(0))
        .refine((mix) => Object.values(mix).some((w) => w > 0), 'at least one opponent must have a positive share')
        .optional(),
      'warm-start',
      'Multi-agent: bots of the environment that play the seats the warm start does not imitate, as shares of episodes (e.g. {"random": 0.5, "scripted": 0.5}, the run’s own opponents). The imitated bot then plays the learners’ seats (one seat, turn about, with switchSeats) and only its moves are learned, in positions like those the policy will meet. Unset: the bot plays every seat against itself. Gomoku, 400 SFT steps: imitating expert against random and scripted won 0.30–0.86 of 64 greedy games against scripted (3 seeds), imitating its games against itself 0.36–0.44 (env-templates/LEARNING.md, round 4).',
    ),
    augment: option(
      z.enum(['none', 'symmetries']).default('none'),
      'warm-start',
      'symmetries: every demonstration is also learned as the environment’s symmetries show it (its `symmetries`: a square board’s 8 rotations and reflections), so that the policy sees each position in every orientation — 8 × the demonstrations from the same games. The environment must define `symmetries`. Default none. Gomoku, with opponents: 0.72–0.80 against scripted on 3 seeds, where the same games without it gave 0.30–0.86 (env-templates/LEARNING.md, round 4).',
    ),
    ...warmStartSftOptions,
  }),
  z.strictObject({
    from: z.literal('dataset').meta({ description: 'Imitate the rows of a dataset version, as an SFT job reads them.' }),
    datasetVersionId: option(
      z.string().min(1).max(64),
      'warm-start',
      'A dataset version of the team’s: rows of {"prompt", "completion", "system"?} or {"messages": [...]}, as an SFT job takes them.',
    ),
    ...warmStartSftOptions,
  }),
], { error: (issue) => (issue.code === 'invalid_union' ? 'write "from": "bot" (with "bot", the bot to imitate) or "from": "dataset" (with "datasetVersionId")' : undefined) });
export type WarmStart = z.output<typeof warmStartSchema>;

/** The prefix of an `opponents` entry that names a saved checkpoint of the team's: "checkpoint:<id>". */
export const OPPONENT_CHECKPOINT = 'checkpoint:';

const rlOptions = {
  warmStart: option(
    warmStartSchema.nullable().optional(),
    'warm-start',
    'Supervised steps on demonstrations (a bot of the environment, or a dataset) before the RL phase, laid out as the rollout prompts the policy: for a task a new model cannot hit by chance (exact answers, tool calls, move syntax), where GRPO alone sees reward 0 in every group. null turns off a manifest’s warm start. Default none.',
  ),
  maskActions: option(
    z.boolean().default(true),
    'sampling',
    'Where the environment offers a turn’s legal actions (a board game’s empty cells), the policy writes only one of them (legal-move masking), in training and in its evaluations. Default true; false lets it write freely, and an illegal move costs what the environment says (Gomoku: the game).',
  ),
  groupSize: option(int(1, 1024).default(8), 'run', 'Episodes per task; GRPO compares them to form advantages. Default 8 (DeepSeekMath uses 64; 8 fits a CPU).'),
  evalEvery: option(int(1, 1_000_000).default(10), 'run', 'Evaluate the policy every this many steps, and after the last (greedy, on held-out rows where the environment reads data).'),
  evalEpisodes: option(int(0, 10_000).default(32), 'run', 'Episodes of each evaluation during training; 0 turns it off. Default 32: a Wilson interval of about ±0.15 at a rate of 0.5.'),
  maxEpisodeErrorShare: option(
    num(0, 1).default(0.5),
    'run',
    'The job fails, naming the most frequent errors, once more than this share of its episodes so far ended in an error. Default 0.5: a run mostly of errors learns nothing worth its device. 0.1 for an environment served over HTTP (its failures are a server down or broken, not a policy still learning).',
  ),
  flatRewardWarnSteps: option(
    int(0, 1_000_000).default(10),
    'run',
    'Warn when every group had equal rewards in each of the first this many steps: GRPO then has no signal to learn from. Default 10; 0 never warns.',
  ),
  learners: option(z.array(z.string()).optional(), 'multi-agent', 'Multi-agent: the agents that learn. Default: the first agent.'),
  switchSeats: option(
    z.boolean().default(false),
    'multi-agent',
    'Multi-agent, one learner: the learner plays every seat in turn (a GRPO group keeps one seat) and its warm start imitates every seat. For games where a side has the advantage (black in Gomoku), so that the policy learns both sides. Default false.',
  ),
  independentLearners: option(
    z.boolean().default(false),
    'multi-agent',
    'Multi-agent, two or more learners: each agent in `learners` learns with a policy and an optimiser of its own, all starting from the run’s initial model (after its warm start, if any), and each is checkpointed on its own (one checkpoint per agent at each step; the first learner’s is the run’s). For self-play whose sides should become different players (black and white in Gomoku); in a zero-sum game their rewards sum to zero at every step. Needs switchSeats false (each policy keeps its seat). Default false: the learners share one policy, which learns from every seat it plays — half the memory, and what a symmetric game wants.',
  ),
  opponents: option(
    z
      .record(z.string(), z.number().min(0))
      .refine((mix) => Object.values(mix).some((w) => w > 0), 'at least one opponent must have a positive share')
      .optional(),
    'multi-agent',
    'Multi-agent: what plays the other seats, as shares of episodes: a bot name ("random", "scripted"), "frozen:policy" (a copy of the learner refreshed every 10 steps), "pool:policy" (one of its past snapshots: poolEvery, poolSize, poolSampling) or "checkpoint:<id>" (a saved checkpoint of the team’s, which never learns; it needs the learner’s tokenizer and at least its context length).',
  ),
  poolEvery: option(int(1, 1_000_000).default(10), 'multi-agent', 'Steps between snapshots of the learner for "pool:policy" opponents; the first is taken before the first step. Default 10.'),
  poolSize: option(int(1, 64).default(8), 'multi-agent', 'Snapshots a "pool:policy" opponent draws from; the oldest is dropped beyond it. Default 8 (each is a copy of the model in memory).'),
  poolSampling: option(
    z.enum(['uniform', 'recency']).default('uniform'),
    'multi-agent',
    'How an episode draws its pool snapshot: uniform, or recency (the k-th oldest of n with weight k). Default uniform: the whole league of past selves.',
  ),
};

export const grpoTrainingSchema = z.strictObject({ algorithm: z.literal('grpo'), ...runOptions, ...rlOptions, ...grpoOptionsSchema.shape });
export const ppoTrainingSchema = z.strictObject({ algorithm: z.literal('ppo'), ...runOptions, ...rlOptions, ...ppoOptionsSchema.shape });
export const sftTrainingSchema = z.strictObject({ algorithm: z.literal('sft'), ...runOptions, ...sftOptionsSchema.shape });

export const trainingConfigSchema = z.discriminatedUnion('algorithm', [grpoTrainingSchema, ppoTrainingSchema, sftTrainingSchema]);
export type TrainingConfig = z.output<typeof trainingConfigSchema>;
export type Algorithm = TrainingConfig['algorithm'];
export const ALGORITHMS: readonly Algorithm[] = ['grpo', 'ppo', 'sft'];

const schemaOf = { grpo: grpoTrainingSchema, ppo: ppoTrainingSchema, sft: sftTrainingSchema } as const;

/** What a manifest or a job writes: any subset of an algorithm's options, checked by resolving. */
export type TrainingOverrides = Record<string, unknown>;

/** The names a manifest or job used before the options took the engine's names, and what to write now. */
const RENAMED: Record<string, string> = {
  clip: '"clipLow" and "clipHigh" (clip.low and clip.high before)',
  kl: '"klCoef" and "klEstimator" (kl.coefficient and kl.estimator before; klCoef 0 is "none")',
  normalizeAdvantageStd: 'normalizeByStd',
  lossAggregation: 'aggregation ("seq-mean-token-sum" is now "seq-sum-norm" with normConstant 1)',
  'model.context': 'model.contextLength',
};

// ── resolving: defaults ← manifest ← job ← --set ─────────────────────────────────────────────────

export type Resolved = { ok: true; config: TrainingConfig } | { ok: false; problems: string[] };

/**
 * The full training config of a run: each layer's options over the one before (the model's options
 * merged field by field), then the documented defaults of the algorithm the last layer names.
 * Unknown options are problems naming the closest valid one, and options under a previous name
 * say the new name.
 */
export function resolveTraining(...layers: Array<TrainingOverrides | undefined>): Resolved {
  const merged: Record<string, unknown> = {};
  for (const layer of layers) {
    if (!layer) continue;
    for (const [key, value] of Object.entries(layer)) merged[key] = mergeOption(key, merged[key], value);
  }
  merged.algorithm ??= 'grpo';
  const algorithm = merged.algorithm;
  if (typeof algorithm !== 'string' || !(algorithm in schemaOf)) {
    return { ok: false, problems: [`algorithm: must be one of ${ALGORITHMS.join(', ')}, got ${JSON.stringify(algorithm)}`] };
  }
  const schema = schemaOf[algorithm as Algorithm];
  const unknown = unknownOptions(merged, algorithm as Algorithm);
  if (unknown.length > 0) return { ok: false, problems: unknown };
  const parsed = schema.safeParse(merged);
  if (!parsed.success) return { ok: false, problems: parsed.error.issues.map((i) => `${i.path.join('.') || '(training)'}: ${i.message}`) };
  const clashes = combinationProblems(parsed.data);
  if (clashes.length > 0) return { ok: false, problems: clashes };
  return { ok: true, config: parsed.data };
}

/**
 * Options each valid alone that make no sense together. Checked here, after every layer is merged,
 * because the clash may come from two layers (the manifest's switchSeats, the job's learners).
 */
function combinationProblems(c: TrainingConfig): string[] {
  if (c.algorithm === 'sft' || !c.independentLearners) return [];
  const problems: string[] = [];
  const learners = c.learners ?? [];
  if (learners.length < 2) {
    problems.push(`independentLearners: needs two or more learners (e.g. "learners": ["black", "white"]); ${learners.length === 1 ? 'one learner' : 'the default learner'} already has a policy of its own`);
  }
  if (new Set(learners).size !== learners.length) problems.push('learners: an agent is named twice; with independentLearners each gets one policy');
  if (c.switchSeats) problems.push('switchSeats: with independentLearners each policy keeps its own seat; set switchSeats to false');
  return problems;
}

/** Options whose object value a later layer changes field by field rather than replaces. */
const NESTED = ['model', 'warmStart'] as const;

/**
 * A layer's value over the one before: the model's options field by field; a warm start field by
 * field while it keeps the same source (`from`), replaced when the source changes (the fields
 * differ) or by null (no warm start); anything else replaced.
 */
function mergeOption(key: string, before: unknown, value: unknown): unknown {
  if (!(NESTED as readonly string[]).includes(key) || !isRecord(value) || !isRecord(before)) return value;
  if (key === 'warmStart' && value.from !== undefined && value.from !== before.from) return value;
  return { ...before, ...value };
}

/** Every option name an algorithm takes (model options as `model.<name>`). */
export function optionNames(algorithm: Algorithm): string[] {
  const names = Object.keys(schemaOf[algorithm].shape).filter((k) => k !== 'model');
  return [...names, ...Object.keys(modelOptionsSchema.shape).map((k) => `model.${k}`)];
}

function unknownOptions(merged: Record<string, unknown>, algorithm: Algorithm): string[] {
  const valid = optionNames(algorithm);
  const given = Object.entries(merged).flatMap(([k, v]) => (k === 'model' && isRecord(v) ? Object.keys(v).map((m) => `model.${m}`) : [k]));
  const problems: string[] = [];
  for (const name of given) {
    if (valid.includes(name)) continue;
    if (name in RENAMED) {
      problems.push(`${name}: renamed; write ${RENAMED[name]}`);
      continue;
    }
    const elsewhere = ALGORITHMS.filter((a) => a !== algorithm && optionNames(a).includes(name));
    if (elsewhere.length > 0) {
      problems.push(`${name}: not an option of ${algorithm} (it belongs to ${elsewhere.join(', ')})`);
      continue;
    }
    const near = closest(name, valid);
    problems.push(`${name}: unknown option${near ? `; did you mean \`${near}\`?` : ''}`);
  }
  return problems;
}

/** The valid name nearest to a misspelt one (case-insensitive edit distance ≤ a third of its length). */
export function closest(name: string, valid: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of valid) {
    const d = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(2, Math.floor(name.length / 3)) ? best : null;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// ── the engine's configs, taken straight from a resolved run ─────────────────────────────────────

/** The options of `schema` out of a resolved run: the same names, so this only selects. */
export function pickOptions<S extends z.ZodObject>(schema: S, training: Record<string, unknown>): z.output<S> {
  return Object.fromEntries(Object.keys(schema.shape).map((k) => [k, training[k]])) as z.output<S>;
}

// ── `--set key=value` ────────────────────────────────────────────────────────────────────────────

/**
 * Applies one `key=value` to overrides: the value is read as JSON when it parses (numbers,
 * booleans, objects, null), else kept as a string; `model.width=128` sets a model option and
 * `warmStart.steps=200` one field of the warm start (merged over the manifest's).
 */
export function applySet(overrides: TrainingOverrides, assignment: string): TrainingOverrides {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new Error(`--set ${assignment}: write key=value, e.g. --set clipHigh=0.3`);
  const key = assignment.slice(0, eq).trim();
  const raw = assignment.slice(eq + 1).trim();
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // a bare word such as seq-sum-norm or k1
  }
  const path = key.split('.');
  const [parent, child] = path;
  if (path.length > 2 || (path.length === 2 && !(NESTED as readonly string[]).includes(parent))) {
    throw new Error(`--set ${key}: options are top-level names, model.<name> or warmStart.<name>`);
  }
  if (path.length === 2) return { ...overrides, [parent]: { ...(isRecord(overrides[parent]) ? overrides[parent] : {}), [child]: value } };
  return { ...overrides, [key]: value };
}

// ── descriptions, for help text, the launcher form and the editor ────────────────────────────────

export interface OptionDoc {
  name: string;
  group: OptionGroup;
  description: string;
  default: unknown;
  /** What a form field for it takes, read from the option's schema (the launcher builds its form from this). */
  input: OptionInput;
}

export type OptionInput =
  | { kind: 'number'; integer: boolean; min: number | null; max: number | null }
  | { kind: 'boolean' }
  | { kind: 'choice'; values: string[] }
  /** A list of names (multi-agent `learners`). */
  | { kind: 'names' }
  /** Names with weights (multi-agent `opponents`). */
  | { kind: 'weights' }
  /** Anything else (an object of options), written as JSON. */
  | { kind: 'json' };

/** The field an option's schema asks for, seen through its default and optional wrappers. */
function inputOf(schema: z.ZodType): OptionInput {
  let s = schema as z.ZodType & { _zod: { def: { type: string; innerType?: z.ZodType } } };
  while (s._zod.def.innerType && ['default', 'optional', 'prefault', 'nullable'].includes(s._zod.def.type)) s = s._zod.def.innerType as typeof s;
  if (s instanceof z.ZodNumber) {
    const finite = (n: number | null) => (n === null || !Number.isFinite(n) ? null : n);
    return { kind: 'number', integer: !!s.isInt, min: finite(s.minValue), max: finite(s.maxValue) };
  }
  if (s instanceof z.ZodBoolean) return { kind: 'boolean' };
  if (s instanceof z.ZodEnum) return { kind: 'choice', values: s.options.map(String) };
  if (s instanceof z.ZodArray) return { kind: 'names' };
  if (s instanceof z.ZodRecord) return { kind: 'weights' };
  return { kind: 'json' };
}

/** Each option of an algorithm with its group, description and default, in declaration order. */
export function describeOptions(algorithm: Algorithm): OptionDoc[] {
  const defaults = resolveTraining({ algorithm });
  if (!defaults.ok) throw new Error(defaults.problems.join('; '));
  const docs: OptionDoc[] = [];
  const add = (name: string, schema: z.ZodType, value: unknown) => {
    const meta = z.globalRegistry.get(schema) as { group?: OptionGroup; description?: string } | undefined;
    if (meta?.group) docs.push({ name, group: meta.group, description: meta.description ?? '', default: value, input: inputOf(schema) });
  };
  const config = defaults.config as Record<string, unknown>;
  for (const [name, schema] of Object.entries(schemaOf[algorithm].shape)) {
    if (name !== 'model') add(name, schema as z.ZodType, config[name]);
  }
  for (const [name, schema] of Object.entries(modelOptionsSchema.shape)) add(`model.${name}`, schema as z.ZodType, (config.model as Record<string, unknown>)[name]);
  return docs;
}

// ── what a run needs: the server refuses a job no worker could hold ──────────────────────────────

/** Parameters of a GPT with these options (embeddings included); gpu-worker/engine's models count the same. */
export function countModelParameters(m: Pick<ModelOptions, 'contextLength' | 'layers' | 'width' | 'mlpRatio' | 'tiedHead'> & { vocabSize: number; valueHead: boolean }): number {
  const d = m.width;
  const h = m.mlpRatio * d;
  const perLayer = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * h + h) + (h * d + d);
  return m.vocabSize * d + m.contextLength * d + m.layers * perLayer + 2 * d + (m.tiedHead ? 0 : d * m.vocabSize) + (m.valueHead ? d + 1 : 0);
}

/**
 * About how many bytes a run of this config needs on its device, at float32: weights, gradients,
 * Adam's two moments and a KL reference (when klCoef > 0); the activations of one minibatch
 * (residual stream, MLP, attention weights, logits); and the KV cache of a step's sampling. Meant
 * to refuse what cannot fit anywhere (a 10-billion-parameter typo), not to pack devices tightly.
 */
export function estimateTrainingBytes(training: TrainingConfig, vocabSize = 128): number {
  const m = training.model;
  const params = countModelParameters({ ...m, vocabSize, valueHead: training.algorithm === 'ppo' });
  const copies = 4 + ('klCoef' in training && training.klCoef > 0 ? 1 : 0);
  const sequences = training.algorithm === 'sft' ? training.batchSize : training.batchSize * training.groupSize;
  const perUpdate = Math.ceil(sequences / ('miniBatches' in training ? training.miniBatches : 1));
  const tokens = perUpdate * m.contextLength;
  const perTokenPerLayer = (6 + 2 * m.mlpRatio) * m.width + m.heads * m.contextLength;
  const activations = tokens * (m.layers * perTokenPerLayer + 3 * vocabSize);
  const kvCache = training.algorithm === 'sft' ? 0 : sequences * m.layers * 2 * m.contextLength * m.width;
  return 4 * (params * copies + activations + kvCache);
}

/**
 * Estimated bytes of a run that starts from an imported pretrained model of `card`'s shape: f32
 * weights (the engine widens bf16), what trains (adapters, or every weight with its gradient and
 * Adam's two moments), a KL reference (a copy of what trains), activations and the rollout's KV cache.
 */
export function estimatePretrainedBytes(training: TrainingConfig, card: Pick<ModelCard, 'parameters' | 'layers' | 'hiddenSize' | 'heads' | 'kvHeads' | 'vocabSize' | 'headDim'>, contextLength: number): number {
  const lora = 'lora' in training ? training.lora : undefined;
  const full = lora === false;
  const trainable = full ? card.parameters : card.layers * 7 * 2 * card.hiddenSize * (lora?.rank ?? 8);
  // Under LoRA the KL reference shares the frozen base with the policy and copies only the adapters (gpu-worker/engine/reference.ts).
  const reference = 'klCoef' in training && training.klCoef > 0 ? (full ? card.parameters : trainable) : 0;
  const sequences = training.algorithm === 'sft' ? training.batchSize : training.batchSize * training.groupSize;
  const perUpdate = Math.ceil(sequences / ('miniBatches' in training ? training.miniBatches : 1));
  const tokens = perUpdate * contextLength;
  const activations = tokens * (card.layers * (12 * card.hiddenSize + card.heads * contextLength) + 3 * card.vocabSize);
  const headDim = card.headDim ?? card.hiddenSize / card.heads;
  const kvCache = training.algorithm === 'sft' ? 0 : sequences * card.layers * 2 * contextLength * card.kvHeads * headDim;
  return 4 * (card.parameters + 3 * trainable + reference + activations + kvCache);
}