import { TRPCError } from '@trpc/server';
import type { Db } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import type { CheckpointKind, JobKind, JobState } from '../db/generated/prisma/enums';
import { recordEvent } from '../scheduler/transitions';
import { isPlainObject } from '../../sdk/user-json';

// Bases: checkpoints a team has named ("gomoku-9x9-bc", "arith-base") to start other runs from.
// The name is the only thing stored; the card (how the base was trained, how it evaluated) is
// read from the job that wrote it and the evals run on it, so it cannot drift from what happened.

/** How the base was made, from the writing job's stored (resolved) config. */
export interface BaseTraining {
  jobId: string;
  kind: JobKind;
  state: JobState;
  algorithm: string | null;
  steps: number | null;
  environment: { name: string; version: number } | null;
  dataset: { name: string; version: number } | null;
  /** The checkpoint the job started from (config.baseCheckpointId), with its name if it is a base. */
  startedFrom: { checkpointId: string; name: string | null } | null;
  /** A TRAIN job's supervised warm start (training.warmStart): from which bot or dataset, how many steps. */
  warmStart: { from: 'bot' | 'dataset'; bot?: string; steps: number | null } | null;
}

/** The latest finished EVAL job on the base: what it played against and every `eval/` figure it reported. */
export interface BaseEval {
  jobId: string;
  finishedAt: Date | null;
  against: string;
  /** `eval/score`, `eval/win_rate`, `eval/wins`… (sdk/live.ts's catalogue), as the eval job streamed them. */
  metrics: Record<string, number>;
}

export interface Base {
  id: string;
  name: string;
  kind: CheckpointKind;
  step: number;
  isAdapter: boolean;
  createdAt: Date;
  /** Null once the job that wrote it is deleted (the checkpoint stays). */
  training: BaseTraining | null;
  eval: BaseEval | null;
}

const str = (v: unknown) => (typeof v === 'string' ? v : null);
const num = (v: unknown) => (typeof v === 'number' ? v : null);

/** "bot", "random", "bot expert", "checkpoint <id>": an eval's `against`, as a card says it. */
function againstText(against: unknown): string {
  if (typeof against === 'string') return against;
  if (isPlainObject(against) && typeof against.bot === 'string') return `bot ${against.bot}`;
  if (isPlainObject(against) && typeof against.checkpointId === 'string') return `checkpoint ${against.checkpointId}`;
  return 'bot';
}

/** The team's bases, by name (just the one named `name`, when given), each with its card. */
export async function listBases(db: Db, teamId: string, opts: { name?: string } = {}): Promise<Base[]> {
  const rows = await db.checkpoint.findMany({
    where: { teamId, name: opts.name ?? { not: null } },
    orderBy: { name: 'asc' },
    // Bases are named by hand or by a template's run: a team has a handful, not pages of them.
    take: 500,
    select: { id: true, name: true, kind: true, step: true, isAdapter: true, createdAt: true, job: { select: { id: true, kind: true, state: true, config: true } } },
  });
  if (rows.length === 0) return [];
  const configs = rows.map((r) => (isPlainObject(r.job?.config) ? r.job.config : {}));
  const ids = (field: string) => [...new Set(configs.map((c) => str(c[field])).filter((v): v is string => v !== null))];

  // Everything the cards name, one query each, scoped to the team (a config names only the team's own, but a card must never show another team's).
  const [envVersions, datasetVersions, parents, evals] = await Promise.all([
    db.environmentVersion.findMany({ where: { id: { in: ids('environmentVersionId') }, environment: { teamId } }, select: { id: true, version: true, environment: { select: { name: true } } } }),
    db.datasetVersion.findMany({ where: { id: { in: ids('datasetVersionId') }, dataset: { teamId } }, select: { id: true, version: true, dataset: { select: { name: true } } } }),
    db.checkpoint.findMany({ where: { id: { in: ids('baseCheckpointId') }, teamId }, select: { id: true, name: true } }),
    db.job.findMany({
      where: { teamId, kind: 'EVAL', state: 'SUCCEEDED', OR: rows.map((r) => ({ config: { path: ['checkpointId'], equals: r.id } })) },
      orderBy: [{ finishedAt: 'desc' }, { id: 'desc' }],
      select: { id: true, config: true, finishedAt: true },
    }),
  ]);
  const envOf = new Map(envVersions.map((v) => [v.id, { name: v.environment.name, version: v.version }]));
  const datasetOf = new Map(datasetVersions.map((v) => [v.id, { name: v.dataset.name, version: v.version }]));
  const parentName = new Map(parents.map((p) => [p.id, p.name]));
  // Newest first, so the first eval seen for a checkpoint is its latest.
  const evalOf = new Map<string, (typeof evals)[number]>();
  for (const e of evals) {
    const id = isPlainObject(e.config) ? str(e.config.checkpointId) : null;
    if (id && !evalOf.has(id)) evalOf.set(id, e);
  }
  const evalJobIds = [...evalOf.values()].map((e) => e.id);
  // An eval streams its figures once (step 0); the last value per key stands should one repeat.
  const points = evalJobIds.length === 0 ? [] : await db.$queryRaw<Array<{ jobId: string; key: string; value: number }>>`
    SELECT DISTINCT ON ("jobId", key) "jobId", key, value FROM "MetricPoint"
     WHERE "jobId" IN (${Prisma.join(evalJobIds)}) AND key LIKE 'eval/%'
     ORDER BY "jobId", key, step DESC`;
  const metricsOf = new Map<string, Record<string, number>>();
  for (const p of points) metricsOf.set(p.jobId, { ...metricsOf.get(p.jobId), [p.key]: p.value });

  return rows.map((r, i) => {
    const config = configs[i];
    const training = isPlainObject(config.training) ? config.training : {};
    const warm = isPlainObject(training.warmStart) ? training.warmStart : null;
    const baseId = str(config.baseCheckpointId);
    const envId = str(config.environmentVersionId);
    const datasetId = str(config.datasetVersionId);
    const evalJob = evalOf.get(r.id);
    return {
      id: r.id,
      name: r.name!,
      kind: r.kind,
      step: r.step,
      isAdapter: r.isAdapter,
      createdAt: r.createdAt,
      training: r.job
        ? {
            jobId: r.job.id,
            kind: r.job.kind,
            state: r.job.state,
            algorithm: str(training.algorithm),
            steps: num(training.steps),
            environment: (envId && envOf.get(envId)) || null,
            dataset: (datasetId && datasetOf.get(datasetId)) || null,
            startedFrom: baseId ? { checkpointId: baseId, name: parentName.get(baseId) ?? null } : null,
            warmStart: warm && (warm.from === 'bot' || warm.from === 'dataset') ? { from: warm.from, ...(typeof warm.bot === 'string' ? { bot: warm.bot } : {}), steps: num(warm.steps) } : null,
          }
        : null,
      eval: evalJob
        ? { jobId: evalJob.id, finishedAt: evalJob.finishedAt, against: againstText(isPlainObject(evalJob.config) ? evalJob.config.against : undefined), metrics: metricsOf.get(evalJob.id) ?? {} }
        : null,
    };
  });
}

