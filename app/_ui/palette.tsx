'use client';
import { useQuery } from '@tanstack/react-query';
import { Command } from 'cmdk';
import { FilePlus2, MessageSquare, Moon, Rocket, Search } from 'lucide-react';
import { usePathname, useRouter } from 'next/navigation';
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from 'react';
import { useTRPC } from '../trpc';
import { TEAM_PAGES, teamSections } from './rail';
import { useThemeChoice } from './theme';

/**
 * Whether the palette is open and what is typed in it, kept above the pages: a navigation (the
 * home page handing over to the team's page, a page's shell rendered anew once its data loads)
 * keeps both rather than dropping what the user started. Ctrl/Cmd-K anywhere opens it.
 */
interface PaletteState {
  open: boolean;
  setOpen: (open: boolean) => void;
  search: string;
  setSearch: (search: string) => void;
}
const PaletteContext = createContext<PaletteState>({ open: false, setOpen: () => {}, search: '', setSearch: () => {} });

export function PaletteProvider({ children }: { children: ReactNode }) {
  const [open, setOpenState] = useState(false);
  const [search, setSearch] = useState('');
  const setOpen = useCallback((next: boolean) => {
    setOpenState(next);
    if (!next) setSearch('');
  }, []);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === 'k') {
        e.preventDefault();
        // The editor takes Ctrl-K as the start of a chord and keeps the key to itself: the
        // palette listens in the capture phase, before it, and the editor never sees this key.
        e.stopPropagation();
        setOpenState(true);
      }
    };
    window.addEventListener('keydown', onKey, { capture: true });
    return () => window.removeEventListener('keydown', onKey, { capture: true });
  }, []);
  const value = useMemo(() => ({ open, setOpen, search, setSearch }), [open, setOpen, search]);
  return (
    <PaletteContext.Provider value={value}>
      {children}
      <PaletteHost />
    </PaletteContext.Provider>
  );
}

/**
 * The app's one palette, rendered above the pages so that it is never mounted anew while the user
 * types in it (a page handing over to another, a shell rendered again once its data loads): keys
 * typed then would be lost. Signed in only; it works in the team of the URL.
 */
function PaletteHost() {
  const trpc = useTRPC();
  const me = useQuery(trpc.account.me.queryOptions());
  const pathname = usePathname();
  const inTeam = /^\/teams\/([^/]+)/.exec(pathname)?.[1];
  return me.data ? <CommandPalette teamId={inTeam && inTeam !== 'new' ? inTeam : undefined} /> : null;
}

export function usePalette() {
  return useContext(PaletteContext);
}

export function PaletteButton({ onOpen }: { onOpen: () => void }) {
  return (
    <button type="button" className="palette-button" onClick={onOpen} aria-keyshortcuts="Control+K Meta+K">
      <Search size={15} aria-hidden="true" />
      <span className="palette-label">Jump to or run…</span>
      <kbd aria-hidden="true">Ctrl K</kbd>
    </button>
  );
}

/**
 * The command palette: every page of the team, its environments, runs and datasets, and the
 * main actions. Items are links the router follows; what is searched is each item's label
 * plus keywords (cmdk's fuzzy match).
 */
