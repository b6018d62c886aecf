export type Role = 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER';

export const ROLES: Role[] = ['OWNER', 'ADMIN', 'MEMBER', 'VIEWER'];

const RANK: Record<Role, number> = { VIEWER: 0, MEMBER: 1, ADMIN: 2, OWNER: 3 };

export function atLeast(role: Role | undefined, needed: Role): boolean {
  return role !== undefined && RANK[role] >= RANK[needed];
}

export function roleLabel(role: Role): string {
  return role.charAt(0) + role.slice(1).toLowerCase();
}

export const ROLE_HELP: Record<Role, string> = {
  OWNER: 'everything, including deleting the team and transferring ownership',
  ADMIN: 'members, quotas, workers and everyone’s API keys',
  MEMBER: 'environments, datasets, experiments; runs jobs',
  VIEWER: 'read only',
};
