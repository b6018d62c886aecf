import { TRPCClientError } from '@trpc/client';
import { MAX_REQUEST_BYTES } from '../limits';

/**
 * What the CLI's exit code means. Scripts branch on these, so they never change meaning; new
 * failures get new numbers.
 */
export const EXIT = {
  /** Done; a watched job SUCCEEDED. */
  OK: 0,
  /** A watched job ended FAILED or CANCELLED. */
  JOB_FAILED: 1,
  /** Bad command line: unknown command or option, missing or malformed argument. */
  USAGE: 2,
  /** The server did not answer (not running, wrong --server, network down, timed out). */
  UNREACHABLE: 3,
  /** No credentials, the API key was refused, or the key's role may not do this. */
  UNAUTHORIZED: 4,
  /** No such job, environment, checkpoint or team (for this key). */
  NOT_FOUND: 5,
  /** The server refused the request: invalid config, environment failing its dry run, quota. */
  REJECTED: 6,
  /** The server failed (internal error). */
  SERVER_ERROR: 7,
  /** `doctor`: this machine's own check failed (no backend could load, the check crashed). */
  CHECK_FAILED: 8,
  /** Interrupted with Ctrl-C while watching (the job keeps running). */
  INTERRUPTED: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports in one or a few lines, without a stack, and exits with its code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    /** Further lines printed under the message (validation errors, hints). */
    readonly details: string[] = [],
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export class UsageError extends CliError {
  constructor(message: string, details: string[] = []) {
    super(message, EXIT.USAGE, details);
    this.name = 'UsageError';
  }
}

/** Where the API key came from, for the "refused" message. */
export interface KeySource {
  description: string;
}

function unreachable(serverUrl: string, detail?: string): CliError {
  return new CliError(`cannot reach Whetstone at ${serverUrl}: is npm start running?`, EXIT.UNREACHABLE, detail ? [detail] : []);
}

export function keyRefused(source: KeySource | null): CliError {
  return new CliError('the API key was refused', EXIT.UNAUTHORIZED, [
    source ? `the key came from ${source.description}; it may be revoked, expired or for another server` : '',
    'create a key under Team → API keys and pass it with --api-key or WHETSTONE_API_KEY',
  ].filter(Boolean));
}

function networkDetail(error: unknown): string | undefined {
  let e: unknown = error;
  for (let depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z]+/.test(code)) return code;
    if ((e as { name?: unknown }).name === 'TimeoutError') return 'timed out';
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function innermostMessage(error: unknown): string {
  let e = error as { cause?: unknown; message?: unknown };
  for (let depth = 0; e.cause && depth < 5; depth++) e = e.cause as typeof e;
  return String(e.message);
}

/** Turns anything thrown while talking to the server into a CliError with a meaningful exit code. */
export function toCliError(error: unknown, serverUrl: string, keySource: KeySource | null): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof TRPCClientError) {
    const data = (error as TRPCClientError<never>).data as { code?: string; httpStatus?: number; issues?: Array<{ path?: Array<string | number>; message: string }> | null } | undefined;
    const code = data?.code;
    // Input the server's schema refused: where tRPC's message is the issues as JSON (no message of
    // the server's own), they are said line by line instead.
    if (code === 'BAD_REQUEST' && data?.issues?.length && error.message.trimStart().startsWith('[')) {
      return new CliError('the server refused the request:', EXIT.REJECTED, data.issues.map((i) => `${i.path?.join('.') || '(input)'}: ${i.message}`));
    }
    if (!code) {
      // No tRPC error shape: the request never got a Whetstone answer.
      const detail = networkDetail(error);
      if (detail) return unreachable(serverUrl, detail);
      if (error.message === 'fetch failed') return unreachable(serverUrl, innermostMessage(error));
      return unreachable(serverUrl, `the answer was not Whetstone's (${error.message})`);
    }
    switch (code) {
      case 'UNAUTHORIZED':
        return keyRefused(keySource);
      case 'FORBIDDEN':
        return new CliError(`not allowed: ${error.message}`, EXIT.UNAUTHORIZED);
      case 'NOT_FOUND':
        return new CliError(error.message, EXIT.NOT_FOUND);
      case 'INTERNAL_SERVER_ERROR':
        return new CliError(`the server failed: ${error.message}`, EXIT.SERVER_ERROR);
      case 'PAYLOAD_TOO_LARGE':
        return new CliError(`the request is larger than the server takes (${MAX_REQUEST_BYTES / 1_000_000} MB)`, EXIT.REJECTED);
      default:
        return new CliError(error.message, EXIT.REJECTED);
    }
  }
  const detail = networkDetail(error);
  if (detail) return unreachable(serverUrl, detail);
  return new CliError(error instanceof Error ? error.message : String(error), EXIT.SERVER_ERROR);
}
