'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { ConfirmButton, ErrorNote, Loading, PageTitle, Reason, StatusBadge } from '../../../_ui/components';
import { DataTable, type Column } from '../../../_ui/data-table';
import { EmptyState } from '../../../_ui/empty-state';
import { formatBytes, formatDateTime, formatRelative } from '../../../_ui/format';
import { SharedClusterProviders, TeamClusterProviders, useStartingWorkers } from '../../../_ui/cluster-providers';
import { Meter } from '../../../_ui/meter';
import { refetchAfterChange } from '../../../_ui/refresh';
import { atLeast } from '../../../_ui/roles';
import { useJobHints } from '../../../_ui/runs/job-hints';
import { KindBadge, RunStateBadge } from '../../../_ui/runs/run-parts';
import { LIVE_REFETCH_MS, stateLine } from '../../../_ui/runs/run-state';
import { useTeam } from '../../../_ui/team-context';
import { UsageChart } from '../../../_ui/usage-chart';
import { WorkerActions } from '../../../_ui/worker-actions';
import { useTRPC } from '../../../trpc';

/** Workers report a heartbeat every few seconds; the page follows them at this pace. */
const WORKERS_REFETCH_MS = 5_000;
/** The day's usage moves by the hour: asked once a minute, apart from the meters. */
const HISTORY_REFETCH_MS = 60_000;
const QUEUE_LIMIT = 200;

/**
 * The cluster as the team sees it: the workers it can use with each device and the job on it,
 * the team's queue in the order the scheduler considers it with each job's reason for waiting,
 * and the team's usage against its quota.
 */
export default function ClusterPage() {
  const team = useTeam();
  const trpc = useTRPC();
  const base = `/teams/${team.id}`;
  const queue = useQueue(team.id);
  const busy = (queue.data?.total ?? 0) > 0;
  // Live: the team's job hints bring the queue and the workers' jobs again as soon as a job moves.
  useJobHints(team.id);
  const queryClient = useQueryClient();
  const isAdmin = atLeast(team.role, 'ADMIN');
  const cancel = useMutation(trpc.jobs.cancel.mutationOptions({ onSuccess: () => refetchAfterChange(queryClient, trpc.runs.list.pathKey()) }));
  // Admins cancel any job of the queue from here.
  const cancelColumn: Column<QueuedRun>[] = isAdmin
    ? [
        {
          header: 'Actions',
          className: 'row-actions',
          cell: (run) => (
            <ConfirmButton
              label={run.cancelRequested ? 'Cancel requested' : 'Cancel'}
              accessibleName={`Cancel ${run.id}`}
              question={`Cancel ${run.owner.name}’s job ${run.id}?`}
              confirmLabel="Yes, cancel"
              disabled={run.cancelRequested}
              pending={cancel.isPending}
              onConfirm={() => cancel.mutate({ teamId: team.id, jobId: run.id })}
            />
          ),
        },
      ]
    : [];
  const quota = useQuery({ ...trpc.quotas.get.queryOptions({ teamId: team.id }), refetchInterval: busy ? LIVE_REFETCH_MS : WORKERS_REFETCH_MS });
  const history = useQuery({ ...trpc.quotas.history.queryOptions({ teamId: team.id }), refetchInterval: HISTORY_REFETCH_MS });

  return (
    <>
      <PageTitle title="Cluster" />
      <p className="muted lead">The workers this team’s jobs run on, what each device is doing, and the team’s queue with why each job waits; admins also see the cluster providers that start workers when jobs wait.</p>

      <section className="panel" aria-labelledby="usage-title">
        <h2 id="usage-title">Team usage</h2>
        {quota.isPending ? (
          <Loading label="Loading the quota…" />
        ) : quota.isLoadingError ? (
          <ErrorNote error={quota.error} />
        ) : (
          <>
            <div className="usage-grid">
              <Meter label="Devices in use" used={quota.data.usage.devicesInUse} limit={quota.data.maxConcurrentDevices} />
              <Meter label="Jobs queued" used={quota.data.usage.queuedJobs} limit={quota.data.maxQueuedJobs} />
            </div>
            {history.isPending ? (
              <Loading label="Loading the last 24 hours…" />
            ) : history.isLoadingError ? (
              <ErrorNote error={history.error} />
            ) : (
              <UsageChart history={history.data} quota={quota.data.maxConcurrentDevices} />
            )}
            <p className="muted small">
              Highest priority members may ask for: {quota.data.maxPriority}.{' '}
              {atLeast(team.role, 'ADMIN') ? <Link href={`${base}/quotas`}>Change the quota</Link> : 'Admins set the quota.'}
            </p>
          </>
        )}
      </section>

      <section className="panel" aria-labelledby="workers-title">
        <h2 id="workers-title">Workers</h2>
        <Workers teamId={team.id} base={base} fast={busy} />
      </section>

      <section className="panel" aria-labelledby="queue-title">
        <h2 id="queue-title">Queue</h2>
        {queue.isPending ? (
          <Loading label="Loading the queue…" />
        ) : queue.isLoadingError ? (
          <ErrorNote error={queue.error} />
        ) : queue.data.total === 0 ? (
          <p className="muted">
            Nothing running or waiting. <Link href={`${base}/environments`}>Launch a run from an environment</Link>.
          </p>
        ) : (
          <DataTable
            label="Queue"
            rows={queue.data.runs}
            rowKey={(run) => run.id}
            columns={[...queueColumns(base, queue.data.runs), ...cancelColumn]}
            footer={queue.data.total > queue.data.runs.length ? <p className="muted small">The first {queue.data.runs.length} of {queue.data.total} are shown.</p> : null}
          />
        )}
      </section>

      {isAdmin ? (
        <section className="panel" aria-labelledby="providers-title">
          <h2 id="providers-title">Cluster providers</h2>
          <p className="muted">
            A provider starts workers for {team.name}’s pool on a cluster when jobs wait for capacity, within its limits, and
            stops them when idle. Its agent runs on the cluster’s login node and polls this server.
          </p>
          <TeamClusterProviders teamId={team.id} teamName={team.name} />
        </section>
      ) : null}

      {team.isInstallationAdmin ? (
        <section className="panel" aria-labelledby="shared-providers-title">
          <h2 id="shared-providers-title">Shared pool: cluster providers</h2>
          <p className="muted">Workers these providers start run jobs of every team. Installation admins manage them.</p>
          <SharedClusterProviders />
        </section>
      ) : null}
    </>
  );
}

