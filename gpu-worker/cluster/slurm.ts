/**
 * Slurm's commands as typed async functions: sbatch, squeue and scancel, run with execFile (no
 * shell), a timeout each, and output parsed with zod. A command that fails throws SlurmError,
 * whose message is Slurm's own stderr ("sbatch: error: Batch job submission failed: Invalid
 * partition name specified").
 *
 * It lives on the worker's side of the layers because it runs where Slurm's clients are: a
 * cluster's login node, which reaches the server as a worker does (issue 22's provider agent),
 * and which may not run the control plane. Tests run it against the one-node Slurm of
 * scripts/slurm/local-cluster.sh (docs/slurm.md).
 *
 * Secrets (a worker's registration token) reach the job through sbatch's own environment, named
 * in `--export=NAME,…`, never as a value: argv (ps), the batch script and `scontrol show job -d`
 * (-dd too) then hold only the names. Slurm keeps the job's environment in
 * StateSaveLocation/hash.N/job.ID/environment (0600, SlurmUser) and the job's processes carry it
 * (/proc/PID/environ: their user and root), as any environment variable. docs/slurm.md says why.
 */
import { execFile } from 'node:child_process';
import { z } from 'zod';

/** Where and how to run the commands. */
export interface SlurmCommandOptions {
  /** slurm.conf for the commands (SLURM_CONF); default the caller's SLURM_CONF, else Slurm's own. */
  slurmConf?: string;
  /** Per command; default 30 s. */
  timeoutMs?: number;
}

/** A Slurm command failed: its stderr, as Slurm wrote it, is the message. */
export class SlurmError extends Error {
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly stderr: string,
    message?: string,
  ) {
    super(message ?? (stderr.trim() || `${command} failed (exit ${exitCode})`));
    this.name = 'SlurmError';
  }

  /** The last "error:" line's text without its "sbatch: error: " prefix, e.g. "Batch job submission failed: Invalid partition name specified". */
  get reason(): string {
    const lines = this.stderr.trim().split('\n').filter(Boolean);
    const last = [...lines].reverse().find((l) => /\berror:/.test(l)) ?? lines.at(-1) ?? this.message;
    return last.replace(/^\S+: error: /, '').trim();
  }
}

const DEFAULT_TIMEOUT_MS = 30_000;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function run(command: string, args: string[], opts: SlurmCommandOptions & { stdin?: string; env?: Record<string, string> }): Promise<string> {
  const slurmConf = opts.slurmConf ?? process.env.SLURM_CONF;
  // Only what the command needs: PATH, HOME, and slurm.conf's place; then the job's variables.
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  if (slurmConf) env.SLURM_CONF = slurmConf;
  Object.assign(env, opts.env);
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { env: env as NodeJS.ProcessEnv, timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 16 << 20, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (!error) return resolve(stdout);
      const code = typeof error.code === 'number' ? error.code : null;
      if (error.killed) return reject(new SlurmError(command, code, stderr, `${command} did not answer within ${opts.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms${stderr.trim() ? `: ${stderr.trim()}` : ''}`));
      if (error.code === 'ENOENT') return reject(new SlurmError(command, null, '', `${command} is not installed here (not on PATH)`));
      reject(new SlurmError(command, code, stderr));
    });
    child.stdin?.on('error', () => {}); // a command that exits early closes its stdin: its exit says why
    child.stdin?.end(opts.stdin ?? '');
  });
}

/** A batch job to submit. */
export interface SbatchRequest {
  /** The batch script's text, starting with `#!`; sent on sbatch's stdin. */
  script: string;
  partition: string;
  account?: string;
  qos?: string;
  /** --gres, e.g. `gpu:1` or `gpu:a100:1`. */
  gres?: string;
  /** CPUs for the one task (--cpus-per-task). */
  cpus?: number;
  /** Memory for the job in MB (--mem). */
  memMb?: number;
  /** --time: minutes, or Slurm's forms ("90", "1:30:00", "1-00:00:00"). */
  timeLimit?: number | string;
  /** --job-name. */
  jobName?: string;
  /** --output (Slurm's patterns: %j is the job id); default slurm-%j.out in the working folder. */
  output?: string;
  /** --chdir: the job's working folder. */
  workDir?: string;
  /** --signal, e.g. `B:USR1@120`: a signal to the batch shell that long before the time limit (Slurm may send it up to a minute early). */
  signal?: string;
  /** Lines written as `#SBATCH <line>` after the script's first line, e.g. `--constraint=a100`. */
  extraDirectives?: string[];
  /**
   * Variables for the job, secrets included: given to sbatch in its environment and named in
   * --export, so that no value appears in argv or the script. The job gets these, PATH, and
   * what Slurm adds (SLURM_*, and the user's login variables such as HOME and USER).
   */
  env?: Record<string, string>;
}

