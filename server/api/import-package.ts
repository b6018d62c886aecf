import { TRPCError } from '@trpc/server';
import { audit } from '../auth/audit';
import { DryRunQueueFull } from '../environments/dry-run-pool';
import { type EnvironmentPackage, importEnvironmentPackage } from '../environments/package';
import type { Role } from '../db/generated/prisma/enums';
import { checkSecretUse } from '../secrets/secret-use';
import type { Context } from './context';

/**
 * A package into a team, as both ways in answer it (a file: environments.importPackage; the
 * gallery: gallery.import): refused with its reasons, "try again" when the dry runs are full,
 * and a new version recorded in the team's audit log.
 */
export async function importPackageAnswer(
  ctx: Pick<Context, 'db' | 'deps' | 'ip'>,
  to: { teamId: string; userId: string; role: Role },
  pkg: EnvironmentPackage,
  name: string | undefined,
  details: Record<string, string> = {},
) {
  // A package's headers may send this team's secrets to its servers: an admin's call, as a save's.
  await checkSecretUse(ctx.db, to.teamId, to.role, pkg.manifest);
  const result = await importEnvironmentPackage(ctx.deps, { teamId: to.teamId, userId: to.userId, package: pkg, name }).catch((error: unknown) => {
    if (error instanceof DryRunQueueFull) throw new TRPCError({ code: 'TOO_MANY_REQUESTS', message: `Not imported: ${error.message}` });
    throw error;
  });
  if (!result.ok) throw new TRPCError({ code: 'BAD_REQUEST', message: `Not imported: ${result.problems.join('; ')}` });
  if (result.created) {
    await audit(ctx.db, {
      teamId: to.teamId, actorUserId: to.userId, action: 'environment.imported', targetType: 'environment_version', targetId: result.versionId,
      details: { name: result.name, contentHash: result.contentHash, ...details }, ipAddress: ctx.ip,
    });
  }
  return result;
}
