import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { HELP, parseCommandLine, USAGE, type Command } from './args';
import { connect, serverUrl, type Connection } from './client';
import { cancelCommand } from './commands/cancel';
import type { CommandContext } from './commands/context';
import { datasetsCommand, datasetsUploadCommand } from './commands/datasets';
import { envCreateCommand, envExportCommand, envImportCommand } from './commands/env';
import { evalCommand } from './commands/eval';
import { jobsCommand } from './commands/jobs';
import { logsCommand } from './commands/logs';
import { runCommand } from './commands/run';
import { secretsDeleteCommand, secretsListCommand, secretsSetCommand } from './commands/secrets';
import { modelsExportCommand, modelsImportCommand, modelsImportHubCommand, modelsListCommand } from './commands/models';
import { sampleCommand } from './commands/sample';
import { tournamentCommand } from './commands/tournament';
import { workersCommand } from './commands/workers';
import { doctorCommand } from './commands/doctor';
import { providerCommand, providerCreateCommand, providerDeleteCommand, providerListCommand, providerUpdateCommand } from './commands/provider';
import { CliError, EXIT, toCliError } from './errors';
import { printer, toJson, type CliIO } from './io';

export { EXIT } from './errors';
export type { CliIO } from './io';

const VERSION = '0.1.0';

function dispatch(ctx: CommandContext, command: Command): Promise<number> {
  switch (command.name) {
    case 'run':
      return runCommand(ctx, command);
    case 'jobs':
      return jobsCommand(ctx, command);
    case 'logs':
      return logsCommand(ctx, command);
    case 'cancel':
      return cancelCommand(ctx, command);
    case 'eval':
      return evalCommand(ctx, command);
    case 'tournament':
      return tournamentCommand(ctx, command);
    case 'workers':
      return workersCommand(ctx);
    case 'doctor':
      return doctorCommand(ctx);
    case 'provider':
      return providerCommand(ctx, { tokenFile: command.tokenFile });
    case 'provider-list':
      return providerListCommand(ctx, command.shared);
    case 'provider-create':
      return providerCreateCommand(ctx, command.providerName, command.settingsFile, command.shared);
    case 'provider-update':
      return providerUpdateCommand(ctx, command.provider, command.settingsFile, command.shared);
    case 'provider-delete':
      return providerDeleteCommand(ctx, command.provider, command.shared);
    case 'datasets':
      return datasetsCommand(ctx);
    case 'datasets-upload':
      return datasetsUploadCommand(ctx, command.file, command.datasetName);
    case 'env-create':
      return envCreateCommand(ctx, command);
    case 'env-export':
      return envExportCommand(ctx, command);
    case 'env-import':
      return envImportCommand(ctx, command);
    case 'secrets-list':
      return secretsListCommand(ctx);
    case 'models-list':
      return modelsListCommand(ctx);
    case 'models-import':
      return modelsImportCommand(ctx, command.folder, command.modelName);
    case 'models-import-hub':
      return modelsImportHubCommand(ctx, command.repo, command.revision, command.modelName);
    case 'models-export':
      return modelsExportCommand(ctx, command.checkpointId, command.folder, command.format);
    case 'sample':
      return sampleCommand(ctx, command);
    case 'secrets-set':
      return secretsSetCommand(ctx, command.secretName, command.valueFile);
    case 'secrets-delete':
      return secretsDeleteCommand(ctx, command.secretName);
    case 'version':
      ctx.io.stdout.write(ctx.out.json ? `${toJson({ version: VERSION })}\n` : `whetstone ${VERSION}\n`);
      return Promise.resolve(EXIT.OK);
    case 'help': {
      const usage = command.topic ? USAGE[command.topic] : undefined;
      if (command.topic && !usage) throw new CliError(`no command "${command.topic}"`, EXIT.USAGE, ['run whetstone --help']);
      ctx.io.stdout.write(usage ? `usage: ${usage}\n\n(whetstone --help for every command, option and exit code)\n` : HELP);
      return Promise.resolve(EXIT.OK);
    }
  }
}

/**
 * The whole CLI as a function: argv (without node and the script) in, exit code out. Never
 * throws and never exits the process, so tests call it directly.
 */
export async function main(argv: string[], io: CliIO): Promise<number> {
  let json = argv.includes('--json');
  let url = serverUrl(undefined, io.env);
  try {
    const { globals, command } = parseCommandLine(argv);
    json = globals.json;
    url = serverUrl(globals.server, io.env);
    let connection: Promise<Connection> | null = null;
    const ctx: CommandContext = {
      io,
      out: printer(io, json),
      globals,
      connect: () => (connection ??= connect({ server: globals.server, apiKey: globals.apiKey, team: globals.team, env: io.env, cwd: io.cwd })),
    };
    return await dispatch(ctx, command);
  } catch (e) {
    const error = toCliError(e, url, null);
    if (json) io.stdout.write(`${toJson({ error: { message: error.message, details: error.details, exitCode: error.exitCode } })}\n`);
    io.stderr.write(`whetstone: ${error.message}\n${error.details.map((d) => `  ${d}\n`).join('')}`);
    return error.exitCode;
  }
}

/** The process entry: real streams, Ctrl-C stops a watch (a second Ctrl-C exits at once). */
export async function runCli(argv = process.argv.slice(2)): Promise<void> {
  const controller = new AbortController();
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(EXIT.INTERRUPTED);
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  const code = await main(argv, {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    isTTY: Boolean(process.stdout.isTTY),
    stdin: process.stdin,
    signal: controller.signal,
  });
  process.off('SIGINT', onSigint);
  // Let stdout drain, then exit even if a socket or timer lingers.
  process.stdout.write('', () => process.exit(code));
}

function isEntry(): boolean {
  if (!process.argv[1]) return false;
  try {
    return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntry()) void runCli();
