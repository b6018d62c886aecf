/**
 * The cluster provider agent (issue 22): `tsx gpu-worker/provider-agent.ts --server URL`, or
 * `npx whetstone provider slurm --server URL`, run where Slurm's commands work (a login node),
 * with its credential (wsp_…) in WHETSTONE_PROVIDER_TOKEN or a 0600 file (--token-file).
 *
 * It keeps no state of its own. Each poll (sdk/provider-protocol.ts) sends what it learnt since
 * the last one (a launch submitted, with its Slurm job id, or refused, in sbatch's words; each
 * watched job's state and squeue's reason) and gets back orders: launch a worker (`sbatch` of a
 * script that `exec`s the worker daemon from the settings' install path, with the launch's own
 * registration token in the job's environment, never in argv or the script) or cancel one
 * (`scancel`); and the launches to keep watching. After a restart, the server's watch list is
 * all it needs.
 */
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type LaunchOrder, type LaunchReport, PROVIDER_POLL_ROUTE, type PollResponse, pollResponseSchema } from '../sdk/provider-protocol';
import { sbatch, scancel, SlurmError, type SlurmCommandOptions, type SlurmJobStatus, squeue } from './cluster/slurm';
import { workerBatchScript } from './cluster/worker-script';

const VERSION = '1';

export interface AgentOptions {
  server: string;
  token: string;
  /** Where Slurm's commands find their cluster (slurm.conf); default this process's SLURM_CONF. */
  slurm?: SlurmCommandOptions;
  /** Variables the workers' scripts export (not secrets: Slurm keeps the script), e.g. WHETSTONE_HOME. */
  workerEnv?: Record<string, string>;
  /** Where the workers' Slurm output goes; default .whetstone/slurm-logs in the install path. */
  logDir?: string;
  log?: (message: string) => void;
}

/** A launch's state in the protocol's terms, from squeue's; absent: Slurm forgot it (ended long ago). */
export function reportOf(launchId: string, externalId: string, status: SlurmJobStatus | undefined): LaunchReport {
  if (!status) return { launchId, externalId, state: 'ENDED', reason: 'no longer known to Slurm' };
  const reason = status.reason === 'None' ? status.state : `${status.state}: ${status.reason}`;
  if (status.state === 'CANCELLED') return { launchId, externalId, state: 'CANCELLED', reason };
  if (status.finished) return { launchId, externalId, state: 'ENDED', reason };
  if (status.state === 'RUNNING' || status.state === 'COMPLETING') return { launchId, externalId, state: 'RUNNING', reason };
  return { launchId, externalId, state: 'PENDING', reason: status.reason };
}

export class ProviderAgent {
  private reports: LaunchReport[] = [];
  private readonly server: string;
  stopped = false;

  constructor(private readonly o: AgentOptions) {
    this.server = o.server.replace(/\/+$/, '');
  }

  private log(message: string): void {
    (this.o.log ?? ((m: string) => console.error(`[provider] ${m}`)))(message);
  }

  /** One poll: report, take orders, carry them out, look at the watched jobs. Answers the server's reply. */
  async pollOnce(): Promise<PollResponse> {
    const sent = this.reports;
    const response = await fetch(`${this.server}${PROVIDER_POLL_ROUTE}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.o.token}` },
      body: JSON.stringify({ agent: { host: os.hostname(), version: VERSION }, reports: sent }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await response.json().catch(() => null)) as unknown;
    if (!response.ok) throw new Error(`the server refused the poll (${response.status}): ${(body as { error?: string } | null)?.error ?? 'no reason given'}`);
    const answer = pollResponseSchema.parse(body);
    this.reports = [];
    for (const order of answer.orders) {
      if (order.type === 'launch') this.reports.push(await this.launch(order));
      else {
        this.log(`cancelling Slurm job ${order.externalId}: ${order.reason}`);
        await scancel(order.externalId, this.o.slurm).catch((e: Error) => this.log(`scancel ${order.externalId} failed: ${e.message}`));
      }
    }
    if (answer.watch.length > 0) {
      const states = await squeue(
        answer.watch.map((w) => w.externalId),
        this.o.slurm,
      );
      for (const w of answer.watch) this.reports.push(reportOf(w.launchId, w.externalId, states.get(w.externalId)));
    }
    return answer;
  }

