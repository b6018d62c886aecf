/**
 * A job's environment version, opened as its manifest says (sandboxed code, or servers over HTTP),
 * with its console and warnings in the job's log, and a server that is down as the job's failure,
 * naming the URL.
 */
import type { Manifest } from '../../sdk/manifest';
import type { Assignment } from '../../sdk/worker-protocol';
import { openEnvironment } from '../runtime/open-environment';
import { SandboxError } from '../runtime/sandbox/errors';
import type { Emitter } from './emit';
import { JobFailure } from './types';

export async function openJobEnvironment(manifest: Manifest, assignment: Assignment, emit: Emitter): ReturnType<typeof openEnvironment> {
  const version = assignment.environment;
  if (!version) throw new JobFailure('this job needs an environment version');
  try {
    return await openEnvironment(manifest, { files: version.files, entry: version.entry }, {
      jobId: assignment.jobId,
      onLogs: (lines, episodeId) => lines.forEach((l) => emit.userLog(`[env${episodeId ? ` ${episodeId}` : ''}] ${l}`)),
      warn: (message) => emit.log('warn', message),
    });
  } catch (e) {
    if (e instanceof SandboxError && e.kind === 'unavailable') throw new JobFailure(`the environment's server does not answer: ${e.message}`);
    throw e;
  }
}
