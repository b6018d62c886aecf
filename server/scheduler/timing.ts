/** How often a worker heartbeats; a lease lasts several heartbeats so one lost request is harmless. */
export const HEARTBEAT_SECONDS = 5;
export const LEASE_SECONDS = 30;
/** A preempted attempt has this long to checkpoint and stop before it is ended for it. */
export const PREEMPT_GRACE_SECONDS = 60;
/** Backoff before a job whose lease was lost is placed again: base × 2^(attempt − 1), capped. */
export const REQUEUE_BACKOFF_BASE_SECONDS = 5;
export const REQUEUE_BACKOFF_MAX_SECONDS = 300;
/** The loop's fallback tick; NOTIFY wakes it sooner. */
export const TICK_MS = 1_000;

export function requeueBackoffMs(attempt: number): number {
  return Math.min(REQUEUE_BACKOFF_MAX_SECONDS, REQUEUE_BACKOFF_BASE_SECONDS * 2 ** Math.max(0, attempt - 1)) * 1000;
}
