/**
 * An environment version opened for rollouts, whichever way it runs: its code compiled into the
 * sandbox, or, when its manifest names servers (`server`), over HTTP (docs/http-environments.md).
 */
import type { CompileDiagnostic } from '../../sdk/dry-run-report';
import type { EnvironmentSource } from '../../sdk/environment-source';
import type { Manifest } from '../../sdk/manifest';
import { resolveHeaders } from '../../sdk/team-secrets';
import { type EnvironmentHandle, type LogSink } from './environment-handle';
import { HttpEnvironment } from './http-environment';
import { SandboxError } from './sandbox/errors';
import { SandboxEnvironment } from './sandbox/sandbox-environment';

export interface OpenOptions {
  /** Sent to HTTP servers as job_id (their statistics per job). */
  jobId?: string;
  /** The environment's console (sandboxed code). */
  onLogs?: LogSink;
  /** What an HTTP environment reports without ending an episode. */
  warn?: (message: string) => void;
  /**
   * The team's values of the secrets the manifest's headers name (sdk/team-secrets.ts), fetched
   * by whoever opens it for the team; a name missing here fails the opening, naming it.
   */
  secrets?: Record<string, string>;
}

export async function openEnvironment(
  manifest: Pick<Manifest, 'kind' | 'agents' | 'server'> & { name?: string },
  source: EnvironmentSource,
  options: OpenOptions = {},
): Promise<{ ok: true; env: EnvironmentHandle } | { ok: false; errors: CompileDiagnostic[] }> {
  const server = manifest.server;
  if (!server) return SandboxEnvironment.load(source, { onLogs: options.onLogs });
  const headers = resolveHeaders(server.headers, options.secrets ?? {});
  if (!headers.ok) throw new SandboxError('load', 'headers', headers.problem, null, '');
  const env = await HttpEnvironment.connect({
    baseUrl: server.urls,
    jobId: options.jobId,
    name: manifest.name,
    kind: manifest.kind,
    agents: manifest.agents,
    timeoutMs: server.timeoutSeconds * 1000,
    resetTimeoutMs: server.resetTimeoutSeconds === undefined ? undefined : server.resetTimeoutSeconds * 1000,
    retries: server.retries,
    promptField: server.promptField,
    headers: headers.headers,
    warn: options.warn,
  });
  return { ok: true, env };
}
