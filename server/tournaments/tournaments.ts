/**
 * Checkpoint tournaments: every checkpoint and bot a user picks plays every other (bots do not play
 * each other: an evaluation evaluates a checkpoint), a number of games a pair with the seats
 * alternated, each pairing one EVAL job through the scheduler like any other. A tournament is no
 * table of its own: its jobs carry its id in their config (`tournamentId`), and its table is
 * computed from their recorded matches whenever asked, so it fills in as games finish.
 */
import { randomUUID } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import { eloRatings, type PairResult, type Rating } from '../../sdk/elo';
import type { DryRunReport } from '../../sdk/dry-run-report';
import type { Db } from '../db/client';
import { Prisma } from '../db/generated/prisma/client';
import type { JobState } from '../db/generated/prisma/enums';
import type { TeamMemberContext } from '../jobs/context';
import { submitJob } from '../jobs/submit.handler';

export type TournamentPlayer = { checkpointId: string } | { bot: string };

/** A player's key in tables: `checkpoint:<id>` or `bot:<name>`. */
const playerKey = (p: TournamentPlayer) => ('checkpointId' in p ? `checkpoint:${p.checkpointId}` : `bot:${p.bot}`);

export interface TournamentRequest {
  environmentVersionId: string;
  players: TournamentPlayer[];
  gamesPerPair: number;
  seed: number;
}

/** Checks the request against the team's data and queues one EVAL job a pairing. */
export async function createTournament(ctx: TeamMemberContext, input: TournamentRequest): Promise<{ tournamentId: string; jobIds: string[] }> {
  const teamId = ctx.membership.teamId;
  const version = await ctx.db.environmentVersion.findFirst({
    where: { id: input.environmentVersionId, environment: { teamId } },
    select: { validation: true, environment: { select: { name: true } } },
  });
  if (!version) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such environment version in this team' });
  const description = (version.validation as Partial<DryRunReport> | null)?.description;
  if (!description || description.agents.length !== 2) {
    throw new TRPCError({ code: 'BAD_REQUEST', message: `${version.environment.name} is not a two-player game: a tournament pairs players of a game with two seats` });
  }
  const keys = input.players.map(playerKey);
  const twice = keys.find((k, i) => keys.indexOf(k) !== i);
  if (twice) throw new TRPCError({ code: 'BAD_REQUEST', message: `players: ${twice} is named twice` });
  for (const p of input.players) {
    if ('bot' in p && !description.bots.includes(p.bot)) {
      throw new TRPCError({ code: 'BAD_REQUEST', message: `players: ${version.environment.name} has no bot "${p.bot}"; its bots are ${description.bots.join(', ') || 'none'}` });
    }
  }
  const checkpoints = input.players.filter((p): p is { checkpointId: string } => 'checkpointId' in p);
  if (checkpoints.length === 0) throw new TRPCError({ code: 'BAD_REQUEST', message: 'players: name at least one checkpoint (bots do not play each other here)' });
  const found = await ctx.db.checkpoint.findMany({ where: { teamId, id: { in: checkpoints.map((c) => c.checkpointId) } }, select: { id: true } });
  const missing = checkpoints.find((c) => !found.some((f) => f.id === c.checkpointId));
  if (missing) throw new TRPCError({ code: 'NOT_FOUND', message: `players: no checkpoint ${missing.checkpointId} in this team` });

  // Every pair with a checkpoint in it; the checkpoint is the one evaluated.
  const pairs: Array<[{ checkpointId: string }, TournamentPlayer]> = [];
  input.players.forEach((a, i) =>
    input.players.slice(i + 1).forEach((b) => {
      if ('checkpointId' in a) pairs.push([a, b]);
      else if ('checkpointId' in b) pairs.push([b, a]);
    }),
  );
  const tournamentId = randomUUID();
  const jobIds: string[] = [];
  for (const [a, b] of pairs) {
    const config = {
      checkpointId: a.checkpointId,
      environmentVersionId: input.environmentVersionId,
      against: 'checkpointId' in b ? { checkpointId: b.checkpointId } : { bot: b.bot },
      games: input.gamesPerPair,
      seed: input.seed,
      tournamentId,
    };
    const { job } = await submitJob({ ctx, input: { kind: 'EVAL', priority: 0, deviceCount: 1, memoryBytes: 0, maxAttempts: 3, config } });
    jobIds.push(job.id);
  }
  return { tournamentId, jobIds };
}

export interface TournamentSummary {
  id: string;
  environment: { name: string; version: number } | null;
  pairings: number;
  finished: number;
  games: number;
  createdAt: Date;
}

/** The team's tournaments, newest first. */
export async function listTournaments(db: Db, teamId: string): Promise<TournamentSummary[]> {
  const rows = await db.$queryRaw<Array<{ id: string; name: string | null; version: number | null; pairings: number; finished: number; games: number; createdAt: Date }>>`
    SELECT j.config->>'tournamentId' AS id, min(e.name) AS name, min(v.version) AS version,
           count(*)::int AS pairings,
           count(*) FILTER (WHERE j.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))::int AS finished,
           sum((j.config->>'games')::int)::int AS games, min(j."createdAt") AS "createdAt"
      FROM "Job" j
      LEFT JOIN "EnvironmentVersion" v ON v.id = j.config->>'environmentVersionId'
      LEFT JOIN "Environment" e ON e.id = v."environmentId" AND e."teamId" = j."teamId"
     WHERE j."teamId" = ${teamId} AND j.kind = 'EVAL' AND j.config ? 'tournamentId'
     GROUP BY j.config->>'tournamentId'
     ORDER BY min(j."createdAt") DESC
     LIMIT 200`;
  return rows.map((r) => ({ id: r.id, environment: r.name !== null && r.version !== null ? { name: r.name, version: r.version } : null, pairings: r.pairings, finished: r.finished, games: r.games, createdAt: r.createdAt }));
}

