'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Copy, FlaskConical, MessageSquare } from 'lucide-react';
import Link from 'next/link';
import { useParams } from 'next/navigation';
import { ConfirmButton, ErrorNote, Loading } from '../../../../_ui/components';
import { NotFound } from '../../../../_ui/empty-state';
import { errorMessage, isNotFound } from '../../../../_ui/errors';
import { formatDateTime, formatDuration, formatRelative } from '../../../../_ui/format';
import { refetchAfterChange } from '../../../../_ui/refresh';
import { atLeast } from '../../../../_ui/roles';
import { RunCharts } from '../../../../_ui/charts/run-charts';
import { RolloutViewer } from '../../../../_ui/rollouts/rollout-viewer';
import { etaSeconds } from '../../../../_ui/runs/eta';
import { ConnectionBanner, RunLiveProvider, useRunLive } from '../../../../_ui/runs/run-live';
import { RunCheckpoints } from '../../../../_ui/runs/run-checkpoints';
import { RunConfig } from '../../../../_ui/runs/run-config';
import { RunEvents } from '../../../../_ui/runs/run-events';
import { RunLogs } from '../../../../_ui/runs/run-logs';
import { RunMatches } from '../../../../_ui/runs/run-matches';
import { formatMetric, KindBadge, Progress, RunStateBadge, RunSubject } from '../../../../_ui/runs/run-parts';
import { isActive, LIVE_REFETCH_MS, runKindLabel, runSeconds, stateLine } from '../../../../_ui/runs/run-state';
import { Tabs, tabPanelProps } from '../../../../_ui/tabs';
import { useTeam } from '../../../../_ui/team-context';
import { useUrlState } from '../../../../_ui/url-state';
import { useTRPC } from '../../../../trpc';

const TABS = ['charts', 'rollouts', 'events', 'config', 'logs', 'checkpoints', 'matches'] as const;
type Tab = (typeof TABS)[number];

/**
 * A run, live: where it stands and why (the scheduler's reason, the failure), progress and ETA,
 * its actions, and tabs for its charts, rollouts, events, resolved config, log, checkpoints and
 * games. One socket.io stream feeds the page (run-live.tsx); the URL holds the tab and each
 * tab's view (`?tab=rollouts&rstep=12`, `?zoom=100-200`).
 */
export default function RunPage() {
  const { jobId } = useParams<{ jobId: string }>();
  const team = useTeam();
  return (
    <RunLiveProvider teamId={team.id} jobId={jobId}>
      <RunView jobId={jobId} />
    </RunLiveProvider>
  );
}

