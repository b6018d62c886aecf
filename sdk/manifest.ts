import { z } from 'zod';
import { serverHeadersSchema } from './team-secrets';
import { resolveTraining, type TrainingConfig, type TrainingOverrides } from './training-config';

/**
 * The manifest stored beside an environment's code (`manifest.json`): what it is, its limits and
 * the training configuration an experiment starts from. Validated on save and when a job loads it.
 */

const positiveInt = z.number().int().positive();

/** Episode limits the rollout runtime enforces (OpenTinker's response-token, per-turn and turn limits). */
const limitsSchema = z.object({
  maxTurns: positiveInt.max(1000).default(1).describe('Policy turns per agent per episode; tool calls count as turns.'),
  maxTokensPerTurn: positiveInt.max(65536).default(64).describe('Tokens the policy may generate in one turn.'),
  maxResponseTokens: positiveInt.max(1_000_000).default(256).describe('Tokens the policy may generate over the whole episode.'),
});

/**
 * The manifest's `training`: any options of sdk/training-config.ts, checked by resolving them over
 * the documented defaults but kept as written, so that a job's options are merged over what the
 * author wrote and an algorithm a job switches to gets its own defaults, not the manifest
 * algorithm's. `manifestTraining(m)` is the resolved config.
 */
const manifestTrainingSchema = z
  .record(z.string(), z.unknown())
  .default({})
  .superRefine((raw, ctx) => {
    const resolved = resolveTraining(raw);
    if (!resolved.ok) for (const problem of resolved.problems) ctx.addIssue({ code: 'custom', message: problem, path: [] });
  }) as z.ZodType<TrainingOverrides, TrainingOverrides | undefined>;

/**
 * An environment served over HTTP (OpenTinker's game-server protocol, docs/http-environments.md)
 * instead of code run in the sandbox: the rollouts call its servers.
 */
const serverSchema = z
  .object({
    urls: z
      .array(z.string().url().refine((u) => /^https?:\/\//.test(u), 'an http:// or https:// URL'))
      .min(1)
      .max(64)
      .describe("The game server's URL, or one per server process (shards: an episode goes to crc32(instance_id) of them)."),
    timeoutSeconds: z.number().positive().max(3600).default(60).describe('How long a call may take.'),
    resetTimeoutSeconds: z.number().positive().max(3600).optional().describe('How long a /reset may take (default: timeoutSeconds).'),
    retries: z.number().int().min(0).max(10).default(2).describe('Tries again for calls the server cannot have seen (no connection, 503); never for a step once sent.'),
    promptField: z.string().min(1).max(100).default('prompt').describe("The dataset row's field shown before the reset observation."),
    headers: serverHeadersSchema.optional(),
  })
  .describe('Served over HTTP: the rollouts call these servers instead of running code in the sandbox.');

/** An environment's name in its team (the manifest's, the API's and the CLI's). */
export const environmentNameSchema = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lower-case letters, digits and dashes');

const semver = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

export const manifestSchema = z
  .object({
    name: environmentNameSchema.describe("The environment's name in its team: lower-case letters, digits and dashes."),
    version: z.string().regex(semver, 'a semantic version such as 1.0.0').describe('A semantic version such as 1.0.0.'),
    description: z.string().max(2000).default('').describe('One or two sentences shown in lists.'),
    kind: z.enum(['single-turn', 'multi-turn', 'multi-agent']).describe('single-turn (one answer), multi-turn (turns with the environment, tools), or multi-agent (several agents in turn).'),
    entry: z.string().default('env.ts').describe('The file whose default export is the environment definition.'),
    agents: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]*$/))
      .min(1)
      .default(['agent'])
      .describe('Agents, in turn order for multi-agent environments; single-agent environments have "agent".'),
    dataset: z
      .object({ train: z.string().describe('JSONL file of training rows.'), heldOut: z.string().optional().describe('JSONL file of held-out rows, for evaluation.') })
      .optional()
      .describe("JSONL files of the environment's folder, for data-dependent environments."),
    limits: limitsSchema.prefault({}).describe('Episode limits the rollout runtime enforces.'),
    server: serverSchema.optional(),
    training: manifestTrainingSchema,
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
    const resolved = resolveTraining(m.training);
    const learners = resolved.ok && 'learners' in resolved.config ? (resolved.config.learners ?? []) : [];
    for (const [i, learner] of learners.entries()) {
      if (!m.agents.includes(learner)) ctx.addIssue({ code: 'custom', path: ['training', 'learners', i], message: `unknown agent "${learner}"` });
    }
  });

export type Manifest = z.infer<typeof manifestSchema>;

/** Parses a manifest, returning readable problems ("limits.maxTurns: …") instead of throwing. */
export function parseManifest(input: unknown): { ok: true; manifest: Manifest } | { ok: false; problems: string[] } {
  const result = manifestSchema.safeParse(input);
  if (result.success) return { ok: true, manifest: result.data };
  return { ok: false, problems: result.error.issues.map((i) => `${i.path.join('.') || '(manifest)'}: ${i.message}`) };
}

/** A parsed manifest's training config, resolved over the documented defaults (it was checked when parsed). */
export function manifestTraining(manifest: { training: TrainingOverrides }): TrainingConfig {
  const resolved = resolveTraining(manifest.training);
  if (!resolved.ok) throw new Error(`invalid manifest training: ${resolved.problems.join('; ')}`);
  return resolved.config;
}
