/**
 * The team secrets an environment's headers name (its manifest's `server.headers`), decrypted for
 * what plays it: the worker running the team's job (workers/api.ts), the save's dry run and the
 * play console. Only the names the manifest uses are read; a name the team has not set is left
 * out, and the environment's opening reports it (sdk/team-secrets.ts).
 */
import { parseManifest } from '../../sdk/manifest';
import { secretNamesOf, type ServerHeaders } from '../../sdk/team-secrets';
import type { Db } from '../db/client';
import { teamSecretValues } from './team-secrets';

export async function environmentSecrets(db: Db, key: Buffer, teamId: string, headers: ServerHeaders | undefined): Promise<Record<string, string>> {
  return teamSecretValues(db, key, teamId, secretNamesOf(headers));
}

/** The same for a stored manifest (a job's environment version); none for one that does not parse. */
export async function manifestSecrets(db: Db, key: Buffer, teamId: string, manifest: unknown): Promise<Record<string, string>> {
  const parsed = parseManifest(manifest);
  return parsed.ok ? environmentSecrets(db, key, teamId, parsed.manifest.server?.headers) : {};
}
