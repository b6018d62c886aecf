'use client';
import { createContext, useContext } from 'react';
import type { Role } from './roles';

export interface TeamInfo {
  id: string;
  name: string;
  slug: string;
  role: Role;
  memberCount: number;
  userId: string;
  isInstallationAdmin: boolean;
}

export const TeamContext = createContext<TeamInfo | null>(null);

/** The team of the page (from /teams/[teamId]), with the caller's role in it. */
export function useTeam(): TeamInfo {
  const team = useContext(TeamContext);
  if (!team) throw new Error('useTeam outside a team page');
  return team;
}
