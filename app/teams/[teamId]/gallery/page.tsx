'use client';
import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useSearchParams } from 'next/navigation';
import { ErrorNote, Loading, PageTitle, StatusBadge } from '../../../_ui/components';
import { EmptyState } from '../../../_ui/empty-state';
import { SearchField } from '../../../_ui/search-field';
import { formatDateTime, formatRelative } from '../../../_ui/format';
import { useTeam } from '../../../_ui/team-context';
import { useTRPC } from '../../../trpc';

/**
 * The installation's gallery: environment versions the teams here chose to publish, newest first,
 * with how many runs of every team used them. One opens on its README and versions, and imports
 * into this team keeping its content hash.
 */
export default function GalleryPage() {
  const team = useTeam();
  const trpc = useTRPC();
  const q = useSearchParams().get('q') ?? '';
  const list = useQuery({ ...trpc.gallery.list.queryOptions({ search: q || undefined }), placeholderData: (previous) => previous });
  const base = `/teams/${team.id}`;

  return (
    <>
      <PageTitle title="Gallery" />
      <p className="muted lead">
        Environments the teams of this installation published: open one to read it, then import it into {team.name}. An import keeps its content hash, so its runs here count for it too. Publish your own from an
        environment’s page.
      </p>
      <SearchField label="Search the gallery" />
      {list.isPending ? (
        <Loading label="Loading the gallery…" />
      ) : list.isLoadingError ? (
        <ErrorNote error={list.error} />
      ) : list.data.length === 0 ? (
        q ? (
          <p className="muted">No published environment matches “{q}”.</p>
        ) : (
          <EmptyState title="Nothing published yet" action={<Link href={`${base}/environments`} className="btn">Your environments</Link>}>
            An admin publishes a version from its environment’s page (Publish, beside Export): every team of this installation then finds it here.
          </EmptyState>
        )
      ) : (
        <ul className="gallery-grid" aria-label="Published environments">
          {list.data.map((e) => (
            <li key={e.environmentId} className="gallery-card panel">
              <h2 className="gallery-card-title">
                <Link href={`${base}/gallery/${e.environmentId}`}>{e.name}</Link>
              </h2>
              <p className="muted small">
                by {e.team} · {e.kind}
              </p>
              <p className="gallery-card-text">{e.description || <span className="muted">No description.</span>}</p>
              <p className="muted small gallery-card-foot">
                v{e.latest.version} <StatusBadge status={e.latest.validationStatus} /> · {e.publishedVersions === 1 ? 'one version' : `${e.publishedVersions} versions`} ·{' '}
                <span className="tabular">{e.runs === 1 ? '1 run' : `${e.runs} runs`}</span> · <span title={formatDateTime(e.latest.publishedAt)}>published {formatRelative(e.latest.publishedAt)}</span>
              </p>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
