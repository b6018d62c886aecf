import fs from 'node:fs';
import path from 'node:path';
import { secretValueSchema } from '../../team-secrets';
import { CliError, EXIT } from '../errors';
import { age, table } from '../format';
import { call, type CommandContext } from './context';

/**
 * `whetstone secrets`: the team's secrets, which HTTP environments send as headers. A value is
 * read from a file or stdin, never from argv (shell history, ps), and never printed.
 */

export async function secretsListCommand(ctx: CommandContext): Promise<number> {
  const conn = await ctx.connect();
  const secrets = await call(conn, () => conn.api.secrets.list.query({ teamId: conn.teamId }));
  ctx.out.document({ secrets });
  if (secrets.length === 0) {
    ctx.out.line('no secrets: an admin sets one with printf %s "$TOKEN" | whetstone secrets set NAME');
    return EXIT.OK;
  }
  const now = new Date();
  ctx.out.line(table(['NAME', 'SET BY', 'UPDATED'], secrets.map((s) => [s.name, s.setBy?.name ?? '-', `${age(s.updatedAt, now)} ago`])));
  return EXIT.OK;
}

export async function secretsSetCommand(ctx: CommandContext, name: string, valueFile?: string): Promise<number> {
  const value = withoutFinalNewline(valueFile !== undefined ? readValueFile(ctx, valueFile) : await readStdin(ctx));
  const checked = secretValueSchema.safeParse(value);
  if (!checked.success) throw new CliError(`the value of ${name}: ${checked.error.issues[0].message}`, EXIT.USAGE);
  const conn = await ctx.connect();
  const saved = await call(conn, () => conn.api.secrets.set.mutate({ teamId: conn.teamId, name, value: checked.data }));
  ctx.out.document({ secret: saved });
  ctx.out.line(`secret ${name} ${saved.created ? 'created' : 'replaced'} (the value is not shown again)`);
  return EXIT.OK;
}

export async function secretsDeleteCommand(ctx: CommandContext, name: string): Promise<number> {
  const conn = await ctx.connect();
  await call(conn, () => conn.api.secrets.delete.mutate({ teamId: conn.teamId, name }));
  ctx.out.document({ deleted: name });
  ctx.out.line(`secret ${name} deleted`);
  return EXIT.OK;
}

function readValueFile(ctx: CommandContext, file: string): string {
  try {
    return fs.readFileSync(path.resolve(ctx.io.cwd, file), 'utf8');
  } catch {
    throw new CliError(`cannot read the value file ${file}`, EXIT.NOT_FOUND);
  }
}

async function readStdin(ctx: CommandContext): Promise<string> {
  const stdin = ctx.io.stdin;
  // A terminal would echo the value as it is typed: ask for a pipe or a file instead.
  if (!stdin || stdin.isTTY) {
    throw new CliError('secrets set reads the value from stdin or --value-file, not from a terminal', EXIT.USAGE, ['printf %s "$TOKEN" | whetstone secrets set NAME', 'whetstone secrets set NAME --value-file token.txt']);
  }
  let text = '';
  for await (const chunk of stdin) text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
  return text;
}

/** `echo` and editors end a file with a newline that is no part of the token. */
function withoutFinalNewline(text: string): string {
  return text.replace(/\r?\n$/, '');
}