export interface TournamentPairing {
  jobId: string;
  state: JobState;
  a: string;
  b: string;
  aWins: number;
  bWins: number;
  draws: number;
  /** Games that ended in an error: not counted. */
  errors: number;
  games: number;
}

export interface TournamentTable {
  id: string;
  environment: { id: string; name: string; versionId: string; version: number } | null;
  gamesPerPair: number;
  createdAt: Date;
  players: Array<Rating & { key: string; label: string }>;
  pairings: TournamentPairing[];
}

/** The tournament's pairings with their scores so far, and the Elo table they give. */
export async function tournamentTable(db: Db, teamId: string, tournamentId: string): Promise<TournamentTable> {
  const jobs = await db.job.findMany({
    where: { teamId, kind: 'EVAL', config: { path: ['tournamentId'], equals: tournamentId } },
    select: { id: true, state: true, config: true, createdAt: true },
    orderBy: { createdAt: 'asc' },
  });
  if (jobs.length === 0) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such tournament in this team' });
  type Config = { checkpointId: string; environmentVersionId: string; against: 'bot' | 'random' | { bot: string } | { checkpointId: string }; games: number };
  const configs = jobs.map((j) => j.config as unknown as Config);
  const opponentKey = (against: Config['against']) =>
    typeof against === 'string' ? `bot:${against}` : 'bot' in against ? `bot:${against.bot}` : `checkpoint:${against.checkpointId}`;

  // Per job: games won by the evaluated checkpoint's seat ("policy"), by the other, drawn.
  const counts = await db.$queryRaw<Array<{ jobId: string; mine: number; theirs: number; draws: number; errors: number }>>`
    SELECT m."jobId",
           count(*) FILTER (WHERE m.result->>'error' IS NULL AND m.winner IS NOT NULL AND EXISTS (
             SELECT 1 FROM jsonb_array_elements(m.agents) a WHERE a->>'name' = m.winner AND a->>'policy' = 'policy'))::int AS mine,
           count(*) FILTER (WHERE m.result->>'error' IS NULL AND m.winner IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM jsonb_array_elements(m.agents) a WHERE a->>'name' = m.winner AND a->>'policy' = 'policy'))::int AS theirs,
           count(*) FILTER (WHERE m.result->>'error' IS NULL AND m.winner IS NULL)::int AS draws,
           count(*) FILTER (WHERE m.result->>'error' IS NOT NULL)::int AS errors
      FROM "Match" m
     WHERE m."teamId" = ${teamId} AND m."jobId" IN (${Prisma.join(jobs.map((j) => j.id))})
     GROUP BY m."jobId"`;
  const pairings: TournamentPairing[] = jobs.map((j, i) => {
    const c = counts.find((x) => x.jobId === j.id);
    return {
      jobId: j.id,
      state: j.state,
      a: `checkpoint:${configs[i].checkpointId}`,
      b: opponentKey(configs[i].against),
      aWins: c?.mine ?? 0,
      bWins: c?.theirs ?? 0,
      draws: c?.draws ?? 0,
      errors: c?.errors ?? 0,
      games: configs[i].games,
    };
  });

  const keys = [...new Set(pairings.flatMap((p) => [p.a, p.b]))];
  const checkpointIds = keys.filter((k) => k.startsWith('checkpoint:')).map((k) => k.slice('checkpoint:'.length));
  const checkpoints = await db.checkpoint.findMany({ where: { teamId, id: { in: checkpointIds } }, select: { id: true, step: true, jobId: true } });
  const label = (key: string) => {
    if (key.startsWith('bot:')) return `${key.slice(4)} (bot)`;
    const c = checkpoints.find((x) => `checkpoint:${x.id}` === key);
    return c ? `step ${c.step} of run ${c.jobId ?? 'deleted'}` : key.slice('checkpoint:'.length);
  };
  const results: PairResult[] = pairings.map((p) => ({ a: p.a, b: p.b, aWins: p.aWins, bWins: p.bWins, draws: p.draws }));
  const ratings = eloRatings(keys, results).map((r) => ({ ...r, key: r.player, label: label(r.player) }));

  const version = await db.environmentVersion.findFirst({
    where: { id: configs[0].environmentVersionId, environment: { teamId } },
    select: { id: true, version: true, environment: { select: { id: true, name: true } } },
  });
  return {
    id: tournamentId,
    environment: version ? { id: version.environment.id, name: version.environment.name, versionId: version.id, version: version.version } : null,
    gamesPerPair: configs[0].games,
    createdAt: jobs[0].createdAt,
    players: ratings.sort((x, y) => y.elo - x.elo),
    pairings,
  };
}
