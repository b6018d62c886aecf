'use client';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading } from '../components';
import { Pager } from '../pager';
import { intParam, useUrlState } from '../url-state';
import { LiveBoard } from './live-board';
import { MatchesTable } from './matches-table';

const PAGE_SIZE = 50;

/** The games a run played (evaluations during training, eval jobs), newest first, paged in the URL. */
export function RunMatches({ teamId, jobId }: { teamId: string; jobId: string }) {
  const trpc = useTRPC();
  const { params, set } = useUrlState();
  const page = intParam(params.get('page'), 1);
  const matches = useQuery({ ...trpc.runs.teamMatches.queryOptions({ teamId, jobId, offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE }), placeholderData: keepPreviousData });
  if (matches.isPending) return <Loading label="Loading games…" />;
  if (matches.isLoadingError) return <ErrorNote error={matches.error} />;
  if (matches.data.total === 0) return <p className="muted">This run played no games.</p>;
  return (
    <>
      <LiveBoard />
      <div className="panel">
        <MatchesTable matches={matches.data.matches} base={`/teams/${teamId}`} showRun={false} label="Games of this run" />
        <Pager page={page} pageSize={PAGE_SIZE} total={matches.data.total} onPage={(p) => set({ page: p === 1 ? null : p })} label="Pages of games" />
      </div>
    </>
  );
}
