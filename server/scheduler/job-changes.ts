// "Job X changed" is a hint: live job lists and run pages refetch the job when it comes. A job
// placed, started and finished within moments needs one hint, not three, and a pool finishing
// hundreds of jobs a second needs a few messages, not hundreds: every socket.io emit is a NOTIFY
// through the PostgreSQL adapter. So hints are coalesced over a short window, per job and then
// per team (one message to the team's room and the runs' rooms, naming every job that changed),
// shared by the scheduler and the worker API of one process.

const JOB_CHANGE_WINDOW_MS = 250;
/** Jobs per message: keeps a message's rooms and ids within one NOTIFY payload (8,000 bytes). */
export const JOB_CHANGE_MAX_JOBS = 50;

/** Sends one message about jobs of one team. */
type JobsChanged = (teamId: string, jobIds: string[]) => void;
/** Notes that a job changed. */
export type JobChanged = (teamId: string, jobId: string) => void;

const coalesced = new WeakMap<JobsChanged, JobChanged>();

/** Hints for `emit`, at most once per job per window (the first hint starts the window; never delayed longer). */
export function coalesceJobChanges(emit: JobsChanged, windowMs = JOB_CHANGE_WINDOW_MS): JobChanged {
  const known = coalesced.get(emit);
  if (known) return known;
  let pending = new Map<string, Set<string>>();
  const flush = () => {
    const batch = pending;
    pending = new Map();
    for (const [teamId, jobs] of batch) {
      const ids = [...jobs];
      for (let i = 0; i < ids.length; i += JOB_CHANGE_MAX_JOBS) emit(teamId, ids.slice(i, i + JOB_CHANGE_MAX_JOBS));
    }
  };
  const wrapped: JobChanged = (teamId, jobId) => {
    if (pending.size === 0) setTimeout(flush, windowMs).unref();
    let jobs = pending.get(teamId);
    if (!jobs) pending.set(teamId, (jobs = new Set()));
    jobs.add(jobId);
  };
  coalesced.set(emit, wrapped);
  return wrapped;
}
