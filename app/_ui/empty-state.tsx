import type { ReactNode } from 'react';
import Link from 'next/link';

/** What a list shows when it has nothing yet: what it is for, and the next action. */
export function EmptyState({ title, children, action }: { title: string; children?: ReactNode; action?: ReactNode }) {
  return (
    <div className="empty-state panel">
      <h2>{title}</h2>
      {children ? <p className="muted">{children}</p> : null}
      {action}
    </div>
  );
}

/**
 * A page's thing does not exist in this team (another team's, or a mistyped link): said as such,
 * without telling which, and a way back to the team's list.
 */
export function NotFound({ kind, id, teamName, back }: { kind: string; id: string; teamName: string; back: { href: string; label: string } }) {
  return (
    <div className="empty-state" role="alert">
      <h1>No such {kind}</h1>
      <p className="muted">
        There is no {kind} {id} in {teamName}: it may belong to another team, or the link is mistyped.
      </p>
      <Link href={back.href}>{back.label}</Link>
    </div>
  );
}
