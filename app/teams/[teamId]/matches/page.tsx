'use client';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { ErrorNote, Field, Loading, PageTitle } from '../../../_ui/components';
import { EmptyState } from '../../../_ui/empty-state';
import { Pager } from '../../../_ui/pager';
import { MatchesTable } from '../../../_ui/runs/matches-table';
import { useTeam } from '../../../_ui/team-context';
import { intParam, useUrlState } from '../../../_ui/url-state';
import { useTRPC } from '../../../trpc';

const PAGE_SIZE = 50;
const RESULTS = [
  { id: 'win', label: 'someone won' },
  { id: 'draw', label: 'a draw' },
  { id: 'error', label: 'an error' },
] as const;

/** Every game the team's runs played (multi-agent training and evaluations), newest first. */
export default function MatchesPage() {
  const team = useTeam();
  const trpc = useTRPC();
  const { params, set } = useUrlState();
  const base = `/teams/${team.id}`;
  const page = intParam(params.get('page'), 1);
  const result = RESULTS.find((r) => r.id === params.get('result'))?.id;
  const player = params.get('player') ?? '';
  const checkpointId = params.get('checkpoint') ?? '';
  const minMoves = params.has('min') ? intParam(params.get('min'), 0, 0) : undefined;
  const maxMoves = params.has('max') ? intParam(params.get('max'), 0, 0) : undefined;
  const filters = { ...(result ? { result } : {}), ...(player ? { player } : {}), ...(checkpointId ? { checkpointId } : {}), ...(minMoves !== undefined ? { minMoves } : {}), ...(maxMoves !== undefined ? { maxMoves } : {}) };
  const filtered = Object.keys(filters).length > 0;
  const matches = useQuery({ ...trpc.runs.teamMatches.queryOptions({ teamId: team.id, ...filters, offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE }), placeholderData: keepPreviousData });
  // Typing replaces the URL entry; the page goes back to the first.
  // The text fields hold what is typed (the URL follows it, and a URL update that lags never
  // overwrites a keystroke); they start from the URL, so a link opens with its filters shown.
  const [typed, setTyped] = useState(() => ({ player, checkpoint: checkpointId, min: params.get('min') ?? '', max: params.get('max') ?? '' }));
  const setFilter = (key: keyof typeof typed, value: string) => {
    setTyped((t) => ({ ...t, [key]: value }));
    set({ [key]: value.trim() === '' ? null : value.trim(), page: null }, { replace: true });
  };
  const clear = () => {
    setTyped({ player: '', checkpoint: '', min: '', max: '' });
    set({ result: null, player: null, checkpoint: null, min: null, max: null, page: null });
  };
  const clearButton = (
    <button type="button" className="btn" onClick={clear}>
      Clear filters
    </button>
  );

  return (
    <>
      <PageTitle title="Matches" />
      <p className="muted lead">Games of multi-agent environments: played during training, in evaluations and tournaments, and in the play console.</p>
      <form className="toolbar matches-filters" role="search" aria-label="Filter matches" onSubmit={(e) => e.preventDefault()}>
        <Field label="Result">
          {(a) => (
            <select {...a} value={result ?? ''} onChange={(e) => set({ result: e.target.value || null, page: null })}>
              <option value="">any</option>
              {RESULTS.map((r) => (
                <option key={r.id} value={r.id}>
                  {r.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Played by">
          {(a) => <input {...a} value={typed.player} placeholder="e.g. scripted or user" onChange={(e) => setFilter('player', e.target.value)} />}
        </Field>
        <Field label="Checkpoint">
          {(a) => <input {...a} className="mono" value={typed.checkpoint} onChange={(e) => setFilter('checkpoint', e.target.value)} />}
        </Field>
        <Field label="Moves from">{(a) => <input {...a} inputMode="numeric" value={typed.min} onChange={(e) => setFilter('min', e.target.value)} />}</Field>
        <Field label="to">{(a) => <input {...a} inputMode="numeric" value={typed.max} onChange={(e) => setFilter('max', e.target.value)} />}</Field>
        {filtered ? <div className="toolbar-end">{clearButton}</div> : null}
      </form>
      {matches.isPending ? (
        <Loading label="Loading matches…" />
      ) : matches.isLoadingError ? (
        <ErrorNote error={matches.error} />
      ) : matches.data.total === 0 && filtered ? (
        <EmptyState title="No match fits these filters" action={clearButton}>
          Widen them, or clear them to see every game of the team.
        </EmptyState>
      ) : matches.data.total === 0 ? (
        <EmptyState
          title="No matches yet"
          action={
            <Link href={`${base}/environments`} className="btn btn-primary">
              Choose an environment
            </Link>
          }
        >
          Games appear here when a run trains or evaluates a multi-agent environment (gomoku): launch one from its environment.
        </EmptyState>
      ) : (
        <div className="panel">
          <MatchesTable matches={matches.data.matches} base={base} showRun label="Matches" />
          <Pager page={page} pageSize={PAGE_SIZE} total={matches.data.total} onPage={(p) => set({ page: p === 1 ? null : p })} label="Pages of matches" />
        </div>
      )}
    </>
  );
}
