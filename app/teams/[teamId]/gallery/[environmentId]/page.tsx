'use client';
import { useMutation, useQuery } from '@tanstack/react-query';
import { FileDown } from 'lucide-react';
import Link from 'next/link';
import { useParams } from 'next/navigation';
import { type FormEvent, useState } from 'react';
import { ErrorNote, Field, Loading, StatusBadge } from '../../../../_ui/components';
import { isNotFound } from '../../../../_ui/errors';
import { formatDateTime, formatRelative } from '../../../../_ui/format';
import { UntrustedMarkdown } from '../../../../_ui/markdown';
import { ImportedNote } from '../../../../_ui/packages';
import { atLeast } from '../../../../_ui/roles';
import { useTeam } from '../../../../_ui/team-context';
import { useTRPC } from '../../../../trpc';

/**
 * One published environment: its README (another team's text, drawn as untrusted Markdown), its
 * published versions with their files and the runs of every team on each, and the import into
 * this team: a version, under its name or another (another name makes other content, so a new
 * content hash).
 */
export default function GalleryEntryPage() {
  const { environmentId } = useParams<{ environmentId: string }>();
  const team = useTeam();
  const trpc = useTRPC();
  const base = `/teams/${team.id}`;
  const entry = useQuery({ ...trpc.gallery.entry.queryOptions({ environmentId }), retry: (n, e) => !isNotFound(e) && n < 2 });
  const [versionId, setVersionId] = useState<string | null>(null);
  const [name, setName] = useState<string | null>(null);
  const importIt = useMutation(trpc.gallery.import.mutationOptions());

  if (entry.error && isNotFound(entry.error)) {
    return (
      <div className="empty-state" role="alert">
        <h1>Not in the gallery</h1>
        <p className="muted">This environment is not published (it may have been taken back), or the link is mistyped.</p>
        <Link href={`${base}/gallery`}>See the gallery</Link>
      </div>
    );
  }
  if (entry.isLoadingError) return <ErrorNote error={entry.error} />;
  if (!entry.data) return <Loading label="Loading the environment…" />;

  const e = entry.data;
  const chosen = e.versions.find((v) => v.versionId === versionId) ?? e.versions[0];
  const asName = name ?? e.name;
  const submit = (ev: FormEvent) => {
    ev.preventDefault();
    importIt.mutate({ teamId: team.id, versionId: chosen.versionId, ...(asName === e.name ? {} : { name: asName }) });
  };

  return (
    <>
      <nav className="breadcrumb muted small" aria-label="Breadcrumb">
        <Link href={`${base}/gallery`}>Gallery</Link> / {e.name}
      </nav>
      <div className="page-title">
        <h1>{e.name}</h1>
      </div>
      <p className="muted lead">
        Published by {e.team}. {e.description}
      </p>
      <div className="gallery-entry">
        <section className="panel gallery-readme" aria-label="README">
          {e.readme ? <UntrustedMarkdown>{e.readme}</UntrustedMarkdown> : <p className="muted">This version has no README.md.</p>}
        </section>
        <aside className="gallery-side">
          {atLeast(team.role, 'MEMBER') ? (
            <form className="panel form" onSubmit={submit} aria-label={`Import into ${team.name}`}>
              <h2 className="section-title">Import into {team.name}</h2>
              <Field label="Version">
                {(props) => (
                  <select {...props} value={chosen.versionId} onChange={(ev) => setVersionId(ev.target.value)}>
                    {e.versions.map((v) => (
                      <option key={v.versionId} value={v.versionId}>
                        v{v.version}
                        {v === e.versions[0] ? ' (newest)' : ''}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              <Field label="Name in this team" hint="Its own name keeps its content hash; if the team has an environment of that name, this becomes its next version.">
                {(props) => <input {...props} value={asName} onChange={(ev) => setName(ev.target.value)} pattern="[a-z0-9][a-z0-9\-]{0,62}" required spellCheck={false} />}
              </Field>
              <button type="submit" className="btn btn-primary" disabled={importIt.isPending}>
                <FileDown size={15} aria-hidden="true" /> {importIt.isPending ? 'Importing…' : 'Import'}
              </button>
              {importIt.isError ? <ErrorNote error={importIt.error} /> : null}
              {importIt.data ? <ImportedNote imported={importIt.data} /> : null}
            </form>
          ) : (
            <p className="notice notice-info">Viewers read the gallery; a member of {team.name} imports.</p>
          )}
          <section className="panel" aria-label="Published versions">
            <h2 className="section-title">Published versions</h2>
            <div className="table-wrap">
              <table className="table" aria-label="Published versions">
                <thead>
                  <tr>
                    <th scope="col">Version</th>
                    <th scope="col" className="num">Runs</th>
                    <th scope="col">Published</th>
                  </tr>
                </thead>
                <tbody>
                  {e.versions.map((v) => (
                    <tr key={v.versionId}>
                      <th scope="row">
                        v{v.version} <StatusBadge status={v.validationStatus} />
                        <div className="muted small table-sub">
                          <span className="mono" title={`Content hash ${v.contentHash}`}>
                            {v.contentHash.slice(0, 10)}
                          </span>{' '}
                          · {v.kind} · {v.files.join(', ') || 'no files (served over HTTP)'}
                        </div>
                      </th>
                      <td className="num tabular" title={`${v.runs} TRAIN and SFT jobs in ${v.teams} team${v.teams === 1 ? '' : 's'}, on this content`}>
                        {v.runs}
                        <div className="muted small">{v.teams === 1 ? '1 team' : `${v.teams} teams`}</div>
                      </td>
                      <td className="muted small nowrap" title={formatDateTime(v.publishedAt)}>
                        {formatRelative(v.publishedAt)}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </section>
        </aside>
      </div>
    </>
  );
}
