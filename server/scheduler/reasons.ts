// The words of the planner's decisions (plan.ts): every reason a placement, a preemption or a
// waiting job shows in the UI, built here from plain values so that plan.ts reads as rules and
// the wording can change without touching them. Each reason starts with what happens
// ("placed", "preempting", "waiting: …").
import { NEVER } from './pool';
import type { PlanQueuedJob } from './types';

/** What a job asks for, as the words describe it. */
type Request = Pick<PlanQueuedJob, 'deviceCount' | 'deviceKind' | 'memoryBytes'>;
/** A job as other jobs' reasons name it. */
interface JobRef {
  id: string;
  priority: number;
}

// A round words thousands of waiting reasons, most with one of a few expected starts.
const isoCache = new Map<number, string>();
function iso(ms: number): string {
  let text = isoCache.get(ms);
  if (text === undefined) {
    if (isoCache.size >= 4_096) isoCache.clear();
    isoCache.set(ms, (text = new Date(ms).toISOString()));
  }
  return text;
}

function bytes(n: number): string {
  const gib = n / 2 ** 30;
  if (gib >= 1) return `${Number.isInteger(gib) ? gib : gib.toFixed(1)} GiB`;
  return `${Math.ceil(n / 2 ** 20)} MiB`;
}

/** "2 free CUDA devices with ≥ 16 GiB each" */
function describe(job: Request, adjective = ''): string {
  const n = job.deviceCount;
  const words = [String(n), adjective, job.deviceKind ?? '', n === 1 ? 'device' : 'devices'].filter(Boolean);
  const memory = job.memoryBytes > 0 ? ` with ≥ ${bytes(job.memoryBytes)}${n === 1 ? '' : ' each'}` : '';
  return `${words.join(' ')}${memory}`;
}

function jobWords(job: JobRef): string {
  return `job ${job.id} (priority ${job.priority})`;
}

// ── waiting before any placement is tried (rule 3) ──

export const backoffReason = (notBefore: number): string => `waiting: backing off after a lost lease until ${iso(notBefore)}`;

export const exceedsQuotaReason = (deviceCount: number, quota: number): string =>
  `waiting: needs ${deviceCount} devices, more than the team quota of ${quota}`;

export function noWorkerReason(job: Request, draining: string[] = []): string {
  const reason = `waiting: no online worker available to this team has ${describe(job)}`;
  if (draining.length === 0) return reason;
  const workers = draining.map((name) => `worker ${name}`).join(', ');
  return `${reason}; ${workers} would, but ${draining.length === 1 ? 'is' : 'are'} draining (an admin can resume ${draining.length === 1 ? 'it' : 'them'})`;
}

// ── placed (rules 4 and 5) ──

export function placedReason(
  placement: { workerId: string; kind: string; deviceIndexes: number[] },
  /** The waiting job this placement went ahead of (a backfill), if any. */
  ahead: JobRef | null,
): string {
  const { workerId, kind, deviceIndexes } = placement;
  return (
    `placed on worker ${workerId} (${kind} ${deviceIndexes.length === 1 ? 'device' : 'devices'} ${deviceIndexes.join(', ')})` +
    (ahead ? `, backfilled ahead of ${jobWords(ahead)} without delaying it` : '')
  );
}

// ── waiting for a reservation, the quota or capacity (rule 5) ──

/** A reservation a job waits behind, as the words need it. */
export type BlockingReservation =
  | { type: 'devices'; job: JobRef & { deviceCount: number }; kind: string; workerId: string; startAt: number }
  | { type: 'quota'; job: JobRef & { deviceCount: number }; startAt: number };

/**
 * Waiting behind `r`, a reservation of a job ahead in the order; `earliest` is the earliest that
 * job could start (every job without a limit ending now), after which this one could run now.
 */
export function behindReason(job: JobRef, r: BlockingReservation, earliest: number, now: number): string {
  const who = r.job.priority > job.priority ? `higher-priority ${jobWords(r.job)}` : `${jobWords(r.job)}, ahead in fair share`;
  const plural = r.job.deviceCount === 1 ? '' : 's';
  const what =
    r.type === 'devices'
      ? `which has ${r.job.deviceCount} ${r.kind} device${plural} on worker ${r.workerId} reserved ` +
        (r.startAt === NEVER ? 'until they free up' : `from ${iso(r.startAt)}`)
      : `which waits for the team quota (${r.startAt === NEVER ? 'start unknown' : `expected ${iso(r.startAt)}`})`;
  const hint = earliest > now ? `; it could run now if it ended by ${iso(earliest)}` : '';
  return `waiting: behind ${who}, ${what}${hint}`;
}

export const quotaReachedReason = (quota: number, held: number, deviceCount: number): string =>
  `waiting: team quota of ${quota} devices reached (${held} in use, this job needs ${deviceCount})`;

export function noCapacityReason(job: Request, reservation: { startAt: number; workerId: string }): string {
  const when =
    reservation.startAt === NEVER
      ? 'start unknown: jobs without a time limit hold the devices it needs'
      : `expected to start by ${iso(reservation.startAt)} on worker ${reservation.workerId}`;
  return `waiting: no online worker has ${describe(job, 'free')}; ${when}`;
}

// ── preempting (rule 6) ──

/** Why a victim is stopped; `borrowing` says whether its team is over its quota or fair share. */
export function preemptionReason(victim: JobRef, forJob: JobRef, team: { id: string; borrowing: 'quota' | 'share' | null }): string {
  const why = team.borrowing === null ? '' : `; team ${team.id} is over its ${team.borrowing === 'quota' ? 'quota' : 'fair share'}`;
  return `preempting ${jobWords(victim)} for ${jobWords(forJob)}${why}`;
}

/** Why the preemptor waits: its victims, or devices (or quota) already being freed by stopping jobs. */
export function preemptingReason(workerId: string, victims: JobRef[], stoppingJobIds: string[]): string {
  const where = `on worker ${workerId}`;
  if (victims.length > 0) return `waiting: preempting ${victims.map(jobWords).join(', ')} to make room ${where}`;
  if (stoppingJobIds.length > 0) {
    return `waiting: devices ${where} are being freed (${stoppingJobIds.map((id) => `job ${id}`).join(', ')} stopping); they are held for this job`;
  }
  return `waiting: team quota is being freed by stopping jobs; devices ${where} are held for this job`;
}
