import type { Db } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import type { JobKind } from '../db/generated/prisma/enums';

/** A game as the team's matches page lists it: who played, how it ended, how long it was. */
export interface TeamMatch {
  id: string;
  step: number | null;
  /** The seats in order, each with what played it ("learner", "snapshot:<checkpoint>", "bot", "random"). */
  players: Array<{ name: string; policy: string }>;
  winner: string | null;
  /** Why the game ended ("terminated", "truncated", "context", "error"…), when the record says. */
  reason: string | null;
  /** The error that ended it, if one did. */
  error: string | null;
  /** Each seat's return. */
  rewards: Record<string, number>;
  moves: number;
  createdAt: Date;
  job: { id: string; kind: JobKind } | null;
  environment: { name: string; version: number } | null;
}

interface Row {
  id: string;
  step: number | null;
  agents: unknown;
  result: unknown;
  winner: string | null;
  moves: number;
  createdAt: Date;
  jobId: string | null;
  jobKind: JobKind | null;
  environmentName: string | null;
  environmentVersion: number | null;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

// agents and result are JSON written by the runner; read them defensively, as any stored JSON.
function players(agents: unknown): TeamMatch['players'] {
  if (!Array.isArray(agents)) return [];
  return agents.filter(isRecord).map((a) => ({ name: String(a.name ?? '?'), policy: String(a.policy ?? '?') }));
}

// The runner writes { endReason, returns, info, error? } (gpu-worker/job-runner/emit.ts's
// matchItem); older records { reason, rewards }.
function outcome(result: unknown): Pick<TeamMatch, 'reason' | 'error' | 'rewards'> {
  if (!isRecord(result)) return { reason: null, error: null, rewards: {} };
  const rewards: Record<string, number> = {};
  const given = isRecord(result.returns) ? result.returns : isRecord(result.rewards) ? result.rewards : {};
  for (const [agent, value] of Object.entries(given)) if (typeof value === 'number') rewards[agent] = value;
  const reason = result.endReason ?? result.reason;
  return { reason: typeof reason === 'string' ? reason : null, error: typeof result.error === 'string' ? result.error : null, rewards };
}

/** What the matches lists filter by (all optional; together they all apply). */
export interface MatchFilter {
  jobId?: string;
  /** "win": someone won; "draw": no winner and no error; "error": ended by an error. */
  result?: 'win' | 'draw' | 'error';
  /** Text in what played a seat ("scripted", "checkpoint:", "user"…), case-insensitive. */
  player?: string;
  /** Games a checkpoint played: as a seat, as the evaluated one, or as an evaluation's opponent. */
  checkpointId?: string;
  minMoves?: number;
  maxMoves?: number;
}

/** A page of the team's matches (filtered), newest first, and how many there are. */
export async function listTeamMatches(db: Db, teamId: string, opts: MatchFilter & { offset: number; limit: number }): Promise<{ matches: TeamMatch[]; total: number }> {
  const moves = Prisma.sql`(CASE WHEN jsonb_typeof(m.moves) = 'array' THEN jsonb_array_length(m.moves) ELSE 0 END)`;
  const conditions = [Prisma.sql`m."teamId" = ${teamId}`];
  if (opts.jobId) conditions.push(Prisma.sql`m."jobId" = ${opts.jobId}`);
  if (opts.result === 'win') conditions.push(Prisma.sql`m.winner IS NOT NULL`);
  if (opts.result === 'draw') conditions.push(Prisma.sql`m.winner IS NULL AND m.result->>'error' IS NULL`);
  if (opts.result === 'error') conditions.push(Prisma.sql`m.result->>'error' IS NOT NULL`);
  if (opts.player) {
    const like = `%${opts.player.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    conditions.push(Prisma.sql`EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(m.agents) = 'array' THEN m.agents ELSE '[]'::jsonb END) a WHERE a->>'policy' ILIKE ${like})`);
  }
  if (opts.checkpointId) {
    const id = opts.checkpointId;
    conditions.push(Prisma.sql`(EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(m.agents) = 'array' THEN m.agents ELSE '[]'::jsonb END) a WHERE a->>'policy' IN (${`checkpoint:${id}`}, ${`snapshot:${id}`}))
      OR m."jobId" IN (SELECT id FROM "Job" WHERE "teamId" = ${teamId} AND kind = 'EVAL' AND (config->>'checkpointId' = ${id} OR config->'against'->>'checkpointId' = ${id})))`);
  }
  if (opts.minMoves !== undefined) conditions.push(Prisma.sql`${moves} >= ${opts.minMoves}`);
  if (opts.maxMoves !== undefined) conditions.push(Prisma.sql`${moves} <= ${opts.maxMoves}`);
  const filter = Prisma.join(conditions, ' AND ');
  const [rows, [{ total }]] = await Promise.all([
    db.$queryRaw<Row[]>`
      SELECT m.id, m.step, m.agents, m.result, m.winner, m."createdAt",
             CASE WHEN jsonb_typeof(m.moves) = 'array' THEN jsonb_array_length(m.moves) ELSE 0 END AS moves,
             j.id AS "jobId", j.kind::text AS "jobKind", e.name AS "environmentName", v.version AS "environmentVersion"
        FROM "Match" m
        LEFT JOIN "Job" j ON j.id = m."jobId"
        LEFT JOIN "EnvironmentVersion" v ON v.id = coalesce(m."environmentVersionId", j.config->>'environmentVersionId')
        LEFT JOIN "Environment" e ON e.id = v."environmentId" AND e."teamId" = m."teamId"
       WHERE ${filter}
       ORDER BY m."createdAt" DESC, m.id DESC
      OFFSET ${opts.offset} LIMIT ${opts.limit}`,
    db.$queryRaw<Array<{ total: number }>>`SELECT count(*)::int AS total FROM "Match" m WHERE ${filter}`,
  ]);
  return {
    total,
    matches: rows.map((r) => ({
      id: r.id,
      step: r.step,
      players: players(r.agents),
      winner: r.winner,
      ...outcome(r.result),
      moves: r.moves,
      createdAt: r.createdAt,
      job: r.jobId && r.jobKind ? { id: r.jobId, kind: r.jobKind } : null,
      environment: r.environmentName && r.environmentVersion !== null ? { name: r.environmentName, version: r.environmentVersion } : null,
    })),
  };
}
