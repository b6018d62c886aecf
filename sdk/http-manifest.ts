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
export const httpAnswersSchema = z.strictObject({
  urls: z.array(httpUrl).min(1, 'at least one server URL').max(64),
  kind: z.enum(['single-turn', 'multi-turn']),
  maxTurns: z.number().int().min(1).max(1000).optional(),
  maxTokens: z.number().int().min(1).max(4096).optional(),
  timeoutSeconds: z.number().positive().max(3600).optional(),
  promptField: z.string().min(1).max(200).optional(),
  tokenSecret: secretNameSchema.optional(),
});

export interface HttpEnvironmentAnswers {
  name: string;
  /** The game's servers: one, or one per process (episodes are spread by instance id). */
  urls: string[];
  kind: 'single-turn' | 'multi-turn';
  /** Turns of a multi-turn game (default 8). */
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
    agents: ['agent'],
    limits: { maxTurns: turns, ...(a.maxTokens !== undefined ? { maxTokensPerTurn: a.maxTokens, maxResponseTokens: a.maxTokens * turns } : {}) },
    ...(a.datasetFile ? { dataset: { train: a.datasetFile } } : {}),
    server: {
      urls: a.urls,
      ...(a.timeoutSeconds !== undefined ? { timeoutSeconds: a.timeoutSeconds } : {}),
      ...(a.promptField !== undefined ? { promptField: a.promptField } : {}),
      ...(a.tokenSecret !== undefined ? { headers: { Authorization: { secret: a.tokenSecret, prefix: 'Bearer ' } } } : {}),
    },
  };
}
