/**
 * The manifest of an environment served over HTTP, made from a few answers (the CLI's `env create
 * --http`, the IDE's "Served over HTTP" start): one source for both, so they make the same
 * version from the same answers. What each field means: docs/http-environments.md.
 */
import { z } from 'zod';
import { secretNameSchema } from './team-secrets';

const httpUrl = z
  .string()
  .max(2000)
  .refine((u) => URL.canParse(u) && ['http:', 'https:'].includes(new URL(u).protocol), 'an http(s) URL, such as http://127.0.0.1:8081');

/** The answers as the API takes them (the IDE's form); the name comes beside them. */
export const httpAnswersSchema = z
  .strictObject({
    urls: z.array(httpUrl).min(1, 'at least one server URL').max(64),
    kind: z.enum(['single-turn', 'multi-turn', 'multi-agent']),
    /** A multi-agent game's agents, in turn order. */
    agents: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]*$/, 'letters, digits, _ and -, starting with a letter')).max(16).optional(),
    maxTurns: z.number().int().min(1).max(1000).optional(),
    maxTokens: z.number().int().min(1).max(4096).optional(),
    timeoutSeconds: z.number().positive().max(3600).optional(),
    promptField: z.string().min(1).max(200).optional(),
    tokenSecret: secretNameSchema.optional(),
  })
  .superRefine((a, ctx) => {
    if (a.kind === 'multi-agent' && (a.agents?.length ?? 0) < 2) ctx.addIssue({ code: 'custom', path: ['agents'], message: 'a multi-agent game names two agents or more, in turn order' });
    if (a.kind !== 'multi-agent' && a.agents !== undefined) ctx.addIssue({ code: 'custom', path: ['agents'], message: 'agents go with kind multi-agent' });
    if (a.agents && new Set(a.agents).size !== a.agents.length) ctx.addIssue({ code: 'custom', path: ['agents'], message: 'agent names must be unique' });
  });

export interface HttpEnvironmentAnswers {
  name: string;
  /** The game's servers: one, or one per process (episodes are spread by instance id). */
  urls: string[];
  kind: 'single-turn' | 'multi-turn' | 'multi-agent';
  /** A multi-agent game's agents, in turn order (docs/http-environments.md, "Several agents"). */
  agents?: string[];
  /** Turns of a multi-turn or multi-agent game (default 8; all agents' turns together). */
  maxTurns?: number;
  /** Tokens a turn may have (the response's limit is this times the turns); the manifest's default when unset. */
  maxTokens?: number;
  timeoutSeconds?: number;
  promptField?: string;
  /** A team secret sent as `Authorization: Bearer <value>` (a server behind a token). */
  tokenSecret?: string;
  /** The dataset file's name, when the game reads rows (its text travels beside the manifest). */
  datasetFile?: string;
}

export function httpManifest(a: HttpEnvironmentAnswers): Record<string, unknown> {
  const turns = a.kind === 'single-turn' ? 1 : (a.maxTurns ?? 8);
  return {
    name: a.name,
    version: '1.0.0',
    description: `Served over HTTP by ${a.urls.join(', ')}.`,
    kind: a.kind,
    agents: a.kind === 'multi-agent' && a.agents ? a.agents : ['agent'],
    limits: { maxTurns: turns, ...(a.maxTokens !== undefined ? { maxTokensPerTurn: a.maxTokens, maxResponseTokens: a.maxTokens * turns } : {}) },
    ...(a.datasetFile ? { dataset: { train: a.datasetFile } } : {}),
    server: {
      urls: a.urls,
      ...(a.timeoutSeconds !== undefined ? { timeoutSeconds: a.timeoutSeconds } : {}),
      ...(a.promptField !== undefined ? { promptField: a.promptField } : {}),
      ...(a.tokenSecret !== undefined ? { headers: { Authorization: { secret: a.tokenSecret, prefix: 'Bearer ' } } } : {}),
    },
    // An HTTP game has no bots to play the other seats: every agent is a learner, one policy
    // learning from every seat (self-play).
    ...(a.kind === 'multi-agent' && a.agents ? { training: { learners: a.agents } } : {}),
  };
}
