'use client';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading } from '../components';
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

  // Follow the end while the reader is at the end.
  const box = useRef<HTMLPreElement>(null);
  const atEnd = useRef(true);
  useEffect(() => {
    if (box.current && atEnd.current) box.current.scrollTop = box.current.scrollHeight;
  }, [lines]);

  const dropped = seen - lines.length;
  if (page.isLoadingError) return <ErrorNote error={page.error} />;
  if (lines.length === 0) return page.isPending ? <Loading label="Loading the log…" /> : <p className="muted">{active ? 'No log lines yet: they appear here as the run writes them.' : 'This run wrote no log lines.'}</p>;
  return (
    <>
      {dropped > 0 ? <p className="muted small">The first {dropped} lines are not shown here; <code>npx whetstone logs {jobId}</code> prints them all.</p> : null}
      <pre
        ref={box}
        className="logs"
        tabIndex={0}
        aria-label="Log"
        onScroll={(e) => {
          const el = e.currentTarget;
          atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {lines.map((l) => (
          <span key={String(l.id)} className={`log-line log-${l.level.toLowerCase()}`}>
            <span className="log-time">{clock.format(new Date(l.time))}</span>
            <span className="log-level">{l.level}</span>
            <span className="log-message">{l.message}</span>
          </span>
        ))}
      </pre>
    </>
  );
}
