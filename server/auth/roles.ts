import type { Role } from '../db/generated/prisma/enums';

/** Each role can do everything the roles below it can. */
const rank: Record<Role, number> = { VIEWER: 0, MEMBER: 1, ADMIN: 2, OWNER: 3 };

export function roleAtLeast(role: Role, required: Role): boolean {
  return rank[role] >= rank[required];
}
