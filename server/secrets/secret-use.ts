import { TRPCError } from '@trpc/server';
import { secretNamesOf, type ServerHeaders } from '../../sdk/team-secrets';
import { roleAtLeast } from '../auth/roles';
import type { Role } from '../db/generated/prisma/enums';
import type { Db } from '../db/client';

// Who may point a team secret at a server. A secret's value goes wherever a manifest's
// `server.urls` say: were any member free to write a manifest naming a secret and a server of
// their own, saving or playing it would hand them the value an admin set. So a server setup that
// sends team secrets — its URLs with its headers — is the team's once an admin has saved it;
// members use it as it is (a version's manifest copied, edited elsewhere, imported again).

interface ServerPart {
  urls?: unknown;
  headers?: ServerHeaders;
}

/** Throws FORBIDDEN when a caller below admin would send team secrets to servers the team has not vouched for. */
export async function checkSecretUse(db: Db, teamId: string, role: Role, manifest: unknown): Promise<void> {
  const server = (manifest as { server?: ServerPart } | null)?.server;
  const names = secretNamesOf(server?.headers);
  if (names.length === 0 || roleAtLeast(role, 'ADMIN')) return;
  // Vouched for: a version of the team's whose manifest has these URLs and these headers.
  const wanted = JSON.stringify({ server: { urls: server?.urls ?? [], headers: server?.headers ?? {} } });
  const vouched = await db.$queryRaw<Array<{ id: string }>>`
    SELECT ev.id FROM "EnvironmentVersion" ev JOIN "Environment" e ON e.id = ev."environmentId"
    WHERE e."teamId" = ${teamId} AND ev.manifest @> ${wanted}::jsonb LIMIT 1`;
  if (vouched.length > 0) return;
  const urls = Array.isArray(server?.urls) ? (server.urls as unknown[]).map(String).join(', ') : '';
  throw new TRPCError({
    code: 'FORBIDDEN',
    message: `Only a team admin can send team secrets to servers the team has not used them with: these headers send ${names.join(', ')} to ${urls}. An admin saves this environment once; then members may use it`,
  });
}
