'use client';
import { DiffEditor } from '@monaco-editor/react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Command } from 'cmdk';
import { FileCode2, FileJson, FileText, Rocket, Save } from 'lucide-react';
import Link from 'next/link';
import { usePathname, useRouter, useSearchParams } from 'next/navigation';
import { useCallback, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { Group, Panel, Separator } from 'react-resizable-panels';
import type { DryRunReport } from '../../../sdk/dry-run-report';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading, StatusBadge } from '../components';
import { errorMessage } from '../errors';
import { useEffectiveTheme } from '../theme';
import { CodePane } from './code-pane';
import { clearDraft, loadDraft, sameFiles, saveDraft, versionFiles } from './drafts';
import { UntrustedMarkdown } from '../markdown';
import { DataPanel } from './data-panel';
import { DryRunPanel } from './dry-run-panel';
import { HistoryPanel } from './history-panel';
import { reportProblems, type EditorProblem } from './markers';
import { setupMonaco, type Monaco } from './monaco-setup';
import { PlayPanel } from './play-panel';
import { ExportPackageButton, PublishButton } from '../packages';

type Tab = 'dry-run' | 'play' | 'data' | 'history';
const TABS: { id: Tab; label: string }[] = [
  { id: 'dry-run', label: 'Dry run' },
  { id: 'play', label: 'Play' },
  { id: 'data', label: 'Data' },
  { id: 'history', label: 'History' },
];

