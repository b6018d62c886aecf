// "Job X changed" is a hint: live job lists and run pages refetch the job when it comes. A job
// placed, started and finished within moments needs one hint, not three, and each hint is two
// socket.io emits, which the PostgreSQL adapter turns into NOTIFYs. So hints are coalesced per job
// over a short window, shared by the scheduler and the worker API of one process.

export const JOB_CHANGE_WINDOW_MS = 250;

type JobChanged = (teamId: string, jobId: string) => void;

const coalesced = new WeakMap<JobChanged, JobChanged>();

/** `emit`, at most once per job per window (the first hint starts the window; never delayed longer). */
export function coalesceJobChanges(emit: JobChanged, windowMs = JOB_CHANGE_WINDOW_MS): JobChanged {
  const known = coalesced.get(emit);
  if (known) return known;
  let pending = new Map<string, string>();
  const flush = () => {
    const batch = pending;
    pending = new Map();
    for (const [jobId, teamId] of batch) emit(teamId, jobId);
  };
  const wrapped: JobChanged = (teamId, jobId) => {
    if (pending.size === 0) setTimeout(flush, windowMs).unref();
    pending.set(jobId, teamId);
  };
  coalesced.set(emit, wrapped);
  return wrapped;
}
