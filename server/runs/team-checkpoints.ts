import type { Db } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import type { CheckpointKind, JobKind, JobState } from '../db/generated/prisma/enums';

/** A checkpoint as the team's checkpoints page lists it, with the run that wrote it. */
export interface TeamCheckpoint {
  id: string;
  kind: CheckpointKind;
  step: number;
  bytes: number;
  isAdapter: boolean;
  /** Its base name, when the team has named it (server/runs/bases.ts). */
  name: string | null;
  createdAt: Date;
  /** The job that wrote it (null once that job is deleted), and the environment it trained on. */
  job: { id: string; kind: JobKind; state: JobState; environmentName: string | null; environmentVersion: number | null } | null;
}

interface Row {
  id: string;
  kind: CheckpointKind;
  step: number;
  bytes: bigint;
  isAdapter: boolean;
  name: string | null;
  createdAt: Date;
  jobId: string | null;
  jobKind: JobKind | null;
  jobState: JobState | null;
  environmentName: string | null;
  environmentVersion: number | null;
}

/**
 * A page of the team's checkpoints, newest first, and how many there are (of `kind`, and written by
 * runs on `environmentId`, when given: the play console and the launcher offer an environment's own).
 */
export async function listTeamCheckpoints(
  db: Db,
  teamId: string,
  opts: { kind?: CheckpointKind; environmentId?: string; offset: number; limit: number },
): Promise<{ checkpoints: TeamCheckpoint[]; total: number }> {
  const conditions = [
    Prisma.sql`c."teamId" = ${teamId}`,
    ...(opts.kind ? [Prisma.sql`c.kind::text = ${opts.kind}`] : []),
    ...(opts.environmentId
      ? [Prisma.sql`EXISTS (SELECT 1 FROM "Job" ej JOIN "EnvironmentVersion" ev ON ev.id = ej.config->>'environmentVersionId'
                     WHERE ej.id = c."jobId" AND ev."environmentId" = ${opts.environmentId})`]
      : []),
  ];
  const filter = Prisma.join(conditions, ' AND ');
  const [rows, [{ total }]] = await Promise.all([
    db.$queryRaw<Row[]>`
      SELECT c.id, c.kind::text AS kind, c.step, c.bytes, c."isAdapter", c.name, c."createdAt",
             j.id AS "jobId", j.kind::text AS "jobKind", j.state::text AS "jobState",
             e.name AS "environmentName", v.version AS "environmentVersion"
        FROM "Checkpoint" c
        LEFT JOIN "Job" j ON j.id = c."jobId"
        LEFT JOIN "EnvironmentVersion" v ON v.id = j.config->>'environmentVersionId'
        LEFT JOIN "Environment" e ON e.id = v."environmentId" AND e."teamId" = c."teamId"
       WHERE ${filter}
       ORDER BY c."createdAt" DESC, c.id DESC
      OFFSET ${opts.offset} LIMIT ${opts.limit}`,
    db.$queryRaw<Array<{ total: number }>>`SELECT count(*)::int AS total FROM "Checkpoint" c WHERE ${filter}`,
  ]);
  return {
    total,
    checkpoints: rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      step: r.step,
      bytes: Number(r.bytes),
      isAdapter: r.isAdapter,
      name: r.name,
      createdAt: r.createdAt,
      job:
        r.jobId && r.jobKind && r.jobState
          ? { id: r.jobId, kind: r.jobKind, state: r.jobState, environmentName: r.environmentName, environmentVersion: r.environmentVersion }
          : null,
    })),
  };
}
