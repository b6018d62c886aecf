'use client';
import { useQuery } from '@tanstack/react-query';
import { Library, Plus } from 'lucide-react';
import Link from 'next/link';
import { useSearchParams } from 'next/navigation';
import { ErrorNote, Loading, PageTitle, StatusBadge } from '../../../_ui/components';
import { PackageDrop } from '../../../_ui/packages';
import { SearchField } from '../../../_ui/search-field';
import { formatRelative } from '../../../_ui/format';
import { useTeam } from '../../../_ui/team-context';
import { useTRPC } from '../../../trpc';

interface ManifestSummary {
  kind?: string;
  agents?: string[];
}

export default function EnvironmentsPage() {
  const team = useTeam();
  const trpc = useTRPC();
  const params = useSearchParams();
  const q = params.get('q') ?? '';
  const envs = useQuery(trpc.environments.list.queryOptions({ teamId: team.id }));
  const lastRuns = useQuery(trpc.environments.lastRuns.queryOptions({ teamId: team.id }));
  const base = `/teams/${team.id}`;
  const runOf = new Map((lastRuns.data ?? []).map((r) => [r.environmentId, r]));
  const shown = (envs.data ?? []).filter((e) => !q || `${e.name} ${e.description}`.toLowerCase().includes(q.toLowerCase()));

  return (
    <PackageDrop
      picker={(importButton) => (
        <>
          <PageTitle title="Environments">
            <Link href={`${base}/gallery`} className="btn">
              <Library size={16} aria-hidden="true" /> Gallery
            </Link>
            {importButton}
            <Link href={`${base}/environments/new`} className="btn btn-primary">
              <Plus size={16} aria-hidden="true" /> New environment
            </Link>
          </PageTitle>
          <p className="muted lead">
            Each environment is code and a manifest, saved as immutable versions. Open one to edit it, play it by hand and launch training. Drop a <span className="mono">.wsenv</span> package here to
            import one another team exported.
          </p>
        </>
      )}
    >
      <SearchField label="Search environments" />
      {envs.isPending ? (
        <Loading label="Loading environments…" />
      ) : envs.isLoadingError ? (
        <ErrorNote error={envs.error} />
      ) : envs.data.length === 0 ? (
        <div className="empty-state panel">
          <h2>No environments yet</h2>
          <p className="muted">
            Start from a template (bandit, math, math-tools, gomoku) or a blank environment, import a package, or take one from the <Link href={`${base}/gallery`}>gallery</Link>.
          </p>
          <Link href={`${base}/environments/new`} className="btn btn-primary">
            New environment
          </Link>
        </div>
      ) : shown.length === 0 ? (
        <p className="muted">No environment matches “{q}”.</p>
      ) : (
        <div className="panel table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Agents</th>
                <th scope="col">Latest</th>
                <th scope="col">Last run</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((env) => {
                const latest = env.versions[0];
                const manifest = (latest?.manifest ?? {}) as ManifestSummary;
                const run = runOf.get(env.id);
                return (
                  <tr key={env.id}>
                    <th scope="row">
                      <Link href={`${base}/environments/${env.id}`}>{env.name}</Link>
                      {env.template ? <span className="badge badge-soft">template</span> : null}
                      {env.description ? <div className="muted small table-sub">{env.description}</div> : null}
                    </th>
                    <td className="nowrap">{manifest.kind ?? '—'}</td>
                    <td>{manifest.agents?.join(', ') ?? '—'}</td>
                    <td className="nowrap">
                      {latest ? (
                        <>
                          v{latest.version} <StatusBadge status={latest.validationStatus} />
                        </>
                      ) : (
                        '—'
                      )}
                    </td>
                    <td className="nowrap">
                      {run ? (
                        <Link href={`${base}/runs/${run.jobId}`}>
                          {run.kind.toLowerCase()} <StatusBadge status={run.state} />
                          {run.reward !== null ? <span className="tabular"> · reward {run.reward.toFixed(3)}</span> : null}
                        </Link>
                      ) : (
                        <span className="muted">never run</span>
                      )}
                    </td>
                    <td className="muted small nowrap">{formatRelative(env.updatedAt)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </PackageDrop>
  );
}
