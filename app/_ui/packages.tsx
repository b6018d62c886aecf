'use client';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Download, FileUp, Globe, GlobeLock } from 'lucide-react';
import Link from 'next/link';
import { type DragEvent, type ReactNode, useId, useState } from 'react';
import { useTRPC } from '../trpc';
import { ConfirmButton, ErrorNote } from './components';
import { errorMessage } from './errors';
import { atLeast } from './roles';
import { saveFile } from './save-file';
import { useTeam } from './team-context';

// Environment packages in the IDE (server/environments/package.ts): a version exports as one
// `.wsenv` file, a file dropped on the environments list (or chosen) imports into the team keeping
// its content hash, and an admin publishes a version in the installation's gallery.

/** Downloads the version as `<name>-v<version>.wsenv`. */
export function ExportPackageButton({ versionId, name, version }: { versionId: string; name: string; version: number }) {
  const team = useTeam();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const exportIt = async () => {
    setBusy(true);
    setError(null);
    try {
      const pkg = await queryClient.fetchQuery({ ...trpc.environments.exportPackage.queryOptions({ teamId: team.id, versionId }), staleTime: 0 });
      saveFile(`${name}-v${version}.wsenv`, new Blob([JSON.stringify(pkg, null, 1)], { type: 'application/json' }));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" className="btn" onClick={() => void exportIt()} disabled={busy} title="Download this version, its README, tests and datasets as one file another team can import">
        <Download size={15} aria-hidden="true" /> {busy ? 'Exporting…' : 'Export'}
      </button>
      {error ? <ErrorNote error={error} className="workbench-note" /> : null}
    </>
  );
}

/** Publishes the version in the installation's gallery, or takes it back: admins; others see whether it is. */
export function PublishButton({ versionId, publishedAt, onChanged }: { versionId: string; publishedAt: Date | string | null; onChanged: () => void }) {
  const team = useTeam();
  const trpc = useTRPC();
  const publish = useMutation(trpc.environments.publish.mutationOptions({ onSuccess: onChanged }));
  const published = publishedAt !== null;
  if (!atLeast(team.role, 'ADMIN')) {
    return published ? (
      <span className="badge badge-soft" title="Every user of this installation can read and import this version">
        <Globe size={12} aria-hidden="true" /> in the gallery
      </span>
    ) : null;
  }
  const mutate = (value: boolean) => publish.mutate({ teamId: team.id, versionId, published: value });
  return (
    <>
      {published ? (
        <>
          <span className="badge badge-soft" title="Every user of this installation can read and import this version">
            <Globe size={12} aria-hidden="true" /> In the gallery
          </span>
          <button type="button" className="btn" disabled={publish.isPending} onClick={() => mutate(false)} title="Take this version back from the installation’s gallery">
            <GlobeLock size={15} aria-hidden="true" /> Take back
          </button>
        </>
      ) : (
        // What publishing shows, asked first: it is seen by every team of the installation.
        <ConfirmButton
          label="Publish"
          question="Every team here can then read and import this version, with the train rows its dry run read."
          confirmLabel="Publish it"
          danger={false}
          pending={publish.isPending}
          onConfirm={() => mutate(true)}
        />
      )}
      {publish.isError ? <ErrorNote error={publish.error} className="workbench-note" /> : null}
    </>
  );
}

type Imported = {
  name: string;
  environmentId: string;
  version: number;
  created: boolean;
  keptContentHash: boolean;
  datasets: Array<{ name: string; version: number }>;
  validation: { ok: boolean } | null;
};

/** What an import answered, with the way to the environment. */
export function ImportedNote({ imported }: { imported: Imported }) {
  const team = useTeam();
  const hash = imported.keptContentHash ? 'its content hash kept' : 'under a new name, so with a new content hash';
  return (
    <p className="notice notice-success" role="status">
      {imported.created ? `Imported ${imported.name} as version ${imported.version}, ${hash}` : `${imported.name} version ${imported.version} is already in this team: nothing new`}
      {imported.datasets.length > 0 ? `, with ${imported.datasets.map((d) => `${d.name} v${d.version}`).join(' and ')}` : ''}.{' '}
      {imported.validation && !imported.validation.ok ? 'It failed its dry run here (a server it needs may not answer from this installation): open it to see why. ' : ''}
      <Link href={`/teams/${team.id}/environments/${imported.environmentId}`}>Open {imported.name}</Link>
    </p>
  );
}

/**
 * The environments list as a drop target for `.wsenv` packages, with a "Import package" picker in
 * its toolbar (`picker`). A file that is not a package is refused here, naming it; the server
 * refuses one changed after export.
 */
export function PackageDrop({ children, picker }: { children: ReactNode; picker: (button: ReactNode) => ReactNode }) {
  const team = useTeam();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const inputId = useId();
  const [over, setOver] = useState(false);
  const [localError, setLocalError] = useState<string | null>(null);
  const importIt = useMutation(
    trpc.environments.importPackage.mutationOptions({
      onSuccess: () => void queryClient.invalidateQueries({ queryKey: trpc.environments.list.pathKey() }),
    }),
  );
  const canImport = atLeast(team.role, 'MEMBER');

  const take = async (file: File | undefined) => {
    if (!file) return;
    setLocalError(null);
    importIt.reset();
    let pkg: unknown;
    try {
      pkg = JSON.parse(await file.text());
    } catch {
      setLocalError(`${file.name} is not a Whetstone environment package (not JSON): export one from an environment’s page, or with whetstone env export.`);
      return;
    }
    importIt.mutate({ teamId: team.id, package: pkg as Parameters<typeof importIt.mutate>[0]['package'] });
  };
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setOver(false);
    if (canImport) void take(e.dataTransfer.files[0]);
  };

  const button = canImport ? (
    <label className="btn file-button" htmlFor={inputId}>
      <FileUp size={16} aria-hidden="true" /> {importIt.isPending ? 'Importing…' : 'Import package'}
      <input
        id={inputId}
        className="file-input"
        type="file"
        accept=".wsenv,application/json"
        onChange={(e) => {
          void take(e.target.files?.[0]);
          e.target.value = '';
        }}
      />
    </label>
  ) : null;

  return (
    <div
      className="package-drop"
      data-over={over}
      onDragOver={(e) => {
        if (!canImport || !e.dataTransfer.types.includes('Files')) return;
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={(e) => {
        if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setOver(false);
      }}
      onDrop={onDrop}
    >
      {picker(button)}
      {over ? <p className="package-drop-hint" aria-hidden="true">Drop a .wsenv package to import it into {team.name}</p> : null}
      {importIt.isPending ? <p className="muted" role="status">Importing and dry-running the package…</p> : null}
      {localError ? <ErrorNote error={localError} /> : null}
      {importIt.isError ? <ErrorNote error={errorMessage(importIt.error)} /> : null}
      {importIt.data ? <ImportedNote imported={importIt.data} /> : null}
      {children}
    </div>
  );
}
