/**
 * The batch script of a Whetstone worker under Slurm: `workerBatchScript({...})` gives the text
 * that `sbatch()` (./slurm.ts) sends on sbatch's stdin. The script changes to the worker's install
 * (a checkout on the cluster's shared filesystem, `npm ci` done) and `exec`s the daemon, so that
 * the daemon is the batch shell's process and gets Slurm's `--signal=B:USR1@N` notice itself
 * (`B:` signals reach only the batch shell: docs/slurm.md). It runs the daemon as
 * `npm run worker` does (tsx), but as `node --import tsx` without npm or the tsx CLI in between,
 * either of which would stand between Slurm's signal and the daemon.
 *
 * The registration token is never in the script's text (Slurm keeps the script, and
 * `scontrol write batch_script` prints it): the daemon reads WHETSTONE_WORKER_TOKEN from the job's
 * environment (sbatch's `env`, named in --export, holds it) or the 0600 file `tokenFile` names.
 * Every value written into the script is single-quoted for bash.
 */
import path from 'node:path';
import { z } from 'zod';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Printable text without control characters (a newline would end a line of the script). */
const oneLine = (what: string) =>
  z.string().refine((s) => [...s].every((ch) => ch.charCodeAt(0) >= 0x20 && ch.charCodeAt(0) !== 0x7f), `${what} must be one line without control characters`);
/** A registration token's shape (wst_ and a base64url secret: server/workers/credentials.ts). */
const TOKEN_SHAPE = /wst_[A-Za-z0-9_-]{16,}/;
const noToken = (what: string) => (s: string) => !TOKEN_SHAPE.test(s) || `${what} holds a registration token (wst_…): the token goes in WHETSTONE_WORKER_TOKEN or a token file, never in the script`;
const absolutePath = (what: string) =>
  oneLine(what)
    .min(1, `${what} is empty`)
    .refine((p) => path.posix.isAbsolute(p), `${what} must be an absolute path`);

/** The URL, or null when it is none (.url() reports that; later checks must not throw). */
function parseUrl(u: string): URL | null {
  try {
    return new URL(u);
  } catch {
    return null;
  }
}

const inputSchema = z
  .object({
    /** The checkout the worker runs from, on the node (usually the shared filesystem). */
    installPath: absolutePath('installPath'),
    /** The control plane as the node reaches it. */
    serverUrl: oneLine('serverUrl')
      .url('serverUrl must be a URL')
      .refine((u) => /^https?:$/.test(parseUrl(u)?.protocol ?? 'http:'), 'serverUrl must be http or https')
      .refine((u) => !parseUrl(u)?.username && !parseUrl(u)?.password, 'serverUrl must not carry a user or password'),
    /** Seconds without a job after which the worker drains and exits, handing the node back. */
    idleExitSeconds: z.number().int('idleExitSeconds must be whole seconds').positive('idleExitSeconds must be more than 0'),
    /** A 0600 file holding the token, on the node; else the job's WHETSTONE_WORKER_TOKEN. */
    tokenFile: absolutePath('tokenFile').optional(),
    /** The worker's name; default `<hostname>-slurm-<jobid>` (the daemon's own default under Slurm). */
    name: oneLine('name').min(1).max(100).optional(),
    /** The node's `node` binary; default `node` on the job's PATH. */
    nodePath: absolutePath('nodePath').optional(),
    /** Variables exported by the script (not secrets: the script's text is kept by Slurm). */
    extraEnv: z.record(z.string(), oneLine('an extraEnv value')).optional(),
  })
  .strict()
  .superRefine((input, ctx) => {
    // Names here, not in the record's key schema (zod reports a key's own message as "Invalid key in record").
    for (const name of Object.keys(input.extraEnv ?? {})) {
      const message = !ENV_NAME.test(name)
        ? 'not an environment variable name'
        : /^WHETSTONE_WORKER_TOKEN(_FILE)?$/.test(name)
          ? 'the token goes in the job environment (sbatch env) or a token file (tokenFile), not in extraEnv'
          : /^SLURM_/.test(name)
            ? "SLURM_* are Slurm's own variables"
            : null;
      if (message) ctx.addIssue({ code: 'custom', path: ['extraEnv', name], message });
    }
    const texts: [string, string | undefined][] = [
      ['installPath', input.installPath],
      ['serverUrl', input.serverUrl],
      ['tokenFile', input.tokenFile],
      ['name', input.name],
      ...Object.entries(input.extraEnv ?? {}).map(([k, v]): [string, string] => [`extraEnv.${k}`, v]),
    ];
    for (const [what, text] of texts) {
      const ok = text === undefined ? true : noToken(what)(text);
      if (ok !== true) ctx.addIssue({ code: 'custom', path: what.split('.'), message: ok });
    }
  });

export type WorkerScriptInput = z.input<typeof inputSchema>;

/** A value as one bash word: single-quoted, a quote inside written '\''. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The batch script's text; throws a TypeError naming the field when an input is refused. */
export function workerBatchScript(input: WorkerScriptInput): string {
  const parsed = inputSchema.safeParse(input);
  if (!parsed.success) {
    throw new TypeError(parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; '));
  }
  const o = parsed.data;
  const args = ['--import', 'tsx', 'gpu-worker/daemon.ts', '--server', o.serverUrl, '--idle-exit', String(o.idleExitSeconds)];
  if (o.tokenFile) args.push('--token-file', o.tokenFile);
  if (o.name) args.push('--name', o.name);
  const lines = [
    '#!/bin/bash',
    '# A Whetstone worker (gpu-worker/cluster/worker-script.ts). Its registration token is in the',
    "# job's environment (WHETSTONE_WORKER_TOKEN) or a 0600 file, never in this script.",
    'set -euo pipefail',
    `cd ${shellQuote(o.installPath)}`,
    ...Object.entries(o.extraEnv ?? {}).map(([k, v]) => `export ${k}=${shellQuote(v)}`),
    // exec: the daemon is the batch shell's process, so Slurm's B:USR1 notice reaches it.
    `exec ${o.nodePath ? shellQuote(o.nodePath) : 'node'} ${args.map(shellQuote).join(' ')}`,
    '',
  ];
  return lines.join('\n');
}