function Workers({ teamId, base, fast }: { teamId: string; base: string; fast: boolean }) {
  const team = useTeam();
  const { workers, jobs } = useWorkers(teamId, fast);
  const starting = useStartingWorkers(teamId, atLeast(team.role, 'ADMIN'));
  if (workers.isPending) return <Loading label="Loading workers…" />;
  if (workers.isLoadingError) return <ErrorNote error={workers.error} />;
  // Workers that left (a Slurm worker idle-exits, a laptop sleeps) are kept for their history but
  // folded away: a cluster provider's launches would otherwise fill the table with them.
  const away = workers.data.filter(isAway);
  const present = workers.data.filter((w) => !isAway(w));
  const columns = [
    ...workerColumns(base, team.name, jobs.data ?? []),
    // Admins drain or revoke a worker from here (as on the Workers page).
    ...(atLeast(team.role, 'ADMIN') ? [{ header: 'Actions', className: 'row-actions', cell: (w: Worker) => <WorkerActions teamId={teamId} worker={w} /> }] : []),
  ];
  return (
    <>
      <ErrorNote error={jobs.error} />
      {present.length === 0 && starting.length > 0 ? (
        <EmptyState title={startingTitle(starting)}>
          {starting.map(startingWords).join('; ')}. Each appears here once its daemon registers; the launches are under
          Cluster providers below.
        </EmptyState>
      ) : present.length === 0 ? (
        <EmptyState title="No worker can run this team’s jobs">
          {atLeast(team.role, 'ADMIN') ? (
            <>
              Register one: create a token on the <Link href={`${base}/workers`}>Workers</Link> page and start a worker daemon with it, or let a cluster provider
              below start workers when jobs wait.
            </>
          ) : (
            'Ask an admin to register a worker; jobs wait in the queue until one is online.'
          )}
        </EmptyState>
      ) : (
        <DataTable label="Workers" rows={present} rowKey={(w) => w.id} columns={columns} />
      )}
      {away.length > 0 ? (
        <details className="away-workers">
          <summary>Offline workers ({away.length})</summary>
          <DataTable label="Offline workers" rows={away} rowKey={(w) => w.id} columns={columns} />
        </details>
      ) : null}
    </>
  );
}

