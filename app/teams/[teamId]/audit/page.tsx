'use client';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { ErrorNote, Field, Loading, PageTitle } from '../../../_ui/components';
import { formatDateTime } from '../../../_ui/format';
import { atLeast } from '../../../_ui/roles';
import { useTeam } from '../../../_ui/team-context';
import { useTRPC } from '../../../trpc';

const CATEGORIES = [
  { prefix: '', label: 'All actions' },
  { prefix: 'member.', label: 'Members' },
  { prefix: 'invitation.', label: 'Invitations' },
  { prefix: 'api_key.', label: 'API keys' },
  { prefix: 'secret.', label: 'Secrets' },
  { prefix: 'worker_token.', label: 'Worker tokens' },
  { prefix: 'worker.', label: 'Workers' },
  { prefix: 'quota.', label: 'Quotas' },
  { prefix: 'team.', label: 'Team' },
];

function describeDetails(details: unknown): string {
  if (details === null || details === undefined) return '';
  if (typeof details !== 'object') return String(details);
  return Object.entries(details as Record<string, unknown>)
    .map(([k, v]) => `${k}: ${typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`)
    .join(', ');
}

function AuditLog() {
  const trpc = useTRPC();
  const team = useTeam();
  const [action, setAction] = useState('');
  const log = useInfiniteQuery(
    trpc.audit.list.infiniteQueryOptions(
      { teamId: team.id, limit: 50, ...(action ? { action } : {}) },
      { getNextPageParam: (last) => last.nextCursor ?? undefined },
    ),
  );
  const entries = log.data?.pages.flatMap((p) => p.entries) ?? [];
  return (
    <>
      <div className="toolbar">
        <Field label="Show">
          {(props) => (
            <select {...props} value={action} onChange={(e) => setAction(e.target.value)}>
              {CATEGORIES.map((c) => (
                <option key={c.prefix} value={c.prefix}>
                  {c.label}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      {log.isPending ? (
        <Loading />
      ) : log.isLoadingError ? (
        <ErrorNote error={log.error} />
      ) : entries.length === 0 ? (
        <p className="muted">Nothing recorded yet.</p>
      ) : (
        <>
          <div className="table-wrap">
            <table className="table" aria-label="Audit log">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Who</th>
                  <th scope="col">Action</th>
                  <th scope="col">Target</th>
                  <th scope="col">Details</th>
                  <th scope="col">Address</th>
                </tr>
              </thead>
              <tbody>
                {entries.map((e) => (
                  <tr key={String(e.id)}>
                    <td className="nowrap">{formatDateTime(e.at)}</td>
                    <td>{e.actor ? e.actor.name || e.actor.email : <span className="muted">system</span>}</td>
                    <td>
                      <code>{e.action}</code>
                    </td>
                    <td>
                      {e.targetType ? (
                        <>
                          {e.targetType} <span className="muted small mono">{e.targetId}</span>
                        </>
                      ) : (
                        <span className="muted">—</span>
                      )}
                    </td>
                    <td className="small">{describeDetails(e.details)}</td>
                    <td className="small mono">{e.ipAddress ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {log.hasNextPage ? (
            <div className="actions">
              <button type="button" className="btn" onClick={() => log.fetchNextPage()} disabled={log.isFetchingNextPage}>
                {log.isFetchingNextPage ? 'Loading…' : 'Load older entries'}
              </button>
            </div>
          ) : null}
        </>
      )}
    </>
  );
}

export default function AuditPage() {
  const team = useTeam();
  return (
    <>
      <PageTitle title="Audit log" />
      <p className="muted lead">Security-relevant actions in {team.name}, newest first.</p>
      <section className="panel" aria-label="Audit log entries">
        {atLeast(team.role, 'ADMIN') ? <AuditLog /> : <p className="notice notice-error" role="alert">The audit log is for admins of this team.</p>}
      </section>
    </>
  );
}
