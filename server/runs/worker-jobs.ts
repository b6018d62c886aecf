import type { Db } from '../db/client';
import type { JobKind, JobState } from '../db/generated/prisma/enums';

/**
 * What each worker the team can use is running now: the team's own jobs by name, and other
 * teams' jobs on the shared pool only as the devices they hold (their ids are not this team's
 * business).
 */
export interface WorkerJob {
  workerId: string;
  deviceIndexes: number[];
  since: Date;
  /** Null for another team's job. */
  job: { id: string; kind: JobKind; state: JobState; ownerName: string } | null;
}

export async function workerJobs(db: Db, teamId: string): Promise<WorkerJob[]> {
  const attempts = await db.jobAttempt.findMany({
    where: { state: 'ACTIVE', worker: { OR: [{ teamId }, { teamId: null }], state: { not: 'REVOKED' } } },
    orderBy: { startedAt: 'asc' },
    select: {
      workerId: true,
      deviceIndexes: true,
      startedAt: true,
      job: { select: { id: true, teamId: true, kind: true, state: true, owner: { select: { name: true } } } },
    },
  });
  return attempts.flatMap((a) =>
    a.workerId
      ? [{
          workerId: a.workerId,
          deviceIndexes: a.deviceIndexes,
          since: a.startedAt,
          job: a.job.teamId === teamId ? { id: a.job.id, kind: a.job.kind, state: a.job.state, ownerName: a.job.owner.name } : null,
        }]
      : [],
  );
}