function startingTitle(starting: { count: number }[]): string {
  const n = starting.reduce((sum, p) => sum + p.count, 0);
  return `${plural(n, 'worker')} starting`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Where a provider's starting workers are: in the cluster's queue, or started on a node. */
function startingWords(p: { provider: string; count: number; pending: number }): string {
  const where = [p.pending > 0 ? `${p.pending} waiting in the cluster’s queue` : null, p.count > p.pending ? `${p.count - p.pending} started on a node` : null];
  return `${p.provider}: ${where.filter(Boolean).join(', ')}`;
}

/** Gone quiet or marked offline: not taking work now. */
const isAway = (w: Worker) => w.state === 'OFFLINE' || (w.state === 'ONLINE' && !w.online);

type QueuedRun = NonNullable<ReturnType<typeof useQueue>['data']>['runs'][number];
type Worker = NonNullable<ReturnType<typeof useWorkers>['workers']['data']>[number];
type WorkerJob = NonNullable<ReturnType<typeof useWorkers>['jobs']['data']>[number];

function useQueue(teamId: string) {
  const trpc = useTRPC();
  return useQuery({
    ...trpc.runs.list.queryOptions({ teamId, states: ['RUNNING', 'ASSIGNED', 'QUEUED', 'PREEMPTED'], kinds: ['TRAIN', 'SFT', 'EVAL', 'INFERENCE'], order: 'queue', limit: QUEUE_LIMIT }),
    refetchInterval: (q) => ((q.state.data?.total ?? 0) > 0 ? LIVE_REFETCH_MS : WORKERS_REFETCH_MS),
  });
}

function useWorkers(teamId: string, fast: boolean) {
  const trpc = useTRPC();
  const interval = fast ? LIVE_REFETCH_MS : WORKERS_REFETCH_MS;
  const workers = useQuery({ ...trpc.workers.list.queryOptions({ teamId }), refetchInterval: interval });
  const jobs = useQuery({ ...trpc.workers.jobs.queryOptions({ teamId }), refetchInterval: interval });
  return { workers, jobs };
}

const queueColumns = (base: string, runs: QueuedRun[]): Column<QueuedRun>[] => [
  { header: '#', num: true, className: 'muted', cell: (run) => runs.indexOf(run) + 1 },
  {
    header: 'Job',
    rowHeader: true,
    className: 'nowrap',
    cell: (run) => (
      <>
        <KindBadge run={run} />{' '}
        <Link href={`${base}/runs/${run.id}`} className="id-link">
          {run.id}
        </Link>
        {run.environment ? <span className="cell-sub">{run.environment.name} v{run.environment.version}</span> : null}
      </>
    ),
  },
  {
    header: 'State and reason',
    cell: (run) => (
      <>
        <RunStateBadge state={run.state} />
        {run.state === 'QUEUED' || run.state === 'PREEMPTED' ? <Reason text={stateLine(run)} /> : <span className="cell-sub">{stateLine(run)}</span>}
      </>
    ),
  },
  { header: 'Priority', num: true, cell: (run) => run.priority },
  { header: 'Devices', num: true, cell: (run) => run.deviceCount },
  { header: 'Owner', className: 'nowrap', cell: (run) => run.owner.name },
  { header: 'Queued', className: 'nowrap muted small', title: (run) => formatDateTime(run.queuedAt), cell: (run) => formatRelative(run.queuedAt) },
];

const workerColumns = (base: string, teamName: string, jobs: WorkerJob[]): Column<Worker>[] => [
  {
    header: 'Worker',
    cell: (w) => (
      <>
        {w.name}
        <span className="cell-sub">
          {w.hostname} · {w.backend} v{w.version}
        </span>
      </>
    ),
  },
  { header: 'Pool', cell: (w) => (w.pool === 'team' ? teamName : 'Shared') },
  { header: 'State', cell: (w) => <StatusBadge status={w.online || w.state !== 'ONLINE' ? w.state : 'OFFLINE'} /> },
  { header: 'Devices and their jobs', cell: (w) => <Devices worker={w} jobs={jobs.filter((j) => j.workerId === w.id)} base={base} /> },
  { header: 'Last seen', className: 'nowrap', title: (w) => formatDateTime(w.lastHeartbeatAt), cell: (w) => formatRelative(w.lastHeartbeatAt) },
];

/** A worker's devices, each with the job holding it (or idle). */
function Devices({ worker, jobs, base }: { worker: Worker; jobs: WorkerJob[]; base: string }) {
  if (worker.devices.length === 0) return <span className="muted">no devices</span>;
  return (
    <ul className="devices">
      {worker.devices.map((d) => {
        const held = jobs.filter((j) => j.deviceIndexes.includes(d.index));
        return (
          <li key={d.index} className={`device ${held.length ? 'device-busy' : ''}`}>
            <span className="device-name">
              {d.kind} {d.index}
              {Number(d.memoryBytes) > 0 ? <span className="muted"> · {formatBytes(d.memoryBytes)}</span> : null}
            </span>
            <span className="muted small">{d.name}</span>
            {held.length === 0 ? (
              <span className="device-job muted">{isAway(worker) ? 'not taking work' : 'idle'}</span>
            ) : (
              held.map((j, i) =>
                j.job ? (
                  <Link key={j.job.id} href={`${base}/runs/${j.job.id}`} className="device-job">
                    {j.job.kind.toLowerCase()} by {j.job.ownerName}
                  </Link>
                ) : (
                  <span key={`other-${i}`} className="device-job">
                    another team’s job
                  </span>
                ),
              )
            )}
          </li>
        );
      })}
    </ul>
  );
}
