// Group commit: calls that arrive while a statement is under way wait for it and then go together
// as the next one. An idle server runs each call at once (no timer, no added latency); a busy one
// pays one round trip for many callers instead of one each, as PostgreSQL's own WAL group commit
// does for flushes. Many workers starting and finishing attempts at once is the case it is for.

/** Runs a batch of inputs as one statement; answers one output per input, in order. */
type BatchRunner<I, O> = (inputs: I[]) => Promise<O[]>;

/**
 * `run` for one input at a time, with inputs that arrive while a batch runs sent as the next
 * batch (at most `maxBatch` per statement). A failed batch fails each of its callers.
 */
export function groupCommit<I, O>(run: BatchRunner<I, O>, maxBatch = 200): (input: I) => Promise<O> {
  let waiting: Array<{ input: I; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  let running = false;
  const next = async () => {
    running = true;
    while (waiting.length > 0) {
      const batch = waiting.slice(0, maxBatch);
      waiting = waiting.slice(batch.length);
      try {
        const outputs = await run(batch.map((w) => w.input));
        batch.forEach((w, i) => w.resolve(outputs[i]));
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    running = false;
  };
  return (input) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ input, resolve, reject });
      if (!running) void next();
    });
}
