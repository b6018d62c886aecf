'use client';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useParams, useRouter } from 'next/navigation';
import { ConfirmButton, ErrorNote, Loading, PageTitle } from '../../../../_ui/components';
import { DatasetUpload } from '../../../../_ui/datasets/upload';
import { NotFound } from '../../../../_ui/empty-state';
import { isNotFound } from '../../../../_ui/errors';
import { formatBytes, formatDateTime } from '../../../../_ui/format';
import { RowList } from '../../../../_ui/datasets/row-list';
import { Pager } from '../../../../_ui/pager';
import { refetchAfterChange } from '../../../../_ui/refresh';
import { atLeast } from '../../../../_ui/roles';
import { RunStateBadge } from '../../../../_ui/runs/run-parts';
import { useTeam } from '../../../../_ui/team-context';
import { intParam, useUrlState } from '../../../../_ui/url-state';
import { useTRPC } from '../../../../trpc';

const PAGE_SIZES = [20, 50, 100, 200];

/**
 * A dataset: its versions (immutable; rows, size, content hash), who uses each (environment
 * versions whose dry run read it, runs that name it), a paged preview of the chosen version's
 * rows, and an upload of the next version. The URL holds the version, the page and its size.
 */
export default function DatasetPage() {
  const { datasetId } = useParams<{ datasetId: string }>();
  const team = useTeam();
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const { params, set } = useUrlState();
  const base = `/teams/${team.id}`;
  const dataset = useQuery({ ...trpc.datasets.get.queryOptions({ teamId: team.id, datasetId }), retry: (n, e) => !isNotFound(e) && n < 2 });
  const usage = useQuery({ ...trpc.datasets.usage.queryOptions({ teamId: team.id, datasetId }), retry: (n, e) => !isNotFound(e) && n < 2 });
  const archive = useMutation(
    trpc.datasets.archive.mutationOptions({
      onSuccess: async () => {
        await refetchAfterChange(queryClient, trpc.datasets.list.queryKey({ teamId: team.id }));
        router.push(`${base}/datasets`);
      },
    }),
  );

  if (dataset.isLoadingError && isNotFound(dataset.error)) {
    return <NotFound kind="dataset" id={datasetId} teamName={team.name} back={{ href: `${base}/datasets`, label: 'See the team’s datasets' }} />;
  }
  if (dataset.isLoadingError) return <ErrorNote error={dataset.error} />;
  if (dataset.isPending) return <Loading label="Loading the dataset…" />;

  const d = dataset.data;
  const versionNumber = intParam(params.get('version'), d.versions[0]?.version ?? 1);
  const selected = d.versions.find((v) => v.version === versionNumber) ?? d.versions[0];
  const usedBy = new Map((usage.data?.versions ?? []).map((v) => [v.id, v]));

  return (
    <>
      <p className="breadcrumb">
        <Link href={`${base}/datasets`}>Datasets</Link> /
      </p>
      <PageTitle title={d.name}>
        {atLeast(team.role, 'ADMIN') && !d.archivedAt ? (
          <ConfirmButton
            label="Archive"
            question="Archive this dataset? It leaves the list; runs that name its versions still read them."
            confirmLabel="Yes, archive"
            pending={archive.isPending}
            onConfirm={() => archive.mutate({ teamId: team.id, datasetId: d.id })}
          />
        ) : null}
      </PageTitle>
      {d.archivedAt ? <p className="notice notice-warning">Archived {formatDateTime(d.archivedAt)}: hidden from the list; its versions stay readable.</p> : null}
      <p className="muted lead">{d.description || `${d.versions.length} ${d.versions.length === 1 ? 'version' : 'versions'}, created ${formatDateTime(d.createdAt)}.`}</p>
      <ErrorNote error={archive.error} />

      {usage.data && usage.data.environments.length > 0 ? (
        <p className="small">
          Read by{' '}
          {usage.data.environments.map((e, i) => (
            <span key={`${e.environmentId}-${e.split}`}>
              {i > 0 ? ', ' : ''}
              <Link href={`${base}/environments/${e.environmentId}`}>{e.name}</Link> <span className="muted">({e.split} split, {e.file})</span>
            </span>
          ))}
          : their next dry runs and runs take its latest version.
        </p>
      ) : null}

      <section className="panel" aria-labelledby="versions-title">
        <h2 id="versions-title">Versions</h2>
        <div className="table-wrap">
          <table className="table" aria-label="Versions">
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col" className="num">
                  Rows
                </th>
                <th scope="col" className="num">
                  Size
                </th>
                <th scope="col">Content hash</th>
                <th scope="col">Created</th>
                <th scope="col">Used by</th>
              </tr>
            </thead>
            <tbody>
              {d.versions.map((v) => {
                const use = usedBy.get(v.id);
                const current = v.id === selected?.id;
                return (
                  <tr key={v.id} aria-current={current ? 'true' : undefined}>
                    <th scope="row" className="nowrap">
                      {current ? (
                        <span>v{v.version} <span className="muted small">(previewed)</span></span>
                      ) : (
                        <Link href={`${base}/datasets/${d.id}?version=${v.version}`} scroll={false} aria-label={`Preview version ${v.version}`}>
                          v{v.version}
                        </Link>
                      )}
                    </th>
                    <td className="num">{v.rowCount.toLocaleString()}</td>
                    <td className="num">{formatBytes(v.bytes)}</td>
                    <td>
                      <span className="hash" title={v.contentHash}>
                        {v.contentHash.slice(0, 16)}
                      </span>
                    </td>
                    <td className="nowrap muted small">{formatDateTime(v.createdAt)}</td>
                    <td>
                      {usage.isPending ? (
                        <span className="muted small">…</span>
                      ) : !use || (use.jobs.length === 0 && use.dryRuns.length === 0) ? (
                        <span className="muted small">nothing yet</span>
                      ) : (
                        <ul className="usage-list">
                          {use.dryRuns.map((r) => (
                            <li key={r.versionId}>
                              <Link href={`${base}/environments/${r.environmentId}?v=${r.version}`} title="This environment version's dry run read it">
                                {r.environmentName} v{r.version}
                              </Link>
                            </li>
                          ))}
                          {use.jobs.map((j) => (
                            <li key={j.id}>
                              <Link href={`${base}/runs/${j.id}`} title={`${j.kind} run by ${j.owner.name}${j.as === 'evalDatasetVersionId' ? ', as its held-out rows' : ''}`}>
                                {j.kind.toLowerCase()} <RunStateBadge state={j.state} />
                              </Link>
                            </li>
                          ))}
                        </ul>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
        <ErrorNote error={usage.error} />
      </section>

      {selected ? <RowsPreview teamId={team.id} version={selected} page={intParam(params.get('page'), 1)} pageSize={PAGE_SIZES.includes(Number(params.get('size'))) ? Number(params.get('size')) : PAGE_SIZES[0]} onChange={set} /> : null}

      {atLeast(team.role, 'MEMBER') ? (
        <section className="panel" aria-labelledby="new-version-title">
          <h2 id="new-version-title">Upload a new version</h2>
          <DatasetUpload teamId={team.id} fixedName={d.name} />
        </section>
      ) : null}
    </>
  );
}

function RowsPreview({
  teamId,
  version,
  page,
  pageSize,
  onChange,
}: {
  teamId: string;
  version: { id: string; version: number; rowCount: number };
  page: number;
  pageSize: number;
  onChange: (changes: Record<string, string | number | null>) => void;
}) {
  const trpc = useTRPC();
  const offset = (page - 1) * pageSize;
  const rows = useQuery({ ...trpc.datasets.rows.queryOptions({ teamId, versionId: version.id, offset, limit: pageSize }), placeholderData: keepPreviousData });
  return (
    <section className="panel" aria-labelledby="rows-title">
      <div className="panel-head">
        <h2 id="rows-title">Rows of version {version.version}</h2>
        <label className="inline-form small">
          <span className="muted">Rows per page</span>
          <select value={pageSize} onChange={(e) => onChange({ size: Number(e.target.value) === PAGE_SIZES[0] ? null : e.target.value, page: null })}>
            {PAGE_SIZES.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
      </div>
      {rows.isPending ? (
        <Loading label="Loading rows…" />
      ) : rows.isLoadingError ? (
        <ErrorNote error={rows.error} />
      ) : rows.data.rows.length === 0 ? (
        <p className="muted">
          No rows on this page. <button type="button" className="btn btn-small" onClick={() => onChange({ page: null })}>Go to the first page</button>
        </p>
      ) : (
        <>
          <RowList rows={rows.data.rows} offset={offset} />
          <Pager page={page} pageSize={pageSize} total={rows.data.rowCount} onPage={(p) => onChange({ page: p === 1 ? null : p })} label="Pages of rows" />
        </>
      )}
    </section>
  );
}
