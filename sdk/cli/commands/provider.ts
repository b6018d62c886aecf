/**
 * `whetstone provider slurm`: a cluster provider agent (issue 22) on this machine, where Slurm's
 * commands work. The agent belongs to the worker side (gpu-worker/provider-agent.ts, beside the
 * Slurm commands it runs), so the CLI runs it as a child process, as `doctor` runs the worker's
 * check, and waits for it. Its credential comes from WHETSTONE_PROVIDER_TOKEN or --token-file,
 * never from the command line (where `ps` shows it).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serverUrl } from '../client';
import { CliError, EXIT } from '../errors';
import type { CommandContext } from './context';

const AGENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../gpu-worker/provider-agent.ts');

export async function providerCommand(ctx: CommandContext, opts: { tokenFile?: string }): Promise<number> {
  if (!existsSync(AGENT)) {
    throw new CliError('the provider agent runs beside the worker\'s code, which this installation lacks', EXIT.USAGE, ['run it in a Whetstone checkout (npm ci) on the cluster\'s login node']);
  }
  if (!opts.tokenFile && !ctx.io.env.WHETSTONE_PROVIDER_TOKEN) {
    throw new CliError('no provider credential', EXIT.USAGE, ['set WHETSTONE_PROVIDER_TOKEN=wsp_… or pass --token-file FILE (mode 600): the Cluster page shows it once, when the provider is created']);
  }
  const args = ['--import', 'tsx', AGENT, '--server', serverUrl(ctx.globals.server, ctx.io.env)];
  if (opts.tokenFile) args.push('--token-file', path.resolve(ctx.io.cwd, opts.tokenFile));
  const child = spawn(process.execPath, args, { cwd: path.dirname(path.dirname(AGENT)), env: ctx.io.env as NodeJS.ProcessEnv, signal: ctx.io.signal, stdio: ['ignore', 'inherit', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.on('error', (e) => (e.name === 'AbortError' ? resolve(0) : reject(e)));
    child.on('close', (code) => resolve(code ?? 0));
  });
}
