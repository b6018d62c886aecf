// Where a watcher of a run's live stream catches up from after a reconnect: runs.since's `after`.
//
// Live batches (socket.io event "stream") carry their position (attempt, seq) and `stored`, the
// seq of that attempt up to which everything is committed. They are published before they
// commit, and a worker may have a few in flight, so a batch the watcher saw can be followed by
// one that failed to commit and will come again later: the cursor is `stored`, extended through
// the positions the watcher holds right after it. A catch-up from there sends nothing the
// watcher already has, except after such a failure, and misses nothing.

export interface StreamPosition {
  attempt: number;
  seq: number;
}

export class StreamCursor {
  private attempt = -1;
  private stored = -1;
  /** Seqs of `attempt` above `stored` the watcher holds. */
  private readonly held = new Set<number>();

  /** A live batch (with `stored`) or a batch a catch-up returned rows of (without). */
  saw(p: { attempt: number; seq: number; stored?: number }): void {
    if (p.attempt < this.attempt) return;
    if (p.attempt > this.attempt) {
      this.attempt = p.attempt;
      this.stored = -1;
      this.held.clear();
    }
    if (p.stored !== undefined && p.stored > this.stored) {
      this.stored = p.stored;
      for (const s of this.held) if (s <= this.stored) this.held.delete(s);
    }
    if (p.seq > this.stored) this.held.add(p.seq);
  }

  /** runs.since's `after`: the watcher holds everything up to it (undefined: nothing yet). */
  get after(): StreamPosition | undefined {
    if (this.attempt < 0) return undefined;
    let seq = this.stored;
    while (this.held.has(seq + 1)) seq++;
    return { attempt: this.attempt, seq };
  }
}
