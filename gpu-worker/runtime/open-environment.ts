/**
 * An environment version opened for rollouts, whichever way it runs: its code compiled into the
 * sandbox, or, when its manifest names servers (`server`), over HTTP (docs/http-environments.md).
 */
import type { CompileDiagnostic } from '../../sdk/dry-run-report';
import type { EnvironmentSource } from '../../sdk/environment-source';
import type { Manifest } from '../../sdk/manifest';
import { type EnvironmentHandle, type LogSink } from './environment-handle';
import { HttpEnvironment } from './http-environment';
import { SandboxEnvironment } from './sandbox/sandbox-environment';

export interface OpenOptions {
  /** Sent to HTTP servers as job_id (their statistics per job). */
  jobId?: string;
  /** The environment's console (sandboxed code). */
  onLogs?: LogSink;
  /** What an HTTP environment reports without ending an episode. */
  warn?: (message: string) => void;
}

export async function openEnvironment(
  manifest: Pick<Manifest, 'kind' | 'agents' | 'server'> & { name?: string },
  source: EnvironmentSource,
  options: OpenOptions = {},
): Promise<{ ok: true; env: EnvironmentHandle } | { ok: false; errors: CompileDiagnostic[] }> {
  const server = manifest.server;
  if (!server) return SandboxEnvironment.load(source, { onLogs: options.onLogs });
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
    warn: options.warn,
  });
  return { ok: true, env };
}
