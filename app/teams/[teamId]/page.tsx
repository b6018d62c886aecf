'use client';
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { ErrorNote, Loading, PageTitle, RoleBadge, StatusBadge } from '../../_ui/components';
import { formatDuration, formatRelative } from '../../_ui/format';
import { ROLE_HELP } from '../../_ui/roles';
import { useTeam } from '../../_ui/team-context';
import { useTRPC } from '../../trpc';

function Environments({ teamId }: { teamId: string }) {
  const trpc = useTRPC();
  const envs = useQuery(trpc.environments.list.queryOptions({ teamId }));
  if (envs.isPending) return <Loading />;
  if (envs.isLoadingError) return <ErrorNote error={envs.error} />;
  if (envs.data.length === 0) return <p className="muted">No environments in this team yet.</p>;
  return (
    <ul className="list">
      {envs.data.map((env) => (
        <li key={env.id}>
          <div>
            <strong>{env.name}</strong>
            {env.versions[0] ? <span className="muted"> · v{env.versions[0].version}</span> : null}
            {env.description ? <div className="muted small">{env.description}</div> : null}
          </div>
          <span className="muted small nowrap">updated {formatRelative(env.updatedAt)}</span>
        </li>
      ))}
    </ul>
  );
}

function RecentJobs({ teamId }: { teamId: string }) {
  const trpc = useTRPC();
  const jobs = useQuery(trpc.jobs.list.queryOptions({ teamId, limit: 8 }));
  if (jobs.isPending) return <Loading />;
  if (jobs.isLoadingError) return <ErrorNote error={jobs.error} />;
  if (jobs.data.length === 0) return <p className="muted">No jobs have run in this team yet.</p>;
  return (
    <ul className="list">
      {jobs.data.map((job) => (
        <li key={job.id}>
          <div>
            <strong>{job.kind}</strong> <StatusBadge status={job.state} />
            <div className="muted small">
              {job.owner.name} · {job.deviceCount} device{job.deviceCount === 1 ? '' : 's'} · priority {job.priority}
              {job.waitingReason ? ` · ${job.waitingReason}` : ''}
              {job.failureReason ? ` · ${job.failureReason}` : ''}
            </div>
          </div>
          <span className="muted small nowrap">{formatRelative(job.createdAt)}</span>
        </li>
      ))}
    </ul>
  );
}

function SystemStatus() {
  const trpc = useTRPC();
  const health = useQuery({ ...trpc.system.health.queryOptions(), refetchInterval: 10_000 });
  if (health.isPending) return <Loading label="Checking…" />;
  if (health.isLoadingError) return <ErrorNote error={health.error} />;
  const h = health.data;
  return (
    <dl className="facts" aria-label="System status">
      <dt>Status</dt>
      <dd className={h.status === 'ok' ? 'ok' : 'bad'}>{h.status}</dd>
      <dt>Database</dt>
      <dd>
        {h.database.reachable ? `reachable (${h.database.latencyMs} ms)` : 'unreachable'}
        {h.database.embedded ? ', embedded' : ''}
      </dd>
      <dt>Workers online</dt>
      <dd>{h.workers.online}</dd>
      <dt>Version</dt>
      <dd>{h.version}</dd>
      <dt>Up for</dt>
      <dd>{formatDuration(h.uptimeSeconds)}</dd>
    </dl>
  );
}

export default function TeamOverviewPage() {
  const team = useTeam();
  const base = `/teams/${team.id}`;
  return (
    <>
      <PageTitle title={team.name}>
        <RoleBadge role={team.role} />
      </PageTitle>
      <p className="muted lead">
        You are {team.role === 'ADMIN' || team.role === 'OWNER' ? 'an' : 'a'} {team.role.toLowerCase()} of this team:{' '}
        {ROLE_HELP[team.role]}. {team.memberCount} member{team.memberCount === 1 ? '' : 's'} ·{' '}
        <Link href={`${base}/members`}>see members</Link>
      </p>
      <div className="grid">
        <section className="panel" aria-labelledby="envs-title">
          <h2 id="envs-title">Environments</h2>
          <Environments teamId={team.id} />
        </section>
        <section className="panel" aria-labelledby="jobs-title">
          <h2 id="jobs-title">Recent jobs</h2>
          <RecentJobs teamId={team.id} />
        </section>
        <section className="panel" aria-labelledby="system-title">
          <h2 id="system-title">System</h2>
          <SystemStatus />
        </section>
      </div>
    </>
  );
}
