import { formatDateTime } from '../format';
import { RunStateBadge } from './run-parts';

export interface JobEventRow {
  id: bigint | number | string;
  fromState: string | null;
  toState: string;
  actorType: string;
  reason: string;
  at: Date | string;
}

const ACTORS: Record<string, string> = { USER: 'a user', SCHEDULER: 'the scheduler', WORKER: 'the worker', SYSTEM: 'the server' };

/** Every state change of the job, newest first, with who made it and why (DESIGN.md: job lifecycle). */
export function RunEvents({ events }: { events: JobEventRow[] }) {
  if (events.length === 0) return <p className="muted">No state changes yet.</p>;
  return (
    <ol className="events" aria-label="State changes, newest first">
      {[...events].reverse().map((e) => (
        <li key={String(e.id)}>
          <time dateTime={new Date(e.at).toISOString()}>{formatDateTime(e.at)}</time>
          <div>
            {e.fromState ? (
              <>
                <RunStateBadge state={e.fromState} live={false} /> →{' '}
              </>
            ) : null}
            <RunStateBadge state={e.toState} live={false} /> <span className="muted small">by {ACTORS[e.actorType] ?? e.actorType.toLowerCase()}</span>
            <div className="small">{e.reason}</div>
          </div>
        </li>
      ))}
    </ol>
  );
}
