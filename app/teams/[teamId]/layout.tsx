'use client';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useParams, usePathname, useRouter } from 'next/navigation';
import { useEffect, useMemo, type ReactNode } from 'react';
import { ErrorNote, Loading } from '../../_ui/components';
import { httpStatusOf, isNotFound } from '../../_ui/errors';
import { rememberTeam } from '../../_ui/last-team';
import { atLeast, type Role } from '../../_ui/roles';
import { TEAM_PAGES } from '../../_ui/rail';
import { AppShell, useMe } from '../../_ui/shell';
import { TeamContext, type TeamInfo } from '../../_ui/team-context';
import { useTRPC } from '../../trpc';
import '../../_ui/sections.css';

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

  if (team.isLoadingError && isNotFound(team.error)) {
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
  if (team.isLoadingError && !signedOut) {
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
      <AppShell teamId={teamId}>
        <TeamSubNav teamId={teamId} role={info.role} />
        {children}
      </AppShell>
    </TeamContext.Provider>
  );
}

/** On the team's own pages (overview, members, keys…), their tabs; elsewhere nothing. */
function TeamSubNav({ teamId, role }: { teamId: string; role: Role }) {
  const pathname = usePathname();
  const base = `/teams/${teamId}`;
  const pages = [{ href: base, label: 'Overview' }, ...TEAM_PAGES.filter((p) => !p.adminOnly || atLeast(role, 'ADMIN')).map((p) => ({ href: `${base}/${p.path}`, label: p.label }))];
  if (!pages.some((p) => p.href === pathname)) return null;
  return (
    <nav className="sub-nav" aria-label="Team">
      <ul>
        {pages.map((p) => (
          <li key={p.href}>
            <Link href={p.href} aria-current={p.href === pathname ? 'page' : undefined}>
              {p.label}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}
