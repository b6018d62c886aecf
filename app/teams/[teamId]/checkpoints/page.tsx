'use client';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { BasesSection, NameCheckpoint } from '../../../_ui/bases';
import { ErrorNote, Loading, PageTitle } from '../../../_ui/components';
import { DataTable, type Column } from '../../../_ui/data-table';
import { EmptyState } from '../../../_ui/empty-state';
import { formatBytes, formatDateTime, formatRelative } from '../../../_ui/format';
import { atLeast } from '../../../_ui/roles';
import { RunStateBadge } from '../../../_ui/runs/run-parts';
import { useTeam } from '../../../_ui/team-context';
import { intParam, useUrlState } from '../../../_ui/url-state';
import { useTRPC } from '../../../trpc';

const PAGE_SIZE = 50;
const KINDS = [
  { id: '', label: 'All' },
  { id: 'sampler', label: 'Sampler', kind: 'SAMPLER' as const },
  { id: 'training', label: 'Training', kind: 'TRAINING' as const },
];

type Checkpoint = NonNullable<ReturnType<typeof useCheckpoints>['data']>['checkpoints'][number];

const columns = (base: string, teamId: string, mayName: boolean): Column<Checkpoint>[] => [
  {
    header: 'Checkpoint',
    cell: (c) => (
      <>
        <span className="id-link">{c.id}</span>
        {c.name ? <span className="cell-sub mono">base {c.name}</span> : null}
      </>
    ),
  },
  {
    header: 'Kind',
    className: 'nowrap',
    cell: (c) => (
      <>
        {c.kind.toLowerCase()}
        {c.isAdapter ? <span className="badge badge-soft">LoRA</span> : null}
      </>
    ),
  },
  {
    header: 'Run',
    cell: (c) =>
      c.job ? (
        <>
          <Link href={`${base}/runs/${c.job.id}?tab=checkpoints`} className="id-link">
            {c.job.id}
          </Link>{' '}
          <RunStateBadge state={c.job.state} />
          <span className="cell-sub">
            {c.job.kind.toLowerCase()}
            {c.job.environmentName ? ` · ${c.job.environmentName} v${c.job.environmentVersion}` : ''}
          </span>
        </>
      ) : (
        <span className="muted">its run was deleted</span>
      ),
  },
  { header: 'Step', num: true, cell: (c) => c.step },
  { header: 'Size', num: true, cell: (c) => formatBytes(c.bytes) },
  { header: 'Created', className: 'nowrap muted small', title: (c) => formatDateTime(c.createdAt), cell: (c) => formatRelative(c.createdAt) },
  {
    header: 'Actions',
    className: 'row-actions',
    cell: (c) => (
      <span className="inline-actions">
        <Link href={`${base}/matches?checkpoint=${c.id}`} className="btn btn-small" aria-label={`Games checkpoint ${c.id} (step ${c.step}) played`}>
          Games
        </Link>
        <Link href={`${base}/playground/${c.id}`} className="btn btn-small" aria-label={`Open checkpoint ${c.id} (step ${c.step}) in the playground`}>
          Playground
        </Link>
        {mayName ? <NameCheckpoint teamId={teamId} checkpoint={c} /> : null}
      </span>
    ),
  },
];

function useCheckpoints(teamId: string, kind: 'SAMPLER' | 'TRAINING' | undefined, page: number) {
  const trpc = useTRPC();
  return useQuery({
    ...trpc.runs.teamCheckpoints.queryOptions({ teamId, kind, offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE }),
    placeholderData: keepPreviousData,
  });
}

/**
 * Every checkpoint of the team with the run that wrote it: sampler checkpoints (weights, for the
 * playground and evaluations) and training ones (weights and optimiser state, to resume).
 */
export default function CheckpointsPage() {
  const team = useTeam();
  const { params, set } = useUrlState();
  const base = `/teams/${team.id}`;
  const filter = KINDS.find((k) => k.id === (params.get('kind') ?? '')) ?? KINDS[0];
  const page = intParam(params.get('page'), 1);
  const checkpoints = useCheckpoints(team.id, filter.kind, page);
  // Naming a base is a write on the team's runs: members and up, as the server checks.
  const mayName = atLeast(team.role, 'MEMBER');

  return (
    <>
      <PageTitle title="Checkpoints" />
      <p className="muted lead">Weights the team’s runs saved. Sampler checkpoints are what evaluations and the playground load; training checkpoints let a run resume exactly. A checkpoint named as a base is offered first in the launcher’s “Start from” and by name to <code>whetstone run --from</code>.</p>
      <BasesSection teamId={team.id} mayName={mayName} />
      <h2>All checkpoints</h2>
      <div className="toolbar toolbar-wrap">
        <nav className="segmented" aria-label="Filter checkpoints by kind">
          {KINDS.map((k) => (
            <Link key={k.id} href={`${base}/checkpoints${k.id ? `?kind=${k.id}` : ''}`} aria-current={k.id === filter.id ? 'page' : undefined} scroll={false}>
              {k.label}
            </Link>
          ))}
        </nav>
        {checkpoints.data ? (
          <span className="muted small" role="status">
            {checkpoints.data.total} {checkpoints.data.total === 1 ? 'checkpoint' : 'checkpoints'}
          </span>
        ) : null}
      </div>
      {checkpoints.isPending ? (
        <Loading label="Loading checkpoints…" />
      ) : checkpoints.isLoadingError ? (
        <ErrorNote error={checkpoints.error} />
      ) : checkpoints.data.total === 0 && !filter.kind ? (
        <EmptyState
          title="No checkpoints yet"
          action={
            <Link href={`${base}/runs`} className="btn">
              See the runs
            </Link>
          }
        >
          Runs save a checkpoint every “checkpointEvery” steps and at their end. No runs yet? Launch one from an environment.
        </EmptyState>
      ) : checkpoints.data.checkpoints.length === 0 ? (
        <p className="muted">
          No {filter.label.toLowerCase()} checkpoints{page > 1 ? ' on this page' : ''}. <Link href={`${base}/checkpoints`}>Show all</Link>
        </p>
      ) : (
        <DataTable
          panel
          label="Checkpoints"
          rows={checkpoints.data.checkpoints}
          rowKey={(c) => c.id}
          columns={columns(base, team.id, mayName)}
          pager={{ page, pageSize: PAGE_SIZE, total: checkpoints.data.total, onPage: (p) => set({ page: p === 1 ? null : p }), label: 'Pages of checkpoints' }}
        />
      )}
    </>
  );
}