const jobIdSchema = z
  .string()
  .trim()
  .regex(/^\d+(;\S+)?$/, 'sbatch --parsable printed no job id')
  .transform((s) => s.split(';')[0]!);

const TIME_LIMIT = /^(\d+|\d+:\d{1,2}(:\d{1,2})?|\d+-\d{1,2}(:\d{1,2}(:\d{1,2})?)?|UNLIMITED|INFINITE)$/i;

function sbatchArgs(req: SbatchRequest): string[] {
  const args = ['--parsable', `--partition=${req.partition}`];
  if (req.account) args.push(`--account=${req.account}`);
  if (req.qos) args.push(`--qos=${req.qos}`);
  if (req.gres) args.push(`--gres=${req.gres}`);
  if (req.cpus !== undefined) {
    if (!Number.isInteger(req.cpus) || req.cpus < 1) throw new TypeError(`cpus must be a positive integer, not ${req.cpus}`);
    args.push(`--cpus-per-task=${req.cpus}`);
  }
  if (req.memMb !== undefined) {
    if (!Number.isInteger(req.memMb) || req.memMb < 1) throw new TypeError(`memMb must be a positive integer, not ${req.memMb}`);
    args.push(`--mem=${req.memMb}M`);
  }
  if (req.timeLimit !== undefined) {
    const t = String(req.timeLimit);
    if (!TIME_LIMIT.test(t)) throw new TypeError(`timeLimit "${t}" is not one of Slurm's forms (minutes, H:MM:SS, D-HH:MM)`);
    args.push(`--time=${t}`);
  }
  if (req.jobName) args.push(`--job-name=${req.jobName}`);
  if (req.output) args.push(`--output=${req.output}`);
  if (req.workDir) args.push(`--chdir=${req.workDir}`);
  if (req.signal) args.push(`--signal=${req.signal}`);
  for (const name of Object.keys(req.env ?? {})) {
    if (!ENV_NAME.test(name)) throw new TypeError(`"${name}" is not an environment variable name`);
    // sbatch reads SBATCH_* as its own options and SLURM_* as its own settings.
    if (/^(SBATCH|SLURM)_/.test(name)) throw new TypeError(`${name}: SBATCH_* and SLURM_* are Slurm's own variables`);
  }
  args.push(`--export=${['PATH', ...Object.keys(req.env ?? {})].join(',')}`);
  return args;
}

function withDirectives(script: string, directives: string[]): string {
  if (!script.startsWith('#!')) throw new TypeError('the batch script must start with #! and its interpreter');
  if (directives.length === 0) return script;
  for (const d of directives) {
    if (/[\r\n]/.test(d)) throw new TypeError(`an extra directive is one line: ${JSON.stringify(d)}`);
  }
  const end = script.indexOf('\n');
  const first = end < 0 ? script : script.slice(0, end);
  const rest = end < 0 ? '' : script.slice(end + 1);
  return `${first}\n${directives.map((d) => `#SBATCH ${d.replace(/^#SBATCH\s+/, '')}`).join('\n')}\n${rest}`;
}

/** Submits a batch job; resolves to its job id. Slurm's refusal (bad partition, GRES…) throws SlurmError. */
export async function sbatch(req: SbatchRequest, opts: SlurmCommandOptions = {}): Promise<string> {
  const args = sbatchArgs(req);
  const stdin = withDirectives(req.script, req.extraDirectives ?? []);
  const out = await run('sbatch', args, { ...opts, stdin, env: req.env });
  const parsed = jobIdSchema.safeParse(out.split('\n').filter(Boolean).at(-1) ?? '');
  if (!parsed.success) throw new SlurmError('sbatch', 0, '', `sbatch --parsable printed no job id: ${JSON.stringify(out)}`);
  return parsed.data;
}

