/**
 * How long a lease lasts. WHETSTONE_LEASE_SECONDS (read once, at start) shortens it, for the
 * reliability tests (server/reliability/) that kill and pause workers; production keeps 30 s.
 */
export const LEASE_SECONDS = leaseSecondsFrom(process.env.WHETSTONE_LEASE_SECONDS);
/** How often a worker heartbeats; a lease lasts several heartbeats so one lost request is harmless. */
export const HEARTBEAT_SECONDS = Math.min(5, LEASE_SECONDS / 4);
/** A preempted attempt has this long to checkpoint and stop before it is ended for it. */
export const PREEMPT_GRACE_SECONDS = 60;
/** Backoff before a job whose lease was lost is placed again: base × 2^(attempt − 1), capped. */
const REQUEUE_BACKOFF_BASE_SECONDS = 5;
const REQUEUE_BACKOFF_MAX_SECONDS = 300;
/** The loop's fallback tick; NOTIFY wakes it sooner. */
export const TICK_MS = 1_000;
/**
 * Lease expiry, preemption grace and time limits are checked at most this often: rounds woken by
 * every finish come many a second under load, and the check then found nothing almost always.
 */
export const HOUSEKEEPING_MS = 1_000;
/**
 * While jobs wait, rounds woken back to back start at least this far apart (loop.ts), so that one
 * round places what several finishes freed. Since a round pushes what its placement statement
 * returned, 10 ms drained faster than 25 (a freed worker waits for the next round) in alternated
 * runs of bench:scheduler.
 */
export const BUSY_ROUND_MS = 10;
/**
 * A worker counts as online while its heartbeat is this recent: one lease (30 s by default). A
 * worker silent for a whole lease has lost its leases, and must not be given new work either.
 */
export const WORKER_ONLINE_WINDOW_MS = LEASE_SECONDS * 1000;

function leaseSecondsFrom(value: string | undefined): number {
  if (value === undefined || value === '') return 30;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 1 || seconds > 3600) throw new Error(`WHETSTONE_LEASE_SECONDS=${JSON.stringify(value)}: must be a number of seconds from 1 to 3600`);
  return seconds;
}

export function requeueBackoffMs(attempt: number): number {
  return Math.min(REQUEUE_BACKOFF_MAX_SECONDS, REQUEUE_BACKOFF_BASE_SECONDS * 2 ** Math.max(0, attempt - 1)) * 1000;
}
