'use client';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { GitCompare, Rocket } from 'lucide-react';
import Link from 'next/link';
import { useState } from 'react';
import { ErrorNote, Field, Loading, PageTitle } from '../../../_ui/components';
import { EmptyState } from '../../../_ui/empty-state';
import { formatDuration, formatRelative } from '../../../_ui/format';
import { Pager } from '../../../_ui/pager';
import { useJobHints } from '../../../_ui/runs/job-hints';
import { Sparkline } from '../../../_ui/runs/sparkline';
import { formatMetric, KindBadge, Progress, RunStateBadge, RunSubject } from '../../../_ui/runs/run-parts';
import { isActive, JOB_STATES, LIVE_REFETCH_MS, runSeconds, stateLine, type JobState } from '../../../_ui/runs/run-state';
import { useTeam } from '../../../_ui/team-context';
import { intParam, useUrlState } from '../../../_ui/url-state';
import { useTRPC } from '../../../trpc';

const PAGE_SIZE = 50;

/** The state filter: all, the active states together, or one state. */
const FILTERS: Array<{ id: string; label: string; states?: JobState[] }> = [
  { id: '', label: 'All' },
  { id: 'active', label: 'Active', states: ['QUEUED', 'ASSIGNED', 'RUNNING', 'PREEMPTED'] },
  ...JOB_STATES.map((s) => ({ id: s.toLowerCase(), label: s.charAt(0) + s.slice(1).toLowerCase(), states: [s] })),
];