/** squeue's job states (%T). Other versions may add more; unknown ones pass through as strings. */
export type SlurmJobState =
  | 'BOOT_FAIL' | 'CANCELLED' | 'COMPLETED' | 'COMPLETING' | 'CONFIGURING' | 'DEADLINE' | 'FAILED' | 'NODE_FAIL'
  | 'OUT_OF_MEMORY' | 'PENDING' | 'PREEMPTED' | 'REQUEUED' | 'REQUEUE_FED' | 'REQUEUE_HOLD' | 'RESIZING'
  | 'RESV_DEL_HOLD' | 'REVOKED' | 'RUNNING' | 'SIGNALING' | 'SPECIAL_EXIT' | 'STAGE_OUT' | 'STOPPED' | 'SUSPENDED' | 'TIMEOUT';

/** States after which the job holds nothing and will not run again by itself. */
const FINISHED: ReadonlySet<string> = new Set<SlurmJobState>(['BOOT_FAIL', 'CANCELLED', 'COMPLETED', 'DEADLINE', 'FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY', 'PREEMPTED', 'REVOKED', 'SPECIAL_EXIT', 'TIMEOUT']);

export interface SlurmJobStatus {
  jobId: string;
  /** squeue's %T, e.g. PENDING, RUNNING, COMPLETED, CANCELLED. */
  state: SlurmJobState | (string & {});
  /** squeue's %r: why it waits or ended, in Slurm's words (None, Resources, Priority, PartitionTimeLimit, BadConstraints…). */
  reason: string;
  /** The state is final: the job no longer runs or holds resources. */
  finished: boolean;
}

const squeueLine = z
  .string()
  .transform((line) => line.split('|'))
  .pipe(z.tuple([z.string().regex(/^\d+(_\d+|_\[.*\])?$/), z.string().regex(/^[A-Z_]+$/), z.string()]))
  .transform(([jobId, state, reason]): SlurmJobStatus => ({ jobId, state, reason, finished: FINISHED.has(state) }));

/**
 * The state and reason of each job, in every state (`squeue -t all`). A job Slurm no longer
 * knows (finished longer ago than MinJobAge, default 300 s, or never submitted) is absent.
 */
export async function squeue(jobIds: readonly string[], opts: SlurmCommandOptions = {}): Promise<Map<string, SlurmJobStatus>> {
  const result = new Map<string, SlurmJobStatus>();
  if (jobIds.length === 0) return result;
  for (const id of jobIds) if (!/^\d+$/.test(id)) throw new TypeError(`"${id}" is not a Slurm job id`);
  let out: string;
  try {
    out = await run('squeue', ['--noheader', '--states=all', `--jobs=${jobIds.join(',')}`, '--format=%i|%T|%r'], opts);
  } catch (e) {
    // When none of the ids is known, squeue exits 1 saying so; with one known it lists that one.
    if (e instanceof SlurmError && /Invalid job id specified/.test(e.stderr)) return result;
    throw e;
  }
  for (const line of out.split('\n')) {
    if (!line.trim()) continue;
    const parsed = squeueLine.safeParse(line.trim());
    if (!parsed.success) throw new SlurmError('squeue', 0, '', `squeue printed a line this does not read: ${JSON.stringify(line)}`);
    result.set(parsed.data.jobId, parsed.data);
  }
  return result;
}

export interface ScancelOptions extends SlurmCommandOptions {
  /** Send this signal (USR1, TERM, 10…) instead of cancelling. */
  signal?: string;
  /**
   * With a signal, who gets it: `batch` (default) only the batch shell, so a worker that the
   * script `exec`s gets it and its children do not; `full` the batch shell, its children and
   * every step.
   */
  to?: 'batch' | 'full';
}

/**
 * Cancels a job, or signals it. Cancelling a job that finished or that Slurm does not know is
 * no error (scancel exits 0); signalling one is (SlurmError "Invalid job id specified").
 */
export async function scancel(jobId: string, opts: ScancelOptions = {}): Promise<void> {
  if (!/^\d+$/.test(jobId)) throw new TypeError(`"${jobId}" is not a Slurm job id`);
  const args: string[] = [];
  if (opts.signal !== undefined) {
    if (!/^(SIG)?[A-Z0-9]+$/.test(opts.signal)) throw new TypeError(`"${opts.signal}" is not a signal name or number`);
    args.push(`--signal=${opts.signal}`, opts.to === 'full' ? '--full' : '--batch');
  }
  args.push(jobId);
  await run('scancel', args, opts);
}