/** Why `name` cannot be given: it is another checkpoint's, named with the run that wrote that one. */
async function takenBy(db: Db, teamId: string, name: string, exceptId: string): Promise<string | null> {
  const other = await db.checkpoint.findFirst({ where: { teamId, name, id: { not: exceptId } }, select: { id: true, step: true, jobId: true } });
  if (!other) return null;
  return `The base name "${name}" is taken by step ${other.step} of ${other.jobId ? `run ${other.jobId}` : 'a deleted run'} (checkpoint ${other.id}): clear it there or choose another name`;
}

const isUniqueViolation = (e: unknown) => e instanceof Prisma.PrismaClientKnownRequestError && e.code === 'P2002';

/**
 * Names one of the team's checkpoints (null clears its name). Another team's checkpoint is
 * NOT_FOUND; a name the team already gave another checkpoint is a CONFLICT that says which.
 */
export async function nameCheckpoint(db: Db, teamId: string, checkpointId: string, name: string | null): Promise<{ id: string; name: string | null; previous: string | null }> {
  const checkpoint = await db.checkpoint.findFirst({ where: { id: checkpointId, teamId }, select: { id: true, name: true } });
  if (!checkpoint) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such checkpoint' });
  if (name !== null) {
    const taken = await takenBy(db, teamId, name, checkpoint.id);
    if (taken) throw new TRPCError({ code: 'CONFLICT', message: taken });
  }
  try {
    await db.checkpoint.update({ where: { id: checkpoint.id }, data: { name } });
  } catch (e) {
    // Named elsewhere between the check and the write: the unique index decides, and the answer is the same.
    if (name !== null && isUniqueViolation(e)) throw new TRPCError({ code: 'CONFLICT', message: (await takenBy(db, teamId, name, checkpoint.id)) ?? `The base name "${name}" is taken` });
    throw e;
  }
  return { id: checkpoint.id, name, previous: checkpoint.name };
}

/**
 * A SUCCEEDED job's `saveAs` (sdk/job-config.ts): its newest sampler checkpoint, the kind the
 * launcher and `--from` start runs from, becomes the team's base of that name. The run has ended
 * well, so nothing here may fail it: a name already taken (a template run a second time), or no
 * sampler checkpoint, is written to the job's events and the run stays SUCCEEDED.
 */
export async function applySaveAs(db: Db, jobId: string): Promise<{ named: string } | { skipped: string } | null> {
  const job = await db.job.findUnique({ where: { id: jobId }, select: { id: true, teamId: true, kind: true, state: true, config: true } });
  const saveAs = job && isPlainObject(job.config) ? str(job.config.saveAs) : null;
  if (!job || !saveAs || job.state !== 'SUCCEEDED' || (job.kind !== 'TRAIN' && job.kind !== 'SFT')) return null;
  const note = (reason: string) => recordEvent(db, job.id, 'SUCCEEDED', 'SUCCEEDED', { type: 'SYSTEM' }, reason);
  const newest = await db.checkpoint.findFirst({ where: { jobId: job.id, kind: 'SAMPLER' }, orderBy: [{ step: 'desc' }, { createdAt: 'desc' }], select: { id: true, step: true, name: true } });
  if (!newest) {
    const reason = `not saved as base "${saveAs}": the run wrote no sampler checkpoint`;
    await note(reason);
    return { skipped: reason };
  }
  if (newest.name === saveAs) return { named: saveAs };
  try {
    await nameCheckpoint(db, job.teamId, newest.id, saveAs);
  } catch (e) {
    if (!(e instanceof TRPCError) || e.code !== 'CONFLICT') throw e;
    const reason = `not saved as base: ${e.message.replace(/: clear it there or choose another name$/, '')}; name step ${newest.step} (checkpoint ${newest.id}) from the checkpoints page to keep it`;
    await note(reason);
    return { skipped: reason };
  }
  await note(`saved step ${newest.step} (checkpoint ${newest.id}) as base "${saveAs}"`);
  return { named: saveAs };
}
