'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { usePathname, useRouter } from 'next/navigation';
import { useCallback, useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { authClient } from '../auth-client';
import { useTRPC } from '../trpc';
import { lastTeam } from './last-team';
import { PaletteButton, usePalette } from './palette';
import { Rail } from './rail';
import { ThemeToggle } from './theme';
import { roleLabel, type Role } from './roles';

/** The signed-in user and their teams (null when signed out). */
export function useMe() {
  const trpc = useTRPC();
  return useQuery(trpc.account.me.queryOptions());
}

/** The part of a team URL after the team id ("members", "api-keys", …), kept when switching teams. */
function teamSection(pathname: string): string {
  const m = /^\/teams\/[^/]+\/([^/]+)/.exec(pathname);
  return m ? `/${m[1]}` : '';
}

function TeamSwitcher({ currentTeamId }: { currentTeamId?: string }) {
  const me = useMe();
  const pathname = usePathname();
  const [open, setOpen] = useState(false);
  const menuId = useId();
  const root = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!open) return;
    const onPointer = (e: PointerEvent) => {
      if (!root.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener('pointerdown', onPointer);
    root.current?.querySelector<HTMLAnchorElement>('a[aria-current="true"], a')?.focus();
    return () => document.removeEventListener('pointerdown', onPointer);
  }, [open]);

  // Outside a team's pages, show the team last opened in this browser.
  const [remembered, setRemembered] = useState<string | null>(null);
  useEffect(() => {
    if (!currentTeamId) setRemembered(lastTeam());
  }, [currentTeamId]);

  const teams = me.data?.teams ?? [];
  if (!me.data) return null;
  const current = teams.find((t) => t.id === (currentTeamId ?? remembered)) ?? (currentTeamId ? undefined : teams[0]);
  const section = currentTeamId ? teamSection(pathname) : '';

  return (
    <div
      className="switcher"
      ref={root}
      onKeyDown={(e) => {
        if (e.key === 'Escape' && open) {
          setOpen(false);
          button.current?.focus();
        }
        if (open && (e.key === 'ArrowDown' || e.key === 'ArrowUp')) {
          e.preventDefault();
          const links = Array.from(root.current?.querySelectorAll<HTMLAnchorElement>('.switcher-menu a') ?? []);
          const at = links.indexOf(document.activeElement as HTMLAnchorElement);
          const next = e.key === 'ArrowDown' ? (at + 1) % links.length : (at - 1 + links.length) % links.length;
          links[next]?.focus();
        }
      }}
      onBlur={(e) => {
        if (open && !root.current?.contains(e.relatedTarget as Node | null)) setOpen(false);
      }}
    >
      <button
        ref={button}
        type="button"
        className="switcher-button"
        aria-haspopup="true"
        aria-expanded={open}
        aria-controls={menuId}
        onClick={() => setOpen((o) => !o)}
      >
        <span className="switcher-caption">Team</span>
        <span className="switcher-name">{current ? current.name : 'Choose a team'}</span>
        <span aria-hidden="true" className="caret">▾</span>
      </button>
      {open ? (
        <div className="switcher-menu" id={menuId}>
          <nav aria-label="Your teams">
            <ul>
              {teams.map((t) => (
                <li key={t.id}>
                  <Link
                    href={`/teams/${t.id}${section}`}
                    aria-current={t.id === current?.id ? 'true' : undefined}
                    onClick={() => setOpen(false)}
                  >
                    <span>{t.name}</span>
                    <span className="muted small">{roleLabel(t.role as Role)}</span>
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
          <div className="switcher-footer">
            <Link href="/teams/new" onClick={() => setOpen(false)}>
              + New team
            </Link>
          </div>
        </div>
      ) : null}
    </div>
  );
}

function AccountArea() {
  const me = useMe();
  const router = useRouter();
  const queryClient = useQueryClient();
  const signOut = useMutation({
    mutationFn: async () => {
      const result = await authClient.signOut();
      if (result.error) throw new Error(result.error.message ?? 'Could not sign out');
    },
    onSuccess: async () => {
      queryClient.clear();
      router.push('/');
    },
  });
  if (me.isPending) return null;
  if (!me.data) {
    return (
      <div className="account-area">
        <Link href="/sign-in">Sign in</Link>
        <Link href="/sign-up" className="btn btn-primary btn-small">
          Sign up
        </Link>
      </div>
    );
  }
  return (
    <div className="account-area">
      <Link href="/account" className="account-link" title="Account settings">
        {me.data.user.name || me.data.user.email}
      </Link>
      <button type="button" className="btn btn-small" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
        {signOut.isPending ? 'Signing out…' : 'Sign out'}
      </button>
    </div>
  );
}

/**
 * Every page's frame: the top bar (brand, team switcher, palette, theme, account) and, in a team,
 * the left rail of its sections. Ctrl/Cmd-K opens the palette from anywhere.
 */
export function AppShell({ teamId, children, narrow }: { teamId?: string; children: ReactNode; narrow?: boolean }) {
  const { setOpen: setPaletteOpen } = usePalette();
  const openPalette = useCallback(() => setPaletteOpen(true), [setPaletteOpen]);
  const me = useMe();
  return (
    <>
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <header className="topbar">
        <div className="topbar-inner">
          <Link href="/" className="brand">
            <span className="brand-mark" aria-hidden="true" />
            Whetstone
          </Link>
          <TeamSwitcher currentTeamId={teamId} />
          {me.data ? <PaletteButton onOpen={openPalette} /> : null}
          <div className="spacer" />
          <ThemeToggle />
          <AccountArea />
        </div>
      </header>
      <div className="app-body">
        {teamId ? <Rail teamId={teamId} /> : null}
        <main id="main" className={narrow ? 'content content-narrow' : 'content'} tabIndex={-1}>
          {children}
        </main>
      </div>
    </>
  );
}
