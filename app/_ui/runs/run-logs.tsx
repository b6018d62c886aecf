'use client';
import { useQuery } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import { Fragment, useDeferredValue, useEffect, useMemo, useRef, useState } from 'react';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading } from '../components';
import { useUrlState } from '../url-state';
import { LIVE_REFETCH_MS } from './run-state';

interface LogRow {
  id: bigint;
  attempt: number;
  level: string;
  message: string;
  time: Date;
}

/** Lines kept on the page; older ones drop off the top (the CLI's `whetstone logs` has them all). */
const KEPT = 2_000;
const PAGE = 1_000;

const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });

/** The level filter: every line, or a level and the ones above it. */
const LEVELS: Array<{ id: string; label: string; shows: string[] }> = [
  { id: '', label: 'all levels', shows: [] },
  { id: 'info', label: 'info and above', shows: ['INFO', 'WARN', 'ERROR'] },
  { id: 'warn', label: 'warnings and errors', shows: ['WARN', 'ERROR'] },
  { id: 'error', label: 'errors', shows: ['ERROR'] },
];

/** A line's height in pixels (one line of text; longer messages wrap and are measured). */
const LINE_PX = 19;

/** The message with each case-insensitive occurrence of `q` marked. */
function Marked({ text, q }: { text: string; q: string }) {
  if (!q) return <>{text}</>;
  const lower = text.toLowerCase();
  const parts: Array<{ text: string; hit: boolean }> = [];
  let from = 0;
  for (let at = lower.indexOf(q); at >= 0; at = lower.indexOf(q, at + q.length)) {
    if (at > from) parts.push({ text: text.slice(from, at), hit: false });
    parts.push({ text: text.slice(at, at + q.length), hit: true });
    from = at + q.length;
  }
  parts.push({ text: text.slice(from), hit: false });
  return (
    <>
      {parts.map((p, i) => (
        <Fragment key={i}>{p.hit ? <mark>{p.text}</mark> : p.text}</Fragment>
      ))}
    </>
  );
}

/**
 * The run's log, read forward from the last line seen: a full page asks for the next at once,
 * and while the run is active the page asks again every few seconds for new lines. Lines are
 * the job's own output, rendered as text.
 */
export function RunLogs({ teamId, jobId, active }: { teamId: string; jobId: string; active: boolean }) {
  const trpc = useTRPC();
  const [lines, setLines] = useState<LogRow[]>([]);
  const [seen, setSeen] = useState(0);
  const [after, setAfter] = useState<bigint | null>(null);
  // The newest line taken: a page delivered twice (a remount, a refetch) adds nothing twice.
  const newest = useRef<bigint>(-1n);
  const page = useQuery({
    ...trpc.runs.logs.queryOptions({ teamId, jobId, afterId: after === null ? undefined : String(after), limit: PAGE }),
    refetchInterval: active ? LIVE_REFETCH_MS : false,
  });
  useEffect(() => {
    const rows = (page.data ?? []).filter((r) => r.id > newest.current);
    if (rows.length === 0) return;
    newest.current = rows[rows.length - 1].id;
    setLines((old) => [...old, ...rows].slice(-KEPT));
    setSeen((n) => n + rows.length);
    setAfter(newest.current);
  }, [page.data]);

  // Search and level, in the URL (a link shows the same lines); the search applies as typing
  // settles, so a long log never holds a keystroke back.
  const { params, set } = useUrlState();
  const [typed, setTyped] = useState(params.get('logq') ?? '');
  const q = useDeferredValue(typed.trim().toLowerCase());
  const level = LEVELS.find((l) => l.id === params.get('level')) ?? LEVELS[0];
  const shown = useMemo(
    () => lines.filter((l) => (level.shows.length === 0 || level.shows.includes(l.level.toUpperCase())) && (!q || l.message.toLowerCase().includes(q))),
    [lines, level, q],
  );

  // Only the lines in view are in the page (a busy run writes thousands).
  const box = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({ count: shown.length, getScrollElement: () => box.current, estimateSize: () => LINE_PX, overscan: 20 });
  // Follow the end while the reader is at the end.
  const atEnd = useRef(true);
  useEffect(() => {
    if (atEnd.current && shown.length > 0) virtual.scrollToIndex(shown.length - 1, { align: 'end' });
  }, [shown.length, virtual]);

  const dropped = seen - lines.length;
  if (page.isLoadingError) return <ErrorNote error={page.error} />;
  if (lines.length === 0) return page.isPending ? <Loading label="Loading the log…" /> : <p className="muted">{active ? 'No log lines yet: they appear here as the run writes them.' : 'This run wrote no log lines.'}</p>;
  const filtering = q !== '' || level.shows.length > 0;
  return (
    <>
      <form className="chart-toolbar" role="search" aria-label="Search the log" onSubmit={(e) => e.preventDefault()}>
        <label className="inline-form small">
          <span className="muted">Search</span>
          <input
            type="search"
            value={typed}
            placeholder="checkpoint, error…"
            aria-label="Search the log"
            onChange={(e) => {
              setTyped(e.target.value);
              set({ logq: e.target.value || null }, { replace: true });
            }}
          />
        </label>
        <label className="inline-form small">
          <span className="muted">Level</span>
          <select value={level.id} aria-label="Log level" onChange={(e) => set({ level: e.target.value || null }, { replace: true })}>
            {LEVELS.map((l) => (
              <option key={l.id} value={l.id}>
                {l.label}
              </option>
            ))}
          </select>
        </label>
        <span className="muted small" role="status">
          {filtering ? `${shown.length} of ${lines.length} lines` : `${lines.length} lines`}
        </span>
      </form>
      {dropped > 0 ? <p className="muted small">The first {dropped} lines are not shown here; <code>npx whetstone logs {jobId}</code> prints them all.</p> : null}
      {shown.length === 0 ? (
        <p className="muted">No line matches{q ? ` “${typed.trim()}”` : ''}{level.shows.length ? ` at ${level.label}` : ''}.</p>
      ) : (
        <div
          ref={box}
          className="logs"
          tabIndex={0}
          role="log"
          aria-label="Log"
          onScroll={(e) => {
            const el = e.currentTarget;
            atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
          }}
        >
          <div style={{ height: virtual.getTotalSize(), position: 'relative' }}>
            {virtual.getVirtualItems().map((row) => {
              const l = shown[row.index];
              return (
                <div
                  key={String(l.id)}
                  data-index={row.index}
                  ref={virtual.measureElement}
                  className={`log-line log-${l.level.toLowerCase()}`}
                  style={{ position: 'absolute', top: 0, left: 0, right: 0, transform: `translateY(${row.start}px)` }}
                >
                  <span className="log-time">{clock.format(new Date(l.time))}</span>
                  <span className="log-level">{l.level}</span>
                  <span className="log-message">
                    <Marked text={l.message} q={q} />
                  </span>
                </div>
              );
            })}
          </div>
        </div>
      )}
    </>
  );
}
