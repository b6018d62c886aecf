import { randomInt } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import type { BlobStore } from '../../blobs/store';
import type { Db } from '../../db/client';
import { environmentSourceInput } from '../../environments/source-input';
import type { Json } from '../../../sdk/environment/schema';
import { type AutoplayResult, playedMatch, type PlayOpponent } from '../../../sdk/play';
import { storedJson } from '../../db/stored-json';
import { playCheckpoints } from '../../play/play-checkpoints';
import { PlayRefused } from '../../play/play-sessions';
import { resolvePlaySource } from '../../play/play-source';
import type { Role } from '../../db/generated/prisma/enums';
import { checkSecretUse } from '../../secrets/secret-use';
import { router, teamProcedure } from '../trpc';

/**
 * The play console: a member acts as an agent of an environment (a saved version, or the editor's
 * draft) in the real sandbox, turn by turn, with bots or the team's checkpoints in the other
 * seats; or watches one episode played by a bot or a checkpoint. Sessions run in play processes
 * apart from the server (server/play/); the answers' types are sdk/play.ts's.
 */

const id = z.string().min(1).max(64);
const agent = z.string().min(1).max(100);
const opponent = z.union([z.strictObject({ bot: z.string().min(1).max(100) }), z.strictObject({ random: z.literal(true) }), z.strictObject({ checkpointId: id })]);
const source = z.union([z.strictObject({ versionId: id }), z.strictObject({ draft: z.strictObject(environmentSourceInput) })]);
const episode = {
  source,
  /** Who plays the seats other than the user's (or the policy's); each unnamed one gets the environment's first bot. */
  opponents: z.record(agent, opponent).optional(),
  /** Seeds the episode and picks the task (or the dataset row); random when left out, and returned. */
  seed: z.number().int().min(0).max(2 ** 31 - 1).optional(),
  /** For data-dependent environments: the dataset version whose rows are the tasks (default: a template's own). */
  datasetVersionId: id.optional(),
};

/**
 * The episode's seed (random when not given) and what it plays: the source, its turn limit, the
 * dataset row, and the checkpoints that play seats (the team's own, with their bytes).
 */
async function episodeOf(ctx: { db: Db; deps: { blobs: BlobStore; secretsKey: Buffer }; membership: { teamId: string; role: Role } }, input: z.infer<z.ZodObject<typeof episode>>, policy?: PlayOpponent) {
  const seed = input.seed ?? randomInt(2 ** 31 - 1);
  const teamId = ctx.membership.teamId;
  // A draft's headers may send the team's secrets: to servers an admin vouched for (a saved version's are).
  if ('draft' in input.source) await checkSecretUse(ctx.db, teamId, ctx.membership.role, input.source.draft.manifest);
  const checkpoints = await playCheckpoints(ctx.db, ctx.deps.blobs, teamId, [...Object.values(input.opponents ?? {}), ...(policy ? [policy] : [])]);
  const found = await resolvePlaySource({ db: ctx.db, blobs: ctx.deps.blobs, secretsKey: ctx.deps.secretsKey }, teamId, { ...input, seed });
  const request = { source: found.source, ...(found.served ? { served: found.served } : {}), maxTurns: found.maxTurns, sampling: found.sampling, seed, row: found.row, opponents: input.opponents, checkpoints };
  return { teamId, environment: found.environment, request };
}

/** A position in a recorded match to continue from: its first `move` moves. */
const branchPoint = { matchId: id, move: z.number().int().min(0).max(10_000) };

/**
 * What a branch from a team's match plays: the version the match was played on, its moves up to
 * `move` (as played), its task, and the parent the continuation is kept as a variation of.
 */
async function branchFrom(db: Db, teamId: string, point: { matchId: string; move: number }) {
  const match = await db.match.findFirst({ where: { id: point.matchId, teamId }, select: { id: true, moves: true, result: true, environmentVersionId: true, job: { select: { config: true } } } });
  if (!match) throw new TRPCError({ code: 'NOT_FOUND', message: 'No such match' });
  const fromJob = (match.job?.config as { environmentVersionId?: unknown } | null)?.environmentVersionId;
  const versionId = match.environmentVersionId ?? (typeof fromJob === 'string' ? fromJob : null);
  if (!versionId) throw new TRPCError({ code: 'BAD_REQUEST', message: 'This match was played on unsaved code: there is no version to continue it on' });
  const moves = Array.isArray(match.moves) ? (match.moves as Array<{ text?: unknown }>) : [];
  if (point.move > moves.length) throw new TRPCError({ code: 'BAD_REQUEST', message: `move: the match has ${moves.length} moves` });
  const task = (match.result as { task?: Json } | null)?.task;
  return { versionId, prefix: moves.slice(0, point.move).map((m) => String(m.text ?? '')), task, parent: { matchId: match.id, move: point.move } };
}

/**
 * A game of several agents played here is kept as a match of the team (no job, no training
 * step), so that it lists with the others and opens in the replay. A draft's game has no version.
 */
async function saveMatch(db: Db, teamId: string, versionId: string | null, game: Parameters<typeof playedMatch>[0], parent?: { matchId: string; move: number }): Promise<string> {
  const played = playedMatch(game);
  const record = parent ? { ...played, result: { ...played.result, parent } } : played;
  const version = versionId ? await db.environmentVersion.findFirst({ where: { id: versionId, environment: { teamId } }, select: { id: true } }) : null;
  const match = await db.match.create({
    data: { teamId, environmentVersionId: version?.id ?? null, agents: storedJson(record.agents), moves: storedJson(record.moves), result: storedJson(record.result), winner: record.winner },
    select: { id: true },
  });
  return match.id;
}

