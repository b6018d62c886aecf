'use client';
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { ErrorNote, Loading, PageTitle } from '../../../_ui/components';
import { DatasetUpload } from '../../../_ui/datasets/upload';
import { DataTable, type Column } from '../../../_ui/data-table';
import { EmptyState } from '../../../_ui/empty-state';
import { SearchField } from '../../../_ui/search-field';
import { formatBytes, formatDateTime, formatRelative } from '../../../_ui/format';
import { atLeast } from '../../../_ui/roles';
import { useTeam } from '../../../_ui/team-context';
import { useUrlState } from '../../../_ui/url-state';
import { useTRPC } from '../../../trpc';

type Dataset = NonNullable<ReturnType<typeof useDatasets>['data']>[number];

function useDatasets(teamId: string) {
  const trpc = useTRPC();
  return useQuery(trpc.datasets.list.queryOptions({ teamId }));
}

const columns = (base: string): Column<Dataset>[] => [
  {
    header: 'Name',
    cell: (d) => (
      <>
        <Link href={`${base}/datasets/${d.id}`}>{d.name}</Link>
        {d.description ? <div className="muted small table-sub">{d.description}</div> : null}
      </>
    ),
  },
  {
    header: 'Latest version',
    className: 'nowrap',
    cell: (d) =>
      d.latest ? (
        <>
          v{d.latest.version} <span className="hash" title={d.latest.contentHash}>{d.latest.contentHash.slice(0, 10)}</span>
        </>
      ) : (
        '—'
      ),
  },
  { header: 'Rows', num: true, cell: (d) => (d.latest ? d.latest.rowCount.toLocaleString() : '—') },
  { header: 'Size', num: true, cell: (d) => (d.latest ? formatBytes(d.latest.bytes) : '—') },
  { header: 'Versions', num: true, cell: (d) => d.versionCount },
  { header: 'Updated', className: 'muted small nowrap', title: (d) => formatDateTime(d.updatedAt), cell: (d) => formatRelative(d.updatedAt) },
];

export default function DatasetsPage() {
  const team = useTeam();
  const { params } = useUrlState();
  const q = params.get('q') ?? '';
  const datasets = useDatasets(team.id);
  const base = `/teams/${team.id}`;
  const mayUpload = atLeast(team.role, 'MEMBER');
  const shown = (datasets.data ?? []).filter((d) => !q || `${d.name} ${d.description}`.toLowerCase().includes(q.toLowerCase()));

  return (
    <>
      <PageTitle title="Datasets" />
      <p className="muted lead">
        JSONL files that SFT trains on and data-dependent environments read. Every upload is an immutable version, kept by content: jobs name the version they used.
      </p>
      {mayUpload ? (
        <section className="panel" aria-labelledby="upload-title">
          <h2 id="upload-title">Upload a dataset</h2>
          <DatasetUpload teamId={team.id} />
        </section>
      ) : null}
      {datasets.isPending ? (
        <Loading label="Loading datasets…" />
      ) : datasets.isLoadingError ? (
        <ErrorNote error={datasets.error} />
      ) : datasets.data.length === 0 ? (
        <EmptyState title="No datasets yet">
          {mayUpload
            ? 'Drop a JSONL file on the box above, or save a data-dependent environment (math, math-tools): its rows become a dataset.'
            : 'Members upload JSONL files here; ask one to add the data you need.'}
        </EmptyState>
      ) : (
        <>
          <SearchField label="Search datasets" />
          <DataTable
            panel
            label="Datasets"
            rows={shown}
            rowKey={(d) => d.id}
            columns={columns(base)}
            empty={<p className="muted">No dataset matches “{q}”.</p>}
          />
        </>
      )}
    </>
  );
}
