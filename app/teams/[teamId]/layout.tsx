'use client';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useParams, usePathname, useRouter } from 'next/navigation';
import { useEffect, useMemo, type ReactNode } from 'react';
import { ErrorNote, Loading } from '../../_ui/components';
import { httpStatusOf, isNotFound } from '../../_ui/errors';
import { rememberTeam } from '../../_ui/last-team';
import { atLeast, type Role } from '../../_ui/roles';
import { AppShell, useMe, type NavItem } from '../../_ui/shell';
import { TeamContext, type TeamInfo } from '../../_ui/team-context';
import { useTRPC } from '../../trpc';

export default function TeamLayout({ children }: { children: ReactNode }) {
  const { teamId } = useParams<{ teamId: string }>();
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const me = useMe();
  const team = useQuery({ ...trpc.teams.get.queryOptions({ teamId }), retry: false });

  const signedOut = (me.isSuccess && me.data === null) || httpStatusOf(team.error) === 401;
  useEffect(() => {
    if (signedOut) router.replace(`/sign-in?next=${encodeURIComponent(pathname)}`);
  }, [signedOut, router, pathname]);
  const isMember = !!team.data || !!me.data?.teams.some((t) => t.id === teamId);
  useEffect(() => {
    if (isMember) rememberTeam(teamId);
  }, [isMember, teamId]);
  // The switcher lists the teams of account.me: refresh it when it lags (just joined, renamed).
  const queryClient = useQueryClient();
  const meKnowsTeam = !team.data || !me.data || me.data.teams.some((t) => t.id === team.data.id && t.name === team.data.name);
  useEffect(() => {
    if (!meKnowsTeam) void queryClient.invalidateQueries({ queryKey: trpc.account.me.queryKey() });
  }, [meKnowsTeam, queryClient, trpc]);

  const info = useMemo<TeamInfo | null>(
    () =>
      team.data && me.data
        ? {
            id: team.data.id,
            name: team.data.name,
            slug: team.data.slug,
            role: team.data.role as Role,
            memberCount: team.data._count.memberships,
            userId: me.data.user.id,
            isInstallationAdmin: me.data.user.isInstallationAdmin,
          }
        : null,
    [team.data, me.data],
  );

  const base = `/teams/${teamId}`;
  const nav: NavItem[] = [
    { href: base, label: 'Overview' },
    { href: `${base}/members`, label: 'Members' },
    { href: `${base}/api-keys`, label: 'API keys' },
    { href: `${base}/workers`, label: 'Workers' },
    { href: `${base}/quotas`, label: 'Quotas' },
    ...(atLeast(info?.role, 'ADMIN') ? [{ href: `${base}/audit`, label: 'Audit log' }] : []),
    { href: `${base}/settings`, label: 'Settings' },
  ];

  if (team.isError && isNotFound(team.error)) {
    return (
      <AppShell>
        <div className="empty-state" role="alert">
          <h1>No such team</h1>
          <p>This team does not exist, or you are not a member of it.</p>
          <p>
            <Link href="/">Go to your teams</Link>
          </p>
        </div>
      </AppShell>
    );
  }
  if (team.isError && !signedOut) {
    return (
      <AppShell>
        <ErrorNote error={team.error} />
      </AppShell>
    );
  }
  if (!info) {
    return (
      <AppShell teamId={teamId}>
        <Loading />
      </AppShell>
    );
  }
  return (
    <TeamContext.Provider value={info}>
      <AppShell teamId={teamId} nav={nav}>
        {children}
      </AppShell>
    </TeamContext.Provider>
  );
}
