'use client';
import { Boxes, BrainCircuit, Database, FlaskConical, Library, type LucideIcon, Server, Swords, Trophy, Users, Workflow } from 'lucide-react';
import Link from 'next/link';
import { usePathname } from 'next/navigation';

export interface RailItem {
  href: string;
  label: string;
  icon: LucideIcon;
  /** Also current on these sub-paths of the team (the Team item covers the settings pages). */
  alsoCurrentOn?: string[];
}

/** The sections of a team's work, in the order a researcher meets them. */
export function teamSections(teamId: string): RailItem[] {
  const base = `/teams/${teamId}`;
  return [
    { href: `${base}/environments`, label: 'Environments', icon: Workflow },
    { href: `${base}/datasets`, label: 'Datasets', icon: Database },
    { href: `${base}/models`, label: 'Models', icon: BrainCircuit },
    { href: `${base}/runs`, label: 'Runs', icon: FlaskConical },
    { href: `${base}/checkpoints`, label: 'Checkpoints', icon: Boxes },
    { href: `${base}/matches`, label: 'Matches', icon: Swords },
    { href: `${base}/tournaments`, label: 'Tournaments', icon: Trophy },
    { href: `${base}/gallery`, label: 'Gallery', icon: Library },
    { href: `${base}/cluster`, label: 'Cluster', icon: Server },
    { href: base, label: 'Team', icon: Users, alsoCurrentOn: TEAM_PAGES.map((p) => `${base}/${p.path}`) },
  ];
}

/** The team's own pages, under "Team" (members, keys, secrets, workers, quotas, audit, settings). */
export const TEAM_PAGES: { path: string; label: string; adminOnly?: boolean }[] = [
  { path: 'members', label: 'Members' },
  { path: 'api-keys', label: 'API keys' },
  { path: 'secrets', label: 'Secrets' },
  { path: 'workers', label: 'Workers' },
  { path: 'quotas', label: 'Quotas' },
  { path: 'audit', label: 'Audit log', adminOnly: true },
  { path: 'settings', label: 'Settings' },
];

function isCurrent(item: RailItem, pathname: string): boolean {
  const under = (href: string) => pathname === href || pathname.startsWith(`${href}/`);
  if (item.alsoCurrentOn) return pathname === item.href || item.alsoCurrentOn.some(under);
  return under(item.href);
}

export function Rail({ teamId }: { teamId: string }) {
  const pathname = usePathname();
  return (
    <nav className="rail" aria-label="Sections">
      <ul>
        {teamSections(teamId).map((item) => {
          const Icon = item.icon;
          return (
            <li key={item.href}>
              <Link href={item.href} aria-current={isCurrent(item, pathname) ? 'page' : undefined}>
                <Icon size={17} aria-hidden="true" />
                {item.label}
              </Link>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
