'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ErrorNote, Loading, PageTitle, StatusBadge } from '../../../_ui/components';
import { formatBytes, formatRelative } from '../../../_ui/format';
import { atLeast } from '../../../_ui/roles';
import { useTeam } from '../../../_ui/team-context';
import { WorkerActions } from '../../../_ui/worker-actions';
import { WorkerTokens } from '../../../_ui/worker-tokens';
import { useTRPC } from '../../../trpc';
import { refetchAfterChange } from '../../../_ui/refresh';

function Workers() {
  const trpc = useTRPC();
  const team = useTeam();
  const workers = useQuery({ ...trpc.workers.list.queryOptions({ teamId: team.id }), refetchInterval: 15_000 });
  const isAdmin = atLeast(team.role, 'ADMIN');

  if (workers.isPending) return <Loading />;
  if (workers.isLoadingError) return <ErrorNote error={workers.error} />;
  if (workers.data.length === 0) {
    return (
      <p className="muted">
        No workers can run this team’s jobs yet.{' '}
        {isAdmin ? 'Create a registration token below and start a worker daemon with it.' : 'Ask an admin to register one.'}
      </p>
    );
  }
  return (
    <>
      <div className="table-wrap">
        <table className="table" aria-label="Workers">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Pool</th>
              <th scope="col">State</th>
              <th scope="col">Devices</th>
              <th scope="col">Backend</th>
              <th scope="col">Last heartbeat</th>
              {isAdmin ? (
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              ) : null}
            </tr>
          </thead>
          <tbody>
            {workers.data.map((w) => (
              <tr key={w.id}>
                <th scope="row">
                  {w.name}
                  <div className="muted small">{w.hostname}</div>
                </th>
                <td>{w.pool === 'team' ? team.name : 'Shared'}</td>
                <td>
                  <StatusBadge status={w.online || w.state !== 'ONLINE' ? w.state : 'OFFLINE'} />
                </td>
                <td>
                  {w.devices.length === 0 ? (
                    <span className="muted">none</span>
                  ) : (
                    <ul className="compact">
                      {w.devices.map((d) => (
                        <li key={d.index}>
                          {d.kind} {d.index}: {d.name}
                          {Number(d.memoryBytes) > 0 ? `, ${formatBytes(d.memoryBytes)}` : ''}
                        </li>
                      ))}
                    </ul>
                  )}
                </td>
                <td>
                  {w.backend} <span className="muted small">v{w.version}</span>
                </td>
                <td>{formatRelative(w.lastHeartbeatAt)}</td>
                {isAdmin ? (
                  <td className="row-actions">
                    <WorkerActions teamId={team.id} worker={w} />
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function TeamWorkerTokens() {
  const trpc = useTRPC();
  const team = useTeam();
  const queryClient = useQueryClient();
  const tokens = useQuery(trpc.workerTokens.list.queryOptions({ teamId: team.id }));
  const invalidate = () => refetchAfterChange(queryClient, trpc.workerTokens.list.queryKey({ teamId: team.id }));
  const create = useMutation(trpc.workerTokens.create.mutationOptions({ onSuccess: invalidate }));
  const revoke = useMutation(trpc.workerTokens.revoke.mutationOptions({ onSuccess: invalidate }));
  return (
    <WorkerTokens
      poolLabel={`${team.name}’s pool`}
      tokens={{ data: tokens.data, isPending: tokens.isPending, error: tokens.error }}
      create={(input) => create.mutateAsync({ teamId: team.id, ...input })}
      createPending={create.isPending}
      createError={create.error}
      revoke={(tokenId) => revoke.mutate({ teamId: team.id, tokenId })}
      revokePending={revoke.isPending}
      revokeError={revoke.error}
    />
  );
}

export default function WorkersPage() {
  const team = useTeam();
  return (
    <>
      <PageTitle title="Workers" />
      <p className="muted lead">
        GPU workers that run this team’s jobs: the team’s own pool, and the shared pool of the installation.
      </p>
      <section className="panel" aria-labelledby="workers-title">
        <h2 id="workers-title">Workers</h2>
        <Workers />
      </section>
      {atLeast(team.role, 'ADMIN') ? (
        <section className="panel" aria-labelledby="tokens-title">
          <h2 id="tokens-title">Registration tokens</h2>
          <p className="muted">A worker daemon registers into this team’s pool with one of these tokens.</p>
          <TeamWorkerTokens />
        </section>
      ) : null}
    </>
  );
}
