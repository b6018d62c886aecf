'use client';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { ErrorNote, Loading, PageTitle } from '../../../_ui/components';
import { EmptyState } from '../../../_ui/empty-state';
import { Pager } from '../../../_ui/pager';
import { MatchesTable } from '../../../_ui/runs/matches-table';
import { useTeam } from '../../../_ui/team-context';
import { intParam, useUrlState } from '../../../_ui/url-state';
import { useTRPC } from '../../../trpc';

const PAGE_SIZE = 50;

/** Every game the team's runs played (multi-agent training and evaluations), newest first. */
export default function MatchesPage() {
  const team = useTeam();
  const trpc = useTRPC();
  const { params, set } = useUrlState();
  const base = `/teams/${team.id}`;
  const page = intParam(params.get('page'), 1);
  const matches = useQuery({ ...trpc.runs.teamMatches.queryOptions({ teamId: team.id, offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE }), placeholderData: keepPreviousData });

  return (
    <>
      <PageTitle title="Matches" />
      <p className="muted lead">Games of multi-agent environments: played during training, in evaluations against bots and other checkpoints.</p>
      {matches.isPending ? (
        <Loading label="Loading matches…" />
      ) : matches.isError ? (
        <ErrorNote error={matches.error} />
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
