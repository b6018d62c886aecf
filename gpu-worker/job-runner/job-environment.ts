/**
 * A job's environment version, opened as its manifest says (sandboxed code, or servers over HTTP),
 * with its console and warnings in the job's log, and a server that is down as the job's failure,
 * naming the URL. The team secrets its headers name are asked of the server here, for this
 * attempt, and live only in the environment's memory.
 */
import type { Manifest } from '../../sdk/manifest';
import { secretNamesOf } from '../../sdk/team-secrets';
import type { Assignment } from '../../sdk/worker-protocol';
import { openEnvironment } from '../runtime/open-environment';
import { SandboxError } from '../runtime/sandbox/errors';
import type { Emitter } from './emit';
import { JobFailure } from './types';

export async function openJobEnvironment(manifest: Manifest, assignment: Assignment, emit: Emitter): ReturnType<typeof openEnvironment> {
  const version = assignment.environment;
  if (!version) throw new JobFailure('this job needs an environment version');
  const secrets = await secretsOf(manifest, emit);
  try {
    return await openEnvironment(manifest, { files: version.files, entry: version.entry }, {
      jobId: assignment.jobId,
      secrets,
      onLogs: (lines, episodeId) => lines.forEach((l) => emit.userLog(`[env${episodeId ? ` ${episodeId}` : ''}] ${l}`)),
      warn: (message) => emit.log('warn', message),
    });
  } catch (e) {
    if (e instanceof SandboxError && e.kind === 'unavailable') throw new JobFailure(`the environment's server does not answer: ${e.message}`);
    if (e instanceof SandboxError && e.during === 'headers') throw new JobFailure(e.message);
    throw e;
  }
}

/** The values of the team secrets the manifest's headers name; none asked when it names none. */
async function secretsOf(manifest: Manifest, emit: Emitter): Promise<Record<string, string>> {
  if (secretNamesOf(manifest.server?.headers).length === 0) return {};
  if (!emit.sink.environmentSecrets) throw new JobFailure("the environment's headers use team secrets, which this worker cannot fetch");
  try {
    return await emit.sink.environmentSecrets();
  } catch (e) {
    throw new JobFailure(`could not fetch the team secrets the environment's headers use: ${(e as Error).message}`);
  }
}
