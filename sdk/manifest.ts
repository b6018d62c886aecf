import { z } from 'zod';

/**
 * The manifest stored beside an environment's code (`manifest.json`): what it is, its limits and
 * the training configuration an experiment starts from. Validated on save and when a job loads it.
 */

const positiveInt = z.number().int().positive();

/** Episode limits the rollout runtime enforces (OpenTinker's response-token, per-turn and turn limits). */
export const limitsSchema = z.object({
  /** Policy turns per agent per episode; tool calls count as turns. */
  maxTurns: positiveInt.max(1000).default(1),
  /** Tokens the policy may generate in one turn. */
  maxTokensPerTurn: positiveInt.max(65536).default(64),
  /** Tokens the policy may generate over the whole episode. */
  maxResponseTokens: positiveInt.max(1_000_000).default(256),
});

/** Which players sit opposite a learning agent, as shares of episodes (multi-agent only). */
export const opponentMixSchema = z
  .record(z.string(), z.number().min(0))
  .refine((mix) => Object.values(mix).some((w) => w > 0), 'at least one opponent must have a positive share');

/**
 * The default training configuration. Field names follow the peers' (verl, TRL, Tinker) where they
 * agree; every field has a documented default so a manifest may give only what it changes.
 */
export const trainingDefaultsSchema = z.object({
  algorithm: z.enum(['grpo', 'ppo', 'sft']).default('grpo'),
  /** Optimiser steps. */
  steps: positiveInt.default(100),
  /** Tasks per step (each task gives `groupSize` episodes). */
  batchSize: positiveInt.default(16),
  /** Episodes per task for GRPO advantages. */
  groupSize: positiveInt.default(8),
  learningRate: z.number().positive().max(1).default(1e-4),
  temperature: z.number().positive().max(5).default(1),
  /** PPO clip range below and above 1 (DAPO's clip-higher when they differ). */
  clip: z.object({ low: z.number().positive().default(0.2), high: z.number().positive().default(0.2) }).prefault({}),
  kl: z
    .object({ estimator: z.enum(['none', 'k1', 'k3']).default('none'), coefficient: z.number().min(0).default(0.001) })
    .prefault({}),
  /** Divide group advantages by their standard deviation (verl) or only subtract the mean (Dr. GRPO). */
  normalizeAdvantageStd: z.boolean().default(true),
  lossAggregation: z.enum(['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean']).default('token-mean'),
  evalEvery: positiveInt.default(10),
  checkpointEvery: positiveInt.default(50),
  seed: z.number().int().min(0).default(0),
  /** Multi-agent: the agents that learn (default: the first), and what plays the others. */
  learners: z.array(z.string()).optional(),
  opponents: opponentMixSchema.optional(),
});

const semver = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

export const manifestSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lower-case letters, digits and dashes'),
    version: z.string().regex(semver, 'a semantic version such as 1.0.0'),
    description: z.string().max(2000).default(''),
    kind: z.enum(['single-turn', 'multi-turn', 'multi-agent']),
    /** The file whose default export is the environment definition. */
    entry: z.string().default('env.ts'),
    /** Agents, in turn order for multi-agent environments; single-agent environments have "agent". */
    agents: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]*$/)).min(1).default(['agent']),
    /** JSONL files of the environment's folder, for data-dependent environments. */
    dataset: z.object({ train: z.string(), heldOut: z.string().optional() }).optional(),
    limits: limitsSchema.prefault({}),
    training: trainingDefaultsSchema.prefault({}),
  })
  .superRefine((m, ctx) => {
    if (new Set(m.agents).size !== m.agents.length) ctx.addIssue({ code: 'custom', path: ['agents'], message: 'agent names must be unique' });
    if (m.kind !== 'multi-agent' && m.agents.length !== 1) {
      ctx.addIssue({ code: 'custom', path: ['agents'], message: `a ${m.kind} environment has exactly one agent` });
    }
    if (m.kind === 'single-turn' && m.limits.maxTurns !== 1) {
      ctx.addIssue({ code: 'custom', path: ['limits', 'maxTurns'], message: 'a single-turn environment has maxTurns 1' });
    }
    if (m.limits.maxTokensPerTurn > m.limits.maxResponseTokens) {
      ctx.addIssue({ code: 'custom', path: ['limits', 'maxTokensPerTurn'], message: 'cannot exceed maxResponseTokens' });
    }
    for (const [i, learner] of (m.training.learners ?? []).entries()) {
      if (!m.agents.includes(learner)) ctx.addIssue({ code: 'custom', path: ['training', 'learners', i], message: `unknown agent "${learner}"` });
    }
  });

export type Manifest = z.infer<typeof manifestSchema>;
export type ManifestInput = z.input<typeof manifestSchema>;
export type TrainingDefaults = z.infer<typeof trainingDefaultsSchema>;
export type Limits = z.infer<typeof limitsSchema>;

/** Parses a manifest, returning readable problems ("limits.maxTurns: …") instead of throwing. */
export function parseManifest(input: unknown): { ok: true; manifest: Manifest } | { ok: false; problems: string[] } {
  const result = manifestSchema.safeParse(input);
  if (result.success) return { ok: true, manifest: result.data };
  return { ok: false, problems: result.error.issues.map((i) => `${i.path.join('.') || '(manifest)'}: ${i.message}`) };
}
