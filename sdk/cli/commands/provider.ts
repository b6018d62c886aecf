/**
 * `whetstone provider list|create|update|delete`: a pool's cluster providers, as admins manage
 * them (the Cluster page does the same).
 *
 * `whetstone provider slurm`: a cluster provider agent (issue 22) on this machine, where Slurm's
 * commands work. The agent belongs to the worker side (gpu-worker/provider-agent.ts, beside the
 * Slurm commands it runs), so the CLI runs it as a child process, as `doctor` runs the worker's
 * check, and waits for it. Its credential comes from WHETSTONE_PROVIDER_TOKEN or --token-file,
 * never from the command line (where `ps` shows it).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { slurmSettingsSchema, type SlurmSettings } from '../../provider-protocol';
import { serverUrl } from '../client';
import { CliError, EXIT } from '../errors';
import { age, table } from '../format';
import { call, type CommandContext } from './context';

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

/** The Slurm settings of a JSON file, checked as the server checks them, each problem with its field. */
function readSettings(ctx: CommandContext, file: string): SlurmSettings {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path.resolve(ctx.io.cwd, file), 'utf8'));
  } catch (e) {
    throw new CliError(`cannot read the settings file ${file}: ${(e as Error).message}`, EXIT.USAGE);
  }
  const parsed = slurmSettingsSchema.safeParse(raw);
  if (!parsed.success) {
    throw new CliError(`the settings in ${file} are not valid`, EXIT.USAGE, parsed.error.issues.map((i) => `${i.path.join('.') || 'settings'}: ${i.message}`));
  }
  return parsed.data;
}

type Conn = Awaited<ReturnType<CommandContext['connect']>>;

async function listOf(conn: Conn, shared: boolean) {
  return call(conn, () => (shared ? conn.api.providers.listShared.query() : conn.api.providers.list.query({ teamId: conn.teamId })));
}

/** A provider by name or id, in the pool. */
async function find(conn: Conn, shared: boolean, nameOrId: string) {
  const providers = await listOf(conn, shared);
  const found = providers.find((p) => p.id === nameOrId) ?? providers.find((p) => p.name === nameOrId);
  if (!found) throw new CliError(`no cluster provider ${nameOrId} in the ${shared ? 'shared' : "team's"} pool`, EXIT.NOT_FOUND, ['whetstone provider list' + (shared ? ' --shared' : '')]);
  return found;
}

export async function providerListCommand(ctx: CommandContext, shared: boolean): Promise<number> {
  const conn = await ctx.connect();
  const providers = await listOf(conn, shared);
  ctx.out.document({ providers });
  if (providers.length === 0) {
    ctx.out.line(`no cluster provider: an admin creates one with whetstone provider create NAME --settings slurm.json${shared ? ' --shared' : ''}`);
    return EXIT.OK;
  }
  const now = new Date();
  ctx.out.line(
    table(
      ['NAME', 'KIND', 'AGENT', 'LAUNCHES', 'LAST ERROR'],
      providers.map((p) => {
        const live = p.launches.filter((l) => l.state === 'SUBMITTING' || l.state === 'PENDING' || l.state === 'RUNNING');
        const pending = live.filter((l) => l.state !== 'RUNNING');
        return [
          p.name,
          p.kind,
          p.lastSeenAt ? `polled ${age(new Date(p.lastSeenAt), now)} ago` : 'never polled',
          `${live.length - pending.length} running, ${pending.length} pending${pending[0]?.reason ? ` (${pending[0].reason})` : ''}`,
          p.lastError ?? '-',
        ];
      }),
    ),
  );
  return EXIT.OK;
}

export async function providerCreateCommand(ctx: CommandContext, name: string, settingsFile: string, shared: boolean): Promise<number> {
  const settings = readSettings(ctx, settingsFile);
  const conn = await ctx.connect();
  const input = { name, kind: 'SLURM' as const, settings };
  const created = await call(conn, () => (shared ? conn.api.providers.createShared.mutate(input) : conn.api.providers.create.mutate({ teamId: conn.teamId, ...input })));
  ctx.out.document({ provider: created });
  ctx.out.line(`provider ${created.name} created. Its agent's credential, shown this once:`);
  ctx.out.line(`  ${created.token}`);
  ctx.out.line('Run its agent on a login node of the cluster, from the install path:');
  ctx.out.line(`  WHETSTONE_PROVIDER_TOKEN=<the credential> npx whetstone provider slurm --server ${serverUrl(ctx.globals.server, ctx.io.env)}`);
  return EXIT.OK;
}

export async function providerUpdateCommand(ctx: CommandContext, nameOrId: string, settingsFile: string, shared: boolean): Promise<number> {
  const settings = readSettings(ctx, settingsFile);
  const conn = await ctx.connect();
  const provider = await find(conn, shared, nameOrId);
  await call(conn, () => (shared ? conn.api.providers.updateShared.mutate({ providerId: provider.id, settings }) : conn.api.providers.update.mutate({ teamId: conn.teamId, providerId: provider.id, settings })));
  ctx.out.document({ updated: provider.id });
  ctx.out.line(`provider ${provider.name}: settings saved${provider.backoffUntil ? ' (its backoff ended: it launches at the next poll)' : ''}`);
  return EXIT.OK;
}

export async function providerDeleteCommand(ctx: CommandContext, nameOrId: string, shared: boolean): Promise<number> {
  const conn = await ctx.connect();
  const provider = await find(conn, shared, nameOrId);
  await call(conn, () => (shared ? conn.api.providers.deleteShared.mutate({ providerId: provider.id }) : conn.api.providers.delete.mutate({ teamId: conn.teamId, providerId: provider.id })));
  ctx.out.document({ deleted: provider.id });
  ctx.out.line(`provider ${provider.name} deleted (its launches' registration tokens are revoked; running workers finish and exit when idle)`);
  return EXIT.OK;
}
