import { randomInt } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import type { BlobStore } from '../../blobs/store';
import type { Db } from '../../db/client';
import { environmentSourceInput } from '../../environments/source-input';
import { PlayRefused } from '../../play/play-sessions';
import { resolvePlaySource } from '../../play/play-source';
import { router, teamProcedure } from '../trpc';

/**
 * The play console: a member acts as an agent of an environment (a saved version, or the editor's
 * draft) in the real sandbox, turn by turn, with bots in the other seats; or watches one episode
 * played by a bot. Sessions run in play processes apart from the server (server/play/); the
 * answers' types are sdk/play.ts's.
 */

const id = z.string().min(1).max(64);
const agent = z.string().min(1).max(100);
const opponent = z.union([z.strictObject({ bot: z.string().min(1).max(100) }), z.strictObject({ random: z.literal(true) })]);
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

/** The episode's seed (random when not given) and what it plays: the source, its turn limit, the dataset row. */
async function episodeOf(ctx: { db: Db; deps: { blobs: BlobStore }; membership: { teamId: string } }, input: z.infer<z.ZodObject<typeof episode>>) {
  const seed = input.seed ?? randomInt(2 ** 31 - 1);
  const found = await resolvePlaySource(ctx.db, ctx.deps.blobs, ctx.membership.teamId, { ...input, seed });
  return { teamId: ctx.membership.teamId, environment: found.environment, request: { source: found.source, maxTurns: found.maxTurns, seed, row: found.row, opponents: input.opponents } };
}

/** Refusals of the play sessions, as tRPC errors with their reason. */
function refusals<T>(work: Promise<T>): Promise<T> {
  return work.catch((error: unknown) => {
    if (error instanceof PlayRefused) throw new TRPCError({ code: error.code, message: error.message });
    throw error;
  });
}

export const playRouter = router({
  /** Opens a session: the user's seat (the first agent by default), its first observation, and what bots played before it. */
  open: teamProcedure('MEMBER')
    .input(z.object({ ...episode, seat: agent.optional() }))
    .mutation(({ ctx, input }) =>
      refusals(
        episodeOf(ctx, input).then(({ teamId, environment, request }) => ctx.deps.play.open(teamId, ctx.user.id, environment, { ...request, seat: input.seat })),
      ),
    ),

  /** Plays the user's action; the bots answer up to the user's next turn. An error of the environment ends the session. */
  step: teamProcedure('MEMBER')
    .input(z.object({ sessionId: id, action: z.string().max(100_000) }))
    .mutation(({ ctx, input }) => refusals(ctx.deps.play.step(ctx.membership.teamId, ctx.user.id, input.sessionId, input.action))),

  close: teamProcedure('MEMBER')
    .input(z.object({ sessionId: id }))
    .mutation(({ ctx, input }) => refusals(ctx.deps.play.close(ctx.membership.teamId, ctx.user.id, input.sessionId))),

  /** "Let the base policy play": one whole episode, every seat not in `opponents` played by `policy`. */
  autoplay: teamProcedure('MEMBER')
    .input(z.object({ ...episode, policy: opponent }))
    .mutation(({ ctx, input }) =>
      refusals(episodeOf(ctx, input).then(({ teamId, request }) => ctx.deps.play.autoplay(teamId, { ...request, policy: input.policy }))),
    ),

  /** The caller's open sessions in the team (a reloaded page finds its session here). */
  list: teamProcedure('MEMBER').query(({ ctx }) => ctx.deps.play.list(ctx.membership.teamId, ctx.user.id)),
});