/** An autoplayed episode as a game to keep: its turns with who played each seat. */
function autoplayedGame(result: Extract<AutoplayResult, { ok: true }>): Parameters<typeof playedMatch>[0] {
  const t = result.transcript;
  const turns = t.turns.map((turn) => ({ ...turn, by: result.players[turn.agent] ?? { random: true as const }, terminated: false, truncated: false, next: null }));
  return { agents: result.description.agents, players: result.players, turns, endReason: t.endReason, returns: t.totalRewards, task: t.task, error: t.error?.message ?? null };
}

/** Refusals of the play sessions, as tRPC errors with their reason. */
function refusals<T>(work: Promise<T>): Promise<T> {
  return work.catch((error: unknown) => {
    if (error instanceof PlayRefused) throw new TRPCError({ code: error.code, message: error.message });
    throw error;
  });
}

export const playRouter = router({
  /**
   * Opens a session: the user's seat (the first agent by default), its first observation, and what
   * bots played before it. With `from`, the session starts from a recorded match's position (its
   * moves up to `from.move` played first, on its task, on the version it was played on) and the
   * finished game is kept as a variation of that match.
   */
  open: teamProcedure('MEMBER')
    .input(z.object({ ...episode, seat: agent.optional(), from: z.strictObject(branchPoint).optional() }))
    .mutation(async ({ ctx, input }) => {
      const from = input.from ? await branchFrom(ctx.db, ctx.membership.teamId, input.from) : null;
      if (from && !('versionId' in input.source && input.source.versionId === from.versionId)) {
        throw new TRPCError({ code: 'BAD_REQUEST', message: `source: a branch plays on the version its match was played on (${from.versionId})` });
      }
      return refusals(
        episodeOf(ctx, input).then(({ teamId, environment, request }) =>
          ctx.deps.play.open(
            teamId,
            ctx.user.id,
            environment,
            { ...request, seat: input.seat, ...(from ? { prefix: from.prefix, ...(from.task !== undefined ? { task: from.task } : {}) } : {}) },
            'versionId' in input.source ? input.source.versionId : null,
            from?.parent,
          ),
        ),
      );
    }),

  /** Plays the user's action; the bots answer up to the user's next turn. An error of the environment ends the session. */
  step: teamProcedure('MEMBER')
    .input(z.object({ sessionId: id, action: z.string().max(100_000) }))
    .mutation(async ({ ctx, input }) => {
      const { result, finished } = await refusals(ctx.deps.play.step(ctx.membership.teamId, ctx.user.id, input.sessionId, input.action));
      if (!finished) return result;
      return { ...result, matchId: await saveMatch(ctx.db, ctx.membership.teamId, finished.versionId, finished.game, finished.parent) };
    }),

  close: teamProcedure('MEMBER')
    .input(z.object({ sessionId: id }))
    .mutation(({ ctx, input }) => refusals(ctx.deps.play.close(ctx.membership.teamId, ctx.user.id, input.sessionId))),

  /** "Let the base policy play": one whole episode, every seat not in `opponents` played by `policy` (a bot, random play or a checkpoint). */
  autoplay: teamProcedure('MEMBER')
    .input(z.object({ ...episode, policy: opponent }))
    .mutation(({ ctx, input }) =>
      refusals(
        episodeOf(ctx, input, input.policy).then(async ({ teamId, request }) => {
          const result = await ctx.deps.play.autoplay(teamId, { ...request, policy: input.policy });
          if (!result.ok || result.description.agents.length < 2 || result.transcript.turns.length === 0) return result;
          return { ...result, matchId: await saveMatch(ctx.db, teamId, 'versionId' in input.source ? input.source.versionId : null, autoplayedGame(result)) };
        }),
      ),
    ),

  /**
   * "Branch from here": a recorded match replayed up to `move` (its moves as played, on its task),
   * then continued by `policy` and `opponents`; kept as a new match whose result names its parent
   * and the move it branched at (the replay lists it as a variation).
   */
  branch: teamProcedure('MEMBER')
    .input(z.object({ ...branchPoint, policy: opponent, opponents: z.record(agent, opponent).optional(), seed: z.number().int().min(0).max(2 ** 31 - 1).optional() }))
    .mutation(async ({ ctx, input }) => {
      const teamId = ctx.membership.teamId;
      const from = await branchFrom(ctx.db, teamId, input);
      const episode = { source: { versionId: from.versionId }, opponents: input.opponents, seed: input.seed };
      return refusals(
        episodeOf(ctx, episode, input.policy).then(async ({ request }) => {
          const result = await ctx.deps.play.autoplay(teamId, { ...request, policy: input.policy, prefix: from.prefix, ...(from.task !== undefined ? { task: from.task } : {}) });
          if (!result.ok || result.transcript.turns.length === 0) return result;
          return { ...result, matchId: await saveMatch(ctx.db, teamId, from.versionId, autoplayedGame(result), from.parent) };
        }),
      );
    }),

  /** The caller's open sessions in the team (a reloaded page finds its session here). */
  list: teamProcedure('MEMBER').query(({ ctx }) => ctx.deps.play.list(ctx.membership.teamId, ctx.user.id)),
});
