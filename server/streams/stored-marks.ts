// What this server knows is stored of each attempt's stream, for watchers' catch-up cursors.
//
// A worker may have several batches in flight (the daemon keeps a few over its socket), and each
// is published before it commits. A watcher that catches up "after the last position it saw"
// could then skip a batch that failed to commit, was published, and is only stored when the
// worker sends it again later. So every published batch carries `stored`: the seq of its attempt
// up to which every batch that reached this server is committed (or was a replay, or refused).
// Watchers catch up after the highest (attempt, stored) they saw; what comes back that they
// already had live (at most the batches that were in flight) they keep once, by key.
//
// A batch refused as invalid (400) is not settled (the request may not be about the attempt it
// names): a daemon drops it, and its attempt's `stored` stays behind it, which only makes its
// watchers' catch-ups send again some of what they had (they keep it once).
//
// Batches before the first one this server sees of an attempt count as stored: a worker sends
// an attempt's batches in order and, after a failure, sends again from the oldest unanswered one
// (gpu-worker/daemon.ts), so those were answered, which happens only once they are committed.

interface Marks {
  /** The lowest seq not settled yet (committed, replayed or refused): everything before it is. */
  next: number;
  /** Settled seqs above `next`. */
  ahead: Set<number>;
}

const LIMIT = 10_000;
const attempts = new Map<string, Marks>();

function marks(attemptId: string, seq: number): Marks {
  let m = attempts.get(attemptId);
  if (!m) {
    // Oldest first: a finished attempt's marks are no longer asked for.
    if (attempts.size >= LIMIT) attempts.delete(attempts.keys().next().value!);
    m = { next: seq, ahead: new Set() };
    attempts.set(attemptId, m);
  }
  return m;
}

/**
 * The seq of an attempt up to which every batch is stored, to publish with a batch of it. A
 * batch that is published but not committed, or failed before it was published and is to be
 * sent again, holds it back.
 */
export function stored(attemptId: string, seq: number): number {
  return marks(attemptId, seq).next - 1;
}

/** A batch committed, was a replay of a stored one, was refused, or is not stored (boards). */
export function settled(attemptId: string, seq: number): void {
  const m = marks(attemptId, seq);
  if (seq < m.next) return;
  m.ahead.add(seq);
  while (m.ahead.delete(m.next)) m.next++;
}