export default function RunsPage() {
  const team = useTeam();
  const trpc = useTRPC();
  const { params, set } = useUrlState();
  const base = `/teams/${team.id}`;
  const filter = FILTERS.find((f) => f.id === (params.get('state') ?? '')) ?? FILTERS[0];
  const page = intParam(params.get('page'), 1);
  // The other filters, in the URL too: environment, owner, tag.
  const environmentId = params.get('environment') ?? '';
  const ownerId = params.get('owner') ?? '';
  const tag = params.get('tag') ?? '';
  const narrowed = { ...(environmentId ? { environmentId } : {}), ...(ownerId ? { ownerId } : {}), ...(tag ? { tag } : {}) };
  const filtered = Boolean(filter.states) || Object.keys(narrowed).length > 0;
  const environments = useQuery(trpc.environments.list.queryOptions({ teamId: team.id }));
  const members = useQuery(trpc.members.list.queryOptions({ teamId: team.id }));
  // The tag field holds what is typed; the URL follows it.
  const [tagText, setTagText] = useState(tag);
  const runs = useQuery({
    ...trpc.runs.list.queryOptions({ teamId: team.id, states: filter.states, ...narrowed, offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE }),
    placeholderData: keepPreviousData,
    // Rows change as jobs do: ask again while any shown job can still change.
    refetchInterval: (query) => (query.state.data?.runs.some((r) => isActive(r.state)) ? LIVE_REFETCH_MS : false),
  });
  // A state link keeps the other filters (and starts at the first page).
  const filterHref = (id: string) => {
    const next = new URLSearchParams(params.toString());
    next.delete('page');
    if (id) next.set('state', id);
    else next.delete('state');
    const query = next.toString();
    return `${base}/runs${query ? `?${query}` : ''}`;
  };
  const narrow = (key: string, value: string, replace = false) => set({ [key]: value.trim() || null, page: null }, { replace });
  const clearFilters = () => {
    setTagText('');
    set({ state: null, environment: null, owner: null, tag: null, page: null });
  };
  // Rows change as soon as a job does (the team's job hints), besides the poll.
  useJobHints(team.id);
  // Runs chosen to compare, in the URL (`?select=a,b`).
  const selected = (params.get('select') ?? '').split(',').filter(Boolean);
  const toggle = (id: string) => set({ select: (selected.includes(id) ? selected.filter((s) => s !== id) : [...selected, id]).join(',') }, { replace: true });

  return (
    <>
      <PageTitle title="Runs">
        <Link href={`${base}/launch`} className="btn btn-primary">
          <Rocket size={16} aria-hidden="true" /> Launch a run…
        </Link>
      </PageTitle>
      <p className="muted lead">Every training, SFT and evaluation job of the team. Open one for its state, config, logs and checkpoints.</p>
      <div className="toolbar toolbar-wrap">
        <nav className="segmented" aria-label="Filter runs by state">
          {FILTERS.map((f) => (
            <Link key={f.id} href={filterHref(f.id)} aria-current={f.id === filter.id ? 'page' : undefined} scroll={false}>
              {f.label}
            </Link>
          ))}
        </nav>
        <form className="inline-form runs-filters" role="search" aria-label="Narrow the runs" onSubmit={(e) => e.preventDefault()}>
          <Field label="Environment">
            {(a) => (
              <select {...a} value={environmentId} onChange={(e) => narrow('environment', e.target.value)}>
                <option value="">any</option>
                {(environments.data ?? []).map((env) => (
                  <option key={env.id} value={env.id}>
                    {env.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Owner">
            {(a) => (
              <select {...a} value={ownerId} onChange={(e) => narrow('owner', e.target.value)}>
                <option value="">anyone</option>
                {(members.data ?? []).map((m) => (
                  <option key={m.user.id} value={m.user.id}>
                    {m.user.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Tag">
            {(a) => (
              <input
                {...a}
                value={tagText}
                placeholder="baseline"
                onChange={(e) => {
                  setTagText(e.target.value);
                  narrow('tag', e.target.value, true);
                }}
              />
            )}
          </Field>
          {filtered ? (
            <button type="button" className="btn" onClick={clearFilters}>
              Clear filters
            </button>
          ) : null}
        </form>
        {selected.length > 0 ? (
          <Link href={`${base}/runs/compare?ids=${selected.join(',')}`} className={`btn ${selected.length < 2 ? 'btn-disabled' : 'btn-primary'}`} aria-disabled={selected.length < 2} onClick={(e) => selected.length < 2 && e.preventDefault()}>
            <GitCompare size={15} aria-hidden="true" /> Compare {selected.length} {selected.length === 1 ? 'run (choose another)' : 'runs'}
          </Link>
        ) : null}
        {runs.data ? (
          <span className="muted small" role="status">
            {runs.data.total} {runs.data.total === 1 ? 'run' : 'runs'}
            {filter.states ? ` ${filter.label.toLowerCase()}` : ''}
            {runs.isFetching && !runs.isPending ? ' · updating…' : ''}
          </span>
        ) : null}
      </div>
      {runs.isPending ? (
        <Loading label="Loading runs…" />
      ) : runs.isLoadingError ? (
        <ErrorNote error={runs.error} />
      ) : runs.data.total === 0 && !filtered ? (
        <EmptyState
          title="No runs yet — launch one from an environment"
          action={
            <Link href={`${base}/environments`} className="btn btn-primary">
              Choose an environment
            </Link>
          }
        >
          Open an environment and choose Launch…, or start one from a terminal with <code>npx whetstone run &lt;folder&gt;</code>.
        </EmptyState>
      ) : runs.data.runs.length === 0 ? (
        <EmptyState
          title={page > 1 ? 'No runs on this page' : 'No run fits these filters'}
          action={
            <button type="button" className="btn" onClick={clearFilters}>
              Clear filters
            </button>
          }
        >
          Widen them, or clear them to see every run of the team.
        </EmptyState>
      ) : (
        <div className="panel table-wrap">
          <table className="table" aria-label="Runs">
            <thead>
              <tr>
                <th scope="col">
                  <span className="sr-only">Compare</span>
                </th>
                <th scope="col">Run</th>
                <th scope="col">State</th>
                <th scope="col">Environment or data</th>
                <th scope="col">Owner</th>
                <th scope="col">Started</th>
                <th scope="col" className="num">
                  Duration
                </th>
                <th scope="col">Progress</th>
                <th scope="col" className="num">
                  Last reward
                </th>
                <th scope="col">Curve</th>
              </tr>
            </thead>
            <tbody>
              {runs.data.runs.map((run) => {
                const seconds = runSeconds(run);
                const waiting = run.state === 'QUEUED' || run.state === 'FAILED';
                return (
                  <tr key={run.id}>
                    <td>
                      <input type="checkbox" aria-label={`Compare ${run.id}`} checked={selected.includes(run.id)} onChange={() => toggle(run.id)} />
                    </td>
                    <th scope="row" className="nowrap">
                      <KindBadge run={run} />{' '}
                      <Link href={`${base}/runs/${run.id}`} className="id-link" aria-label={`Run ${run.id}`}>
                        {run.id}
                      </Link>
                      {run.tags.length > 0 ? (
                        <span className="run-tags">
                          {run.tags.map((t) => (
                            <Link key={t} href={`${base}/runs?tag=${encodeURIComponent(t)}`} className="run-tag" title={`Runs tagged ${t}`} onClick={() => setTagText(t)}>
                              {t}
                            </Link>
                          ))}
                        </span>
                      ) : null}
                    </th>
                    <td>
                      <RunStateBadge state={run.state} title={stateLine(run)} />
                      {waiting ? <span className={`reason ${run.state === 'FAILED' ? 'reason-bad' : ''}`}>{stateLine(run)}</span> : null}
                      {run.state === 'RUNNING' && run.worker ? <span className="cell-sub">on {run.worker.name}</span> : null}
                    </td>
                    <td>
                      <RunSubject run={run} base={base} />
                    </td>
                    <td className="nowrap">{run.owner.name}</td>
                    <td className="nowrap" title={run.startedAt ? new Date(run.startedAt).toLocaleString() : undefined}>
                      {run.startedAt ? formatRelative(run.startedAt) : <span className="muted">queued {formatRelative(run.queuedAt)}</span>}
                    </td>
                    <td className="num">{seconds === null ? '—' : formatDuration(seconds)}</td>
                    <td>
                      <Progress run={run} />
                    </td>
                    <td className="num">{run.kind === 'SFT' && run.reward === null && run.loss !== null ? <span title="SFT reports its loss">loss {formatMetric(run.loss)}</span> : formatMetric(run.reward)}</td>
                    <td>{run.kind === 'TRAIN' || run.kind === 'SFT' ? <Sparkline teamId={team.id} jobId={run.id} metric={run.kind === 'SFT' ? 'loss/total' : 'reward/mean'} active={isActive(run.state)} /> : null}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <Pager page={page} pageSize={PAGE_SIZE} total={runs.data.total} onPage={(p) => set({ page: p === 1 ? null : p })} label="Pages of runs" />
        </div>
      )}
    </>
  );
}