/** Files in the order a reader wants them: the entry, other code, the manifest, the README. */
function fileOrder(files: string[], entry: string): string[] {
  const rank = (f: string) => (f === entry ? 0 : f.endsWith('.ts') ? 1 : f.endsWith('.json') ? 2 : 3);
  return [...files].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/** Where a JSON.parse error points, as a line and column of the text. */
function jsonErrorAt(text: string, error: unknown): { line: number; column: number } {
  const m = /position (\d+)/.exec(String((error as Error).message));
  if (!m) return { line: 1, column: 1 };
  const before = text.slice(0, Number(m[1]));
  const lines = before.split('\n');
  return { line: lines.length, column: lines[lines.length - 1].length + 1 };
}

/** The editor's unsaved files as play.open's draft source (null when the manifest does not parse: Save says why). */
function draftSource(files: Record<string, string>, entry: string) {
  const { 'manifest.json': manifestText = '{}', ...code } = files;
  try {
    return { draft: { entry, files: code, manifest: JSON.parse(manifestText) as Record<string, unknown> } };
  } catch {
    return null;
  }
}

/**
 * The environment editor: files · Monaco · dry run / play / history. The URL holds the version,
 * file and tab (`?v=3&file=env.ts&tab=play`); unsaved edits are kept as a draft in this browser.
 */
export function Workbench({ teamId, environmentId }: { teamId: string; environmentId: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const params = useSearchParams();
  const queryClient = useQueryClient();
  const [monaco, setMonaco] = useState<Monaco | null>(null);
  useEffect(() => {
    void setupMonaco().then(setMonaco);
  }, []);

  const env = useQuery(trpc.environments.get.queryOptions({ teamId, environmentId }));
  const versionNumber = Number(params.get('v')) || env.data?.versions[0]?.version;
  const versionRow = env.data?.versions.find((v) => v.version === versionNumber) ?? env.data?.versions[0];
  const version = useQuery({ ...trpc.environments.version.queryOptions({ teamId, versionId: versionRow?.id ?? '' }), enabled: !!versionRow });
  const latest = env.data?.versions[0];

  const setParams = useCallback(
    (changes: Record<string, string | null>) => {
      const next = new URLSearchParams(params.toString());
      for (const [k, v] of Object.entries(changes)) {
        if (v === null) next.delete(k);
        else next.set(k, v);
      }
      router.replace(`${pathname}?${next.toString()}`, { scroll: false });
    },
    [params, pathname, router],
  );

  // The working copy: the version's files, or this browser's draft of edits made on it.
  const base = useMemo(() => (version.data ? versionFiles(version.data) : null), [version.data]);
  const [files, setFiles] = useState<Record<string, string> | null>(null);
  const [restored, setRestored] = useState<number | null>(null);
  const [otherDraft, setOtherDraft] = useState<{ version: number } | null>(null);
  useEffect(() => {
    if (!base || !version.data) return;
    const draft = loadDraft(environmentId);
    if (draft && draft.baseVersionId === version.data.id && !sameFiles(draft.files, base)) {
      setFiles(draft.files);
      setRestored(draft.savedAt);
      setOtherDraft(null);
    } else {
      setFiles(base);
      setRestored(null);
      setOtherDraft(draft && draft.baseVersionId !== version.data.id ? { version: draft.baseVersion } : null);
    }
  }, [base, version.data, environmentId]);
  const dirty = !!files && !!base && !sameFiles(files, base);

  const draftTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const onChange = useCallback(
    (file: string, text: string) => {
      setFiles((current) => {
        if (!current || current[file] === text) return current;
        const next = { ...current, [file]: text };
        if (draftTimer.current) clearTimeout(draftTimer.current);
        draftTimer.current = setTimeout(() => {
          if (version.data) saveDraft(environmentId, { baseVersionId: version.data.id, baseVersion: version.data.version, files: next, savedAt: Date.now() });
        }, 250);
        return next;
      });
    },
    [environmentId, version.data],
  );
  useEffect(() => {
    if (!dirty) return;
    const guard = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', guard);
    return () => window.removeEventListener('beforeunload', guard);
  }, [dirty]);

  const entry = version.data?.entry ?? 'env.ts';
  const fileNames = useMemo(() => (files ? fileOrder(Object.keys(files), entry) : []), [files, entry]);
  // An environment served over HTTP has no entry file: it opens on its manifest.
  const opening = files && !(entry in files) && fileNames.length > 0 ? fileNames[0] : entry;
  const file = params.get('file') && files && params.get('file')! in files ? params.get('file')! : opening;
  const servedBy = ((version.data?.manifest as { server?: { urls?: unknown } } | undefined)?.server?.urls ?? null) as string[] | null;
  // The Data tab only for an environment that reads rows (its manifest names a dataset).
  const readsData = !!(version.data?.manifest as { dataset?: unknown } | undefined)?.dataset;
  const tabs = TABS.filter((t) => t.id !== 'data' || readsData);
  const tab = (tabs.find((t) => t.id === params.get('tab'))?.id ?? 'dry-run') as Tab;

  // Saving: a new immutable version, dry-run by the server; its report becomes the markers.
  const [saveReport, setSaveReport] = useState<{ versionId: string; report: DryRunReport } | null>(null);
  const [localProblems, setLocalProblems] = useState<EditorProblem[]>([]);
  const [saveNote, setSaveNote] = useState<{ kind: 'info' | 'warning'; text: string } | null>(null);
  const save = useMutation(
    trpc.environments.saveVersion.mutationOptions({
      onSuccess: async (result) => {
        clearDraft(environmentId);
        if (result.validation) setSaveReport({ versionId: result.versionId, report: result.validation });
        const conflict = (result as { conflict?: { latestVersion: number } }).conflict;
        setSaveNote(
          conflict
            ? { kind: 'warning', text: `Saved as v${result.version}, but it was based on v${version.data?.version}: v${conflict.latestVersion} was saved meanwhile (another tab or person). Compare them in History.` }
            : result.created
              ? null
              : { kind: 'info', text: `Nothing new: these files are exactly v${result.version}.` },
        );
        await queryClient.invalidateQueries({ queryKey: trpc.environments.get.queryKey({ teamId, environmentId }) });
        setParams({ v: String(result.version), tab: 'dry-run' });
      },
    }),
  );
  const doSave = useCallback(() => {
    if (!files || !env.data || save.isPending) return;
    const { 'manifest.json': manifestText = '{}', ...code } = files;
    let manifest: Record<string, unknown>;
    try {
      manifest = JSON.parse(manifestText) as Record<string, unknown>;
    } catch (error) {
      setLocalProblems([{ file: 'manifest.json', ...jsonErrorAt(manifestText, error), message: `manifest.json is not valid JSON: ${(error as Error).message}`, severity: 'error', source: 'manifest' }]);
      setParams({ file: 'manifest.json', tab: 'dry-run' });
      return;
    }
    setLocalProblems([]);
    setSaveNote(null);
    const entryFile = typeof manifest.entry === 'string' && manifest.entry in code ? manifest.entry : entry;
    save.mutate({ teamId, name: env.data.name, entry: entryFile, files: code, manifest, ...({ baseVersionId: version.data?.id } as object) });
  }, [files, env.data, save, entry, teamId, version.data, setParams]);

  const report: DryRunReport | null =
    saveReport && saveReport.versionId === version.data?.id ? saveReport.report : ((version.data?.validation as DryRunReport | null | undefined) ?? null);
  const problems = useMemo(() => [...localProblems, ...(report && !dirty ? reportProblems(report, entry) : report ? reportProblems(report, entry) : [])], [localProblems, report, dirty, entry]);

  const [reveal, setReveal] = useState<{ line: number; column: number } | null>(null);
  const onReveal = (p: EditorProblem) => {
    setParams({ file: p.file in (files ?? {}) ? p.file : entry });
    setReveal({ line: p.line, column: p.column });
  };

  const [quickOpen, setQuickOpen] = useState(false);
  // Ctrl/Cmd-S and Ctrl/Cmd-P also work with the focus outside the editor.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (!(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey) return;
      if (e.key.toLowerCase() === 's') {
        e.preventDefault();
        doSave();
      } else if (e.key.toLowerCase() === 'p') {
        e.preventDefault();
        setQuickOpen(true);
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [doSave]);

  const compareParam = /^(\d+)\.\.(\d+)$/.exec(params.get('compare') ?? '');
  const compare: [number, number] | null = compareParam ? [Number(compareParam[1]), Number(compareParam[2])] : null;

  if (env.isPending) return <Loading label="Opening the environment…" />;
  if (env.isLoadingError) return <ErrorNote error={env.error} />;
  if (!versionRow) return <p className="muted">This environment has no version yet.</p>;

  return (
    <div className="page-full workbench">
      <div className="workbench-bar">
        <div className="workbench-title">
          <Link href={`/teams/${teamId}/environments`} className="muted">
            Environments
          </Link>
          <span className="muted" aria-hidden="true">
            /
          </span>
          <h1>{env.data.name}</h1>
          <label className="sr-only" htmlFor="version-select">
            Version
          </label>
          <select
            id="version-select"
            value={versionRow.version}
            onChange={(e) => setParams({ v: e.target.value, compare: null })}
            className="version-select"
          >
            {env.data.versions.map((v) => (
              <option key={v.id} value={v.version}>
                v{v.version}
                {v.id === latest?.id ? ' (latest)' : ''}
              </option>
            ))}
          </select>
          <StatusBadge status={versionRow.validationStatus} />
          <span className="muted small mono" title="Content hash of this version">
            {versionRow.contentHash.slice(0, 10)}
          </span>
          {dirty ? <span className="dirty-dot">● unsaved</span> : null}
        </div>
        <div className="workbench-actions">
          <button type="button" className="btn-primary" onClick={doSave} disabled={!files || save.isPending} aria-keyshortcuts="Control+S">
            <Save size={15} aria-hidden="true" /> {save.isPending ? 'Saving…' : 'Save'} <kbd aria-hidden="true">Ctrl S</kbd>
          </button>
          <Link className="btn" href={`/teams/${teamId}/launch?environment=${environmentId}&version=${versionRow.id}`}>
            <Rocket size={15} aria-hidden="true" /> Launch…
          </Link>
          <ExportPackageButton versionId={versionRow.id} name={env.data.name} version={versionRow.version} />
          <PublishButton versionId={versionRow.id} publishedAt={versionRow.publishedAt} onChanged={() => void env.refetch()} />
        </div>
      </div>
      {save.isError ? <ErrorNote error={save.error} className="workbench-note" /> : null}
      {saveNote ? <p className={`notice notice-${saveNote.kind} workbench-note`}>{saveNote.text}</p> : null}
      {restored ? (
        <p className="notice notice-info workbench-note">
          Unsaved edits from {new Date(restored).toLocaleString()} restored.{' '}
          <button
            type="button"
            className="btn-small"
            onClick={() => {
              clearDraft(environmentId);
              setFiles(base);
              setRestored(null);
            }}
          >
            Discard them
          </button>
        </p>
      ) : null}
      {otherDraft ? (
        <p className="notice notice-info workbench-note">
          You have unsaved edits based on v{otherDraft.version}. <button type="button" className="btn-small" onClick={() => setParams({ v: String(otherDraft.version) })}>Open them</button>
        </p>
      ) : null}
      {servedBy ? (
        <p className="notice notice-info workbench-note" data-testid="served-by">
          Served over HTTP by <span className="mono">{servedBy.join(', ')}</span>: the game runs there, and jobs, dry runs and the play console call it. Its manifest names the servers and the episode limits.
        </p>
      ) : null}
      <Group orientation="horizontal" className="workbench-panes">
        <Panel defaultSize="15" minSize="8" className="pane">
          <nav className="file-list" aria-label="Files">
            <p className="pane-title">Files</p>
            <ul>
              {fileNames.map((f) => {
                const count = problems.filter((p) => p.file === f && p.severity === 'error').length;
                return (
                  <li key={f}>
                    <button type="button" aria-current={f === file ? 'true' : undefined} onClick={() => setParams({ file: f, compare: null })}>
                      {f.endsWith('.json') ? <FileJson size={14} aria-hidden="true" /> : f.endsWith('.md') ? <FileText size={14} aria-hidden="true" /> : <FileCode2 size={14} aria-hidden="true" />}
                      <span className="file-name">{f}</span>
                      {f === entry ? <span className="muted small">entry</span> : null}
                      {count > 0 ? <span className="badge badge-status-failed">{count}</span> : null}
                    </button>
                  </li>
                );
              })}
            </ul>
          </nav>
        </Panel>
        <Separator className="separator" />
        <Panel defaultSize="52" minSize="25" className="pane pane-editor">
          {!monaco || !files ? (
            <Loading label="Loading the editor…" />
          ) : compare ? (
            <CompareView teamId={teamId} versions={env.data.versions} compare={compare} file={file} onClose={() => setParams({ compare: null })} />
          ) : (
            <MarkdownBeside text={file.endsWith('.md') ? files[file] ?? '' : null}>
              <CodePane
                monaco={monaco}
                files={files}
                file={file}
                problems={problems}
                readOnly={false}
                onChange={onChange}
                onSave={doSave}
                onQuickOpen={() => setQuickOpen(true)}
                reveal={reveal}
              />
            </MarkdownBeside>
          )}
        </Panel>
        <Separator className="separator" />
        <Panel defaultSize="33" minSize="18" className="pane">
          <div className="side-tabs" role="tablist" aria-label="Checks">
            {tabs.map((t) => (
              <button
                key={t.id}
                type="button"
                role="tab"
                id={`tab-${t.id}`}
                aria-selected={tab === t.id}
                aria-controls={`panel-${t.id}`}
                onClick={() => setParams({ tab: t.id })}
              >
                {t.label}
                {t.id === 'dry-run' && problems.some((p) => p.severity === 'error') ? <span className="badge badge-status-failed">{problems.filter((p) => p.severity === 'error').length}</span> : null}
              </button>
            ))}
          </div>
          <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} className="side-panel">
            {tab === 'dry-run' ? (
              <DryRunPanel report={report} problems={problems} saving={save.isPending} onReveal={onReveal} />
            ) : tab === 'data' ? (
              <DataPanel teamId={teamId} versionId={versionRow.id} />
            ) : tab === 'play' ? (
              <PlayPanel
                teamId={teamId}
                environmentId={environmentId}
                versionId={versionRow.id}
                draft={dirty && files ? draftSource(files, entry) : null}
                description={report?.description ?? null}
                onReveal={(at) => onReveal({ ...at, message: '', severity: 'error', source: 'play' })}
              />
            ) : (
              <HistoryPanel
                versions={env.data.versions}
                current={versionRow.version}
                compare={compare}
                onOpen={(v) => setParams({ v: String(v), compare: null })}
                onCompare={(from, to) => setParams({ compare: `${from}..${to}` })}
              />
            )}
          </div>
        </Panel>
      </Group>
      <Command.Dialog open={quickOpen} onOpenChange={setQuickOpen} label="Open a file" className="palette" overlayClassName="palette-overlay">
        <div className="palette-input">
          <Command.Input placeholder="Open a file…" />
          <kbd aria-hidden="true">Esc</kbd>
        </div>
        <Command.List className="palette-list">
          <Command.Empty>No such file.</Command.Empty>
          {fileNames.map((f) => (
            <Command.Item
              key={f}
              value={f}
              onSelect={() => {
                setQuickOpen(false);
                setParams({ file: f, compare: null });
              }}
            >
              {f}
            </Command.Item>
          ))}
        </Command.List>
      </Command.Dialog>
      {save.isError ? <span className="sr-only" role="alert">{errorMessage(save.error)}</span> : null}
    </div>
  );
}

/** Two versions of one file side by side (Monaco's diff editor), read-only. */
function CompareView({
  teamId,
  versions,
  compare,
  file,
  onClose,
}: {
  teamId: string;
  versions: { id: string; version: number }[];
  compare: [number, number];
  file: string;
  onClose: () => void;
}) {
  const trpc = useTRPC();
  const theme = useEffectiveTheme();
  const idOf = (n: number) => versions.find((v) => v.version === n)?.id ?? '';
  const left = useQuery({ ...trpc.environments.version.queryOptions({ teamId, versionId: idOf(compare[0]) }), enabled: !!idOf(compare[0]) });
  const right = useQuery({ ...trpc.environments.version.queryOptions({ teamId, versionId: idOf(compare[1]) }), enabled: !!idOf(compare[1]) });
  if (left.isLoadingError || right.isLoadingError) return <ErrorNote error={left.error ?? right.error} />;
  if (!left.data || !right.data) return <Loading label="Loading both versions…" />;
  const a = versionFiles(left.data);
  const b = versionFiles(right.data);
  const changed = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((f) => a[f] !== b[f]);
  return (
    <div className="compare">
      <div className="compare-bar">
        <strong>
          v{compare[0]} → v{compare[1]}
        </strong>
        <span className="muted small">{changed.length === 0 ? 'no file differs' : `changed: ${changed.join(', ')}`}</span>
        <span className="spacer" />
        <button type="button" className="btn-small" onClick={onClose}>
          Close comparison
        </button>
      </div>
      <DiffEditor
        original={a[file] ?? ''}
        modified={b[file] ?? ''}
        originalModelPath={`inmemory://compare/a/${file}`}
        modifiedModelPath={`inmemory://compare/b/${file}`}
        language={file.endsWith('.json') ? 'json' : 'typescript'}
        theme={theme === 'dark' ? 'vs-dark' : 'vs'}
        options={{ readOnly: true, renderSideBySide: true, automaticLayout: true, minimap: { enabled: false }, fontSize: 13 }}
      />
    </div>
  );
}

/** A Markdown file (the README) is edited above its rendering; other files take the whole pane. */
function MarkdownBeside({ text, children }: { text: string | null; children: ReactNode }) {
  if (text === null) return <>{children}</>;
  return (
    <Group orientation="vertical">
      <Panel defaultSize="55" minSize="20">
        {children}
      </Panel>
      <Separator className="separator separator-horizontal" />
      <Panel defaultSize="45" minSize="15" className="markdown-preview">
        <section aria-label="Preview" className="side-body">
          <p className="pane-title">Preview</p>
          <UntrustedMarkdown>{text}</UntrustedMarkdown>
        </section>
      </Panel>
    </Group>
  );
}