  private async launch(order: LaunchOrder): Promise<LaunchReport> {
    const s = order.settings;
    const logs = this.o.logDir ?? path.join(s.installPath, '.whetstone', 'slurm-logs');
    try {
      mkdirSync(logs, { recursive: true });
      const jobId = await sbatch(
        {
          // The node that runs this agent runs the workers: the install is shared between them.
          script: workerBatchScript({ installPath: s.installPath, serverUrl: this.server, idleExitSeconds: s.idleSeconds, nodePath: process.execPath, extraEnv: this.o.workerEnv }),
          partition: s.partition,
          account: s.account,
          qos: s.qos,
          gres: s.gres,
          cpus: s.cpusPerWorker,
          memMb: s.memoryMbPerWorker,
          timeLimit: s.timeLimit,
          jobName: `whetstone-worker-${order.launchId}`,
          output: path.join(logs, 'worker-%j.log'),
          signal: s.noticeSeconds > 0 ? `B:USR1@${s.noticeSeconds}` : undefined,
          extraDirectives: s.extraDirectives,
          env: { WHETSTONE_WORKER_TOKEN: order.workerToken },
        },
        this.o.slurm,
      );
      this.log(`launched a worker: Slurm job ${jobId}`);
      return { launchId: order.launchId, externalId: jobId, state: 'PENDING' };
    } catch (e) {
      const reason = e instanceof SlurmError ? e.message : (e as Error).message;
      this.log(`launch refused: ${reason}`);
      return { launchId: order.launchId, state: 'FAILED', reason: reason.slice(0, 2_000) };
    }
  }

  /** Polls until stopped; a failed poll is retried with backoff, its reports kept for the next. */
  async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      let wait: number;
      try {
        wait = (await this.pollOnce()).pollSeconds * 1000;
        if (failures > 0) this.log('the server answers again');
        failures = 0;
      } catch (e) {
        failures += 1;
        wait = Math.min(60_000, 1_000 * 2 ** Math.min(failures, 6));
        this.log(`poll failed (${failures}): ${(e as Error).message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** The credential: WHETSTONE_PROVIDER_TOKEN, or a file only its owner may read (--token-file). */
export function readToken(tokenFile: string | undefined, env: Record<string, string | undefined>): string {
  if (tokenFile) {
    const mode = statSync(tokenFile).mode;
    if (mode & 0o077) throw new Error(`${tokenFile} may be read or written by others (mode ${(mode & 0o777).toString(8)}): chmod 600 it`);
    return readFileSync(tokenFile, 'utf8').trim();
  }
  const token = env.WHETSTONE_PROVIDER_TOKEN;
  if (!token) throw new Error('no credential: set WHETSTONE_PROVIDER_TOKEN or pass --token-file FILE (never the token itself on the command line)');
  return token;
}

export function parseAgentArgs(argv: string[], env: Record<string, string | undefined> = process.env): { server: string; tokenFile?: string } {
  let server = env.WHETSTONE_URL ?? 'http://127.0.0.1:3000';
  let tokenFile = env.WHETSTONE_PROVIDER_TOKEN_FILE;
  for (let i = 0; i < argv.length; i += 1) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const value = () => inline ?? argv[++i];
    if (flag === '--server') server = value();
    else if (flag === '--token-file') tokenFile = value();
    // The flag alone: a mistyped `--tokn=wsp_…` must not print the credential.
    else throw new Error(`unknown argument "${flag}" (usage: provider-agent.ts --server URL [--token-file FILE], the credential in WHETSTONE_PROVIDER_TOKEN otherwise)`);
  }
  if (!/^https?:\/\/\S+$/.test(server ?? '')) throw new Error(`--server: not a URL: ${server}`);
  return { server, tokenFile };
}

async function main(): Promise<void> {
  let agent: ProviderAgent;
  try {
    const args = parseAgentArgs(process.argv.slice(2));
    agent = new ProviderAgent({ server: args.server, token: readToken(args.tokenFile, process.env) });
  } catch (e) {
    console.error(`[provider] ${(e as Error).message}`);
    process.exit(2);
  }
  const stop = () => {
    agent.stopped = true;
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  console.error('[provider] polling for launch orders');
  await agent.run();
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) void main();
