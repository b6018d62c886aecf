import path from 'node:path';
import { z } from 'zod';
import { repoRoot } from './paths';

// Every environment variable Whetstone reads, parsed once at start. README.md lists them.
const flag = z
  .enum(['0', '1', 'true', 'false', ''])
  .optional()
  .transform((v) => v === '1' || v === 'true');

const envSchema = z.object({
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgresql:// URL')
    .refine((v) => URL.canParse(v), 'is not a valid URL')
    .optional(),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  WHETSTONE_HOME: z.string().min(1).default(path.join(repoRoot, '.whetstone')),
  /** The address users reach the server at, for printed links; defaults to http://HOST:PORT. */
  WHETSTONE_PUBLIC_URL: z.url().optional(),
  /** Next.js in development mode (hot reload) instead of the production build. */
  WHETSTONE_DEV: flag,
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /** Start one worker daemon beside the server (local mode). */
  WHETSTONE_LOCAL_WORKER: z
    .enum(['0', '1', 'true', 'false'])
    .default('1')
    .transform((v) => v === '1' || v === 'true'),
  /** Signs session cookies; every server replica must share it. Default: made once, kept in WHETSTONE_HOME. */
  WHETSTONE_AUTH_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  /** The Hugging Face hub `models import hf:<repo>` downloads from (a mirror, or a local one). */
  HF_ENDPOINT: z
    .url()
    .default('https://huggingface.co')
    .transform((v) => v.replace(/\/+$/, '')),
  /** The hub token for gated and private repos (read access is enough). */
  HF_TOKEN: z.string().regex(/^hf_\w+$/, 'must be a Hugging Face access token (hf_…)').optional(),
});

export type Env = z.infer<typeof envSchema> & { WHETSTONE_HOME: string };

export class EnvError extends Error {}

/** Parses the environment; throws EnvError naming every bad variable. */
export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? '?');
      // A secret is not printed, even a malformed one (it may be a real token with a typo).
      const shown = /SECRET|TOKEN/.test(name) ? '(hidden)' : JSON.stringify(source[name] ?? '');
      return `  ${name}=${shown}: ${issue.message}`;
    });
    throw new EnvError(`Invalid environment variable${lines.length > 1 ? 's' : ''}:\n${lines.join('\n')}`);
  }
  return { ...parsed.data, WHETSTONE_HOME: path.resolve(parsed.data.WHETSTONE_HOME) };
}
