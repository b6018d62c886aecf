/** Assignments for job-runner tests: what the server would hand a worker, for a built-in template. */
import { loadTemplate, type TemplateName } from '../../../env-templates/load-template';
import { type Assignment } from '../../../sdk/worker-protocol';

/** A template as an assignment's environment version. */
export function templateEnvironment(name: TemplateName): NonNullable<Assignment['environment']> {
  const t = loadTemplate(name);
  return { versionId: `${name}-v1`, files: t.source.files, entry: t.source.entry, manifest: t.rawManifest };
}

/** Attempt 1 of a TRAIN job on bandit, with `over` replacing any field. */
export function testAssignment(over: Partial<Assignment> & { config: Record<string, unknown> }): Assignment {
  return {
    attemptId: 'att-1',
    fencingToken: '1',
    jobId: 'job-1',
    attempt: 1,
    kind: 'TRAIN',
    deviceIndexes: [0],
    leaseExpiresAt: new Date(Date.now() + 60_000).toISOString(),
    timeLimitSeconds: null,
    resumeFrom: null,
    environment: templateEnvironment('bandit'),
    ...over,
  };
}