function CommandPalette({ teamId }: { teamId?: string }) {
  const router = useRouter();
  const trpc = useTRPC();
  const [theme, setTheme] = useThemeChoice();
  const { open, setOpen: onOpenChange, search, setSearch } = usePalette();
  const enabled = open && !!teamId;
  const envs = useQuery({ ...trpc.environments.list.queryOptions({ teamId: teamId ?? '', includeArchived: false }), enabled });
  const runs = useQuery({ ...trpc.jobs.list.queryOptions({ teamId: teamId ?? '', limit: 50 }), enabled });
  const datasets = useQuery({ ...trpc.datasets.list.queryOptions({ teamId: teamId ?? '' }), enabled });
  const checkpoints = useQuery({ ...trpc.runs.teamCheckpoints.queryOptions({ teamId: teamId ?? '', kind: 'SAMPLER', offset: 0, limit: 30 }), enabled });

  const go = (href: string) => {
    onOpenChange(false);
    router.push(href);
  };
  const base = teamId ? `/teams/${teamId}` : '';

  return (
    <Command.Dialog open={open} onOpenChange={onOpenChange} label="Command palette" contentClassName="palette" overlayClassName="palette-overlay">
      <div className="palette-input">
        <Search size={16} aria-hidden="true" />
        <Command.Input value={search} onValueChange={setSearch} placeholder="Jump to a page, environment or run, or type an action…" />
        <kbd aria-hidden="true">Esc</kbd>
      </div>
      <Command.List className="palette-list">
        <Command.Empty>Nothing matches “{search}”.</Command.Empty>
        {teamId ? (
          <>
            <Command.Group heading="Actions">
              <Command.Item value="action new environment from template" onSelect={() => go(`${base}/environments/new`)}>
                <FilePlus2 size={15} aria-hidden="true" /> New environment from template…
              </Command.Item>
              <Command.Item value="action launch run training" onSelect={() => go(`${base}/launch`)}>
                <Rocket size={15} aria-hidden="true" /> Launch run…
              </Command.Item>
              <Command.Item
                value={`action switch to ${theme === 'dark' ? 'light' : 'dark'} theme`}
                keywords={['toggle', 'theme', 'dark', 'light', 'colours']}
                onSelect={() => {
                  setTheme(theme === 'dark' ? 'light' : 'dark');
                  onOpenChange(false);
                }}
              >
                <Moon size={15} aria-hidden="true" /> Switch to {theme === 'dark' ? 'light' : 'dark'} theme
              </Command.Item>
            </Command.Group>
            <Command.Group heading="Pages">
              {teamSections(teamId).map((item) => (
                <Command.Item key={item.href} value={`page ${item.label}`} onSelect={() => go(item.href)}>
                  <item.icon size={15} aria-hidden="true" /> {item.label}
                </Command.Item>
              ))}
              {TEAM_PAGES.map((p) => (
                <Command.Item key={p.path} value={`page team ${p.label}`} onSelect={() => go(`${base}/${p.path}`)}>
                  <span className="palette-indent" aria-hidden="true" /> Team › {p.label}
                </Command.Item>
              ))}
            </Command.Group>
            {envs.data && envs.data.length > 0 ? (
              <Command.Group heading="Environments">
                {envs.data.map((env) => (
                  <Command.Item key={env.id} value={`environment ${env.name} ${env.id}`} onSelect={() => go(`${base}/environments/${env.id}`)}>
                    <span className="palette-indent" aria-hidden="true" /> {env.name}
                    {env.versions[0] ? <span className="muted small">v{env.versions[0].version}</span> : null}
                  </Command.Item>
                ))}
              </Command.Group>
            ) : null}
            {runs.data && runs.data.length > 0 ? (
              <Command.Group heading="Runs">
                {runs.data.map((job) => (
                  <Command.Item key={job.id} value={`run ${job.kind} ${job.id} ${job.state}`} onSelect={() => go(`${base}/runs/${job.id}`)}>
                    <span className="palette-indent" aria-hidden="true" /> {job.kind.toLowerCase()} <span className="mono small">{job.id.slice(0, 10)}</span>
                    <span className="muted small">{job.state.toLowerCase()}</span>
                  </Command.Item>
                ))}
              </Command.Group>
            ) : null}
            {checkpoints.data && checkpoints.data.checkpoints.length > 0 ? (
              <Command.Group heading="Checkpoints">
                {checkpoints.data.checkpoints.map((c) => (
                  <Command.Item
                    key={c.id}
                    value={`checkpoint playground ${c.job?.environmentName ?? ''} step ${c.step} ${c.id}`}
                    onSelect={() => go(`${base}/playground/${c.id}`)}
                  >
                    <MessageSquare size={15} aria-hidden="true" /> Open in playground: {c.job?.environmentName ?? 'checkpoint'} step {c.step}
                    <span className="mono small muted">{c.id.slice(0, 10)}</span>
                  </Command.Item>
                ))}
              </Command.Group>
            ) : null}
            {datasets.data && datasets.data.length > 0 ? (
              <Command.Group heading="Datasets">
                {datasets.data.map((d) => (
                  <Command.Item key={d.id} value={`dataset ${d.name}`} onSelect={() => go(`${base}/datasets/${d.id}`)}>
                    <span className="palette-indent" aria-hidden="true" /> {d.name}
                  </Command.Item>
                ))}
              </Command.Group>
            ) : null}
          </>
        ) : (
          <Command.Group heading="Pages">
            <Command.Item value="page your teams home" onSelect={() => go('/')}>
              Your teams
            </Command.Item>
            <Command.Item value="page account" onSelect={() => go('/account')}>
              Account
            </Command.Item>
          </Command.Group>
        )}
      </Command.List>
    </Command.Dialog>
  );
}