function RunView({ jobId }: { jobId: string }) {
  const team = useTeam();
  const liveStream = useRunLive();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { params, set } = useUrlState();
  const base = `/teams/${team.id}`;
  const live = (state: string | undefined) => (state && isActive(state) ? LIVE_REFETCH_MS : false);
  const run = useQuery({ ...trpc.runs.summary.queryOptions({ teamId: team.id, jobId }), retry: (n, e) => !isNotFound(e) && n < 2, refetchInterval: (q) => live(q.state.data?.state) });
  const job = useQuery({ ...trpc.jobs.get.queryOptions({ teamId: team.id, jobId }), retry: (n, e) => !isNotFound(e) && n < 2, refetchInterval: (q) => live(q.state.data?.state) });
  // Whether the run played games (its Matches tab): asked again while the run may still play some.
  const matches = useQuery({ ...trpc.runs.teamMatches.queryOptions({ teamId: team.id, jobId, limit: 1 }), refetchInterval: () => live(run.data?.state) });
  // The newest sampler checkpoint: what the playground and an evaluation load.
  const checkpoints = useQuery({ ...trpc.runs.checkpoints.queryOptions({ teamId: team.id, jobId, limit: 50 }), refetchInterval: () => live(run.data?.state) });
  const newest = checkpoints.data?.find((c) => c.kind === 'SAMPLER');
  const evaluate = useMutation(trpc.jobs.submit.mutationOptions());
  const cancel = useMutation(
    trpc.jobs.cancel.mutationOptions({
      onSuccess: () => Promise.all([refetchAfterChange(queryClient, trpc.runs.summary.queryKey({ teamId: team.id, jobId })), refetchAfterChange(queryClient, trpc.jobs.get.queryKey({ teamId: team.id, jobId }))]),
    }),
  );

  // Only a first load that failed replaces the page: a live refetch that fails (the network dropped
  // for a moment) keeps what is shown, and the connection banner says the page is offline.
  const error = (run.isLoadingError ? run.error : null) ?? (job.isLoadingError ? job.error : null);
  if (error && isNotFound(error)) {
    return <NotFound kind="run" id={jobId} teamName={team.name} back={{ href: `${base}/runs`, label: 'See the team’s runs' }} />;
  }
  if (error) return <ErrorNote error={error} />;
  if (!run.data || !job.data) return <Loading label="Loading the run…" />;

  const r = run.data;
  const active = isActive(r.state);
  const mayCancel = active && atLeast(team.role, 'MEMBER') && (r.owner.id === team.userId || atLeast(team.role, 'ADMIN'));
  const seconds = runSeconds(r);
  const hasMatches = (matches.data?.total ?? 0) > 0;
  const tabs = TABS.filter((t) => t !== 'matches' || hasMatches);
  const tab: Tab = tabs.find((t) => t === params.get('tab')) ?? 'charts';
  const eta = active && r.totalSteps && r.step !== null ? etaSeconds(liveStream?.stepTimes ?? [], r.step, r.totalSteps) : null;
  const environmentVersionId = (job.data.config as { environmentVersionId?: unknown } | null)?.environmentVersionId;
  const mayEvaluate = newest && typeof environmentVersionId === 'string' && r.kind === 'TRAIN' && atLeast(team.role, 'MEMBER');
  const lineClass = r.state === 'FAILED' ? 'bad' : r.state === 'QUEUED' || r.state === 'PREEMPTED' ? 'warn' : '';

  return (
    <>
      <p className="breadcrumb">
        <Link href={`${base}/runs`}>Runs</Link> / {runKindLabel(r)}
      </p>
      <header className="run-head">
        <div>
          <h1>
            <KindBadge run={r} />
            <span className="mono">{r.id}</span>
            <RunStateBadge state={r.state} />
          </h1>
          <p className={`run-head-line ${lineClass}`} role="status">
            {stateLine(r)}
            {r.state === 'RUNNING' && r.startedAt ? ` since ${formatDateTime(r.startedAt)}` : ''}
            {r.state === 'SUCCEEDED' && seconds !== null ? ` in ${formatDuration(seconds)}` : ''}
          </p>
          {run.isRefetchError ? (
            <p className="warn small" role="status">
              The run’s state could not be refreshed ({errorMessage(run.error)}): this is what was read at {formatDateTime(new Date(run.dataUpdatedAt))}. Trying again.
            </p>
          ) : null}
        </div>
        <div className="actions">
          {newest ? (
            <Link href={`${base}/playground/${newest.id}`} className="btn">
              <MessageSquare size={15} aria-hidden="true" /> Open step {newest.step} in playground
            </Link>
          ) : null}
          {mayEvaluate ? (
            <button
              type="button"
              className="btn"
              disabled={evaluate.isPending}
              onClick={() => evaluate.mutate({ teamId: team.id, kind: 'EVAL', config: { checkpointId: newest.id, environmentVersionId } })}
            >
              <FlaskConical size={15} aria-hidden="true" /> Evaluate step {newest.step}
            </button>
          ) : null}
          {r.kind !== 'INFERENCE' ? (
            <Link href={`${base}/launch?from=${r.id}`} className="btn">
              <Copy size={15} aria-hidden="true" /> Duplicate
            </Link>
          ) : null}
          {mayCancel ? (
            <ConfirmButton
              label={r.cancelRequested ? 'Cancel requested' : 'Cancel run'}
              question={r.state === 'QUEUED' ? 'Cancel this run? It leaves the queue.' : 'Cancel this run? Its worker stops it.'}
              confirmLabel="Yes, cancel"
              pending={cancel.isPending}
              disabled={r.cancelRequested}
              onConfirm={() => cancel.mutate({ teamId: team.id, jobId: r.id })}
            />
          ) : null}
        </div>
      </header>
      <ErrorNote error={cancel.error ?? evaluate.error} />
      {evaluate.data ? (
        <p className="notice notice-success" role="status">
          Evaluation submitted: <Link href={`${base}/runs/${evaluate.data.id}`}>see run {evaluate.data.id}</Link>.
        </p>
      ) : null}
      <ConnectionBanner />

      <dl className="facts-row">
        <div className="fact">
          <dt>{r.environment ? 'Environment' : 'Dataset'}</dt>
          <dd>
            <RunSubject run={r} base={base} />
          </dd>
        </div>
        {r.environment && r.dataset ? (
          <div className="fact">
            <dt>Dataset</dt>
            <dd>
              <RunSubject run={{ environment: null, dataset: r.dataset }} base={base} />
            </dd>
          </div>
        ) : null}
        <div className="fact">
          <dt>Progress</dt>
          <dd>
            <Progress run={r} />
            {eta !== null ? <span className="muted small"> · about {formatDuration(eta)} left</span> : null}
          </dd>
        </div>
        <div className="fact">
          <dt>{r.kind === 'EVAL' ? 'Score' : r.kind === 'SFT' ? 'Last loss' : 'Last reward'}</dt>
          <dd className="tabular">{formatMetric(r.kind === 'SFT' ? r.loss : r.reward)}</dd>
        </div>
        <div className="fact">
          <dt>Owner</dt>
          <dd>{r.owner.name}</dd>
        </div>
        <div className="fact">
          <dt>Attempts</dt>
          <dd>
            {r.attempts} of {r.maxAttempts}
          </dd>
        </div>
        <div className="fact">
          <dt>{r.startedAt ? 'Started' : 'Queued'}</dt>
          <dd title={formatDateTime(r.startedAt ?? r.queuedAt)}>{formatRelative(r.startedAt ?? r.queuedAt)}</dd>
        </div>
        <div className="fact">
          <dt>Duration</dt>
          <dd>{seconds === null ? <span className="muted">not started</span> : formatDuration(seconds)}</dd>
        </div>
      </dl>

      <Tabs
        label="Run"
        idPrefix="run"
        current={tab}
        onChange={(t) => set({ tab: t === 'charts' ? null : t }, { replace: true })}
        tabs={tabs.map((t) => ({
          id: t,
          label: t.charAt(0).toUpperCase() + t.slice(1),
          badge: t === 'matches' ? matches.data?.total : undefined,
        }))}
      />
      <div {...tabPanelProps('run', tab)}>
        {tab === 'charts' ? (
          <RunCharts teamId={team.id} jobId={r.id} active={active} startedAt={r.startedAt} totalSteps={r.totalSteps} onPickStep={(step) => set({ tab: 'rollouts', rstep: step, sample: null, task: null })} />
        ) : tab === 'rollouts' ? (
          <RolloutViewer teamId={team.id} jobId={r.id} />
        ) : tab === 'events' ? (
          <section className="panel" aria-labelledby="events-title">
            <h2 id="events-title">Events</h2>
            <RunEvents events={job.data.events} />
          </section>
        ) : tab === 'config' ? (
          <RunConfig job={job.data} />
        ) : tab === 'logs' ? (
          <RunLogs teamId={team.id} jobId={r.id} active={active} />
        ) : tab === 'checkpoints' ? (
          <RunCheckpoints teamId={team.id} jobId={r.id} active={active} fromModel={typeof (job.data.config as { baseModelId?: unknown } | null)?.baseModelId === 'string'} />
        ) : (
          <RunMatches teamId={team.id} jobId={r.id} />
        )}
      </div>
    </>
  );
}

