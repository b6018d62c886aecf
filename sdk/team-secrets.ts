/**
 * Team secrets as the manifest and the API name them, and how an HTTP environment's headers are
 * made from them: the manifest says `"Authorization": { "secret": "TOKEN", "prefix": "Bearer " }`
 * and what plays the environment (the worker running a job, the server's dry run and play
 * console) gets the team's value of TOKEN, never the manifest.
 */
import { z } from 'zod';

export const SECRET_NAME_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;
export const MAX_SECRET_VALUE_LENGTH = 8192;

export const secretNameSchema = z
  .string()
  .regex(SECRET_NAME_PATTERN, 'upper-case letters, digits and underscores, starting with a letter (at most 64), such as API_TOKEN');
export const secretValueSchema = z.string().min(1, 'a secret cannot be empty').max(MAX_SECRET_VALUE_LENGTH, `at most ${MAX_SECRET_VALUE_LENGTH} characters`);

/** Header names whose value is a credential: written in clear in a manifest, they would be readable by every member. */
function looksLikeCredential(header: string): boolean {
  const h = header.toLowerCase();
  return ['authorization', 'proxy-authorization', 'x-api-key', 'cookie'].includes(h) || h.includes('token') || h.includes('secret');
}

const headerName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/, 'an HTTP header name');
const fromSecret = z.strictObject({
  secret: secretNameSchema.describe("The team secret whose value is sent (set by an admin under the team's Secrets)."),
  prefix: z.string().max(100).regex(/^[^\r\n]*$/, 'one line').optional().describe('Sent before the value, such as "Bearer ".'),
});
const plain = z.string().max(4000).regex(/^[^\r\n]*$/, 'one line');

export const serverHeadersSchema = z
  .record(headerName, z.union([plain, fromSecret]))
  .superRefine((headers, ctx) => {
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value === 'string' && looksLikeCredential(name)) {
        ctx.addIssue({ code: 'custom', path: [name], message: `${name} carries a credential: never write it in the manifest; put it in a team secret and write { "secret": "NAME", "prefix": "Bearer " }` });
      }
    }
  })
  .describe('Headers sent with every call: a plain string, or { "secret": "NAME", "prefix"?: "Bearer " } for a value taken from a team secret.');

export type ServerHeaders = z.infer<typeof serverHeadersSchema>;

/** The team secrets a manifest's headers name, without repeats. */
export function secretNamesOf(headers: ServerHeaders | undefined): string[] {
  return [...new Set(Object.values(headers ?? {}).flatMap((v) => (typeof v === 'string' ? [] : [v.secret])))];
}

/** What the environment's headers need that the team has not set, as the message every path shows. */
function missingSecretsMessage(missing: string[]): string {
  const names = missing.join(', ');
  const which = missing.length === 1 ? `the team secret ${names}, which is not set` : `the team secrets ${names}, which are not set`;
  return `The environment's headers use ${which}: a team admin sets ${missing.length === 1 ? 'it' : 'them'} under the team's Secrets (Team settings → Secrets, or \`whetstone secrets set ${missing[0]}\`)`;
}

/** What an HTTP header's value may hold: visible Latin-1, spaces and tabs (no line breaks). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * The headers to send: plain values as written, secret ones from `secrets` (name → value, only
 * the names this environment uses). A problem names the secret and the header, never a value.
 */
export function resolveHeaders(headers: ServerHeaders | undefined, secrets: Record<string, string>): { ok: true; headers: Record<string, string> } | { ok: false; problem: string } {
  const out: Record<string, string> = {};
  const missing: string[] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (typeof value === 'string') out[name] = value;
    else if (!Object.hasOwn(secrets, value.secret)) missing.push(value.secret);
    else if (!HEADER_VALUE.test(secrets[value.secret])) {
      return { ok: false, problem: `The team secret ${value.secret} cannot be sent as the header ${name}: it holds a line break or a character HTTP headers cannot carry; a team admin sets it again under the team's Secrets` };
    } else out[name] = `${value.prefix ?? ''}${secrets[value.secret]}`;
  }
  return missing.length > 0 ? { ok: false, problem: missingSecretsMessage([...new Set(missing)]) } : { ok: true, headers: out };
}
