import { z } from 'zod';
import { createTournament, listTournaments, tournamentTable } from '../../tournaments/tournaments';
import { router, teamProcedure } from '../trpc';

const id = z.string().min(1).max(64);

/** Checkpoint tournaments (server/tournaments/tournaments.ts): pairings as EVAL jobs, an Elo table from their games. */
export const tournamentsRouter = router({
  /** Queues one EVAL job a pairing of the players; answers the tournament's id. */
  create: teamProcedure('MEMBER')
    .input(
      z.object({
        environmentVersionId: id,
        players: z.array(z.union([z.object({ checkpointId: id }), z.object({ bot: id })])).min(2).max(16),
        /** Games of each pairing; seats alternate, so an even number gives each side as many. */
        gamesPerPair: z.number().int().min(1).max(1_000).default(10),
        seed: z.number().int().min(0).default(0),
      }),
    )
    .mutation(({ ctx, input }) => createTournament(ctx, input)),

  list: teamProcedure('VIEWER').query(({ ctx }) => listTournaments(ctx.db, ctx.membership.teamId)),

  /** The Elo table (95% intervals) and the pairings' scores so far, each pairing with its job. */
  get: teamProcedure('VIEWER')
    .input(z.object({ tournamentId: id }))
    .query(({ ctx, input }) => tournamentTable(ctx.db, ctx.membership.teamId, input.tournamentId)),
});
