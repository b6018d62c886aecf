'use client';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading } from '../components';
import { RowList } from '../datasets/row-list';
import { Pager } from '../pager';

const PAGE_SIZE = 10;

/**
 * The rows a data-dependent environment reads (its manifest's `dataset` splits), beside the code
 * that reads them: each split's latest team dataset version, paged, with a link to its page.
 */
export function DataPanel({ teamId, versionId }: { teamId: string; versionId: string }) {
  const trpc = useTRPC();
  const datasets = useQuery(trpc.environments.datasets.queryOptions({ teamId, versionId }));
  if (datasets.isPending) return <Loading label="Loading the environment's datasets…" />;
  if (datasets.isLoadingError) return <ErrorNote error={datasets.error} />;
  return (
    <div className="side-body">
      {datasets.data.splits.map((s) => (
        <section key={s.split} aria-label={`Dataset ${s.split}`} className="data-split">
          <h3>
            {s.split === 'train' ? 'Training rows' : 'Held-out rows'} <span className="muted small mono">{s.file}</span>
          </h3>
          {s.latest && s.datasetId ? (
            <>
              <p className="muted small">
                <Link href={`/teams/${teamId}/datasets/${s.datasetId}`}>{s.name}</Link> v{s.latest.version} · {s.latest.rowCount.toLocaleString()} rows
              </p>
              <SplitRows teamId={teamId} versionId={s.latest.id} rowCount={s.latest.rowCount} label={s.split} />
            </>
          ) : (
            <p className="muted small">
              No dataset named {s.name} in this team yet: upload one on the <Link href={`/teams/${teamId}/datasets`}>Datasets</Link> page with that name.
            </p>
          )}
        </section>
      ))}
    </div>
  );
}

function SplitRows({ teamId, versionId, rowCount, label }: { teamId: string; versionId: string; rowCount: number; label: string }) {
  const trpc = useTRPC();
  const [page, setPage] = useState(1);
  const offset = (page - 1) * PAGE_SIZE;
  const rows = useQuery({ ...trpc.datasets.rows.queryOptions({ teamId, versionId, offset, limit: PAGE_SIZE }), placeholderData: keepPreviousData });
  if (rows.isPending) return <Loading label="Loading rows…" />;
  if (rows.isLoadingError) return <ErrorNote error={rows.error} />;
  return (
    <>
      <RowList rows={rows.data.rows} offset={offset} compact />
      <Pager page={page} pageSize={PAGE_SIZE} total={rowCount} onPage={setPage} label={`Pages of ${label} rows`} />
    </>
  );
}
