import type { Command } from '../args';
import { EXIT } from '../errors';
import { table } from '../format';
import { call, type CommandContext } from './context';
import { environmentOf } from './eval';

type TournamentCommand = Extract<Command, { name: 'tournament' }>;

const DONE = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
const POLL_MS = 2000;

/**
 * `whetstone tournament a b random --games 4`: every checkpoint against every other player as
 * EVAL jobs (server/tournaments), then the Elo table once every pairing has ended. A word that
 * names one of the environment's bots is that bot; any other is a checkpoint id.
 */
export async function tournamentCommand(ctx: CommandContext, cmd: TournamentCommand): Promise<number> {
  const conn = await ctx.connect();
  const bots = new Set<string>();
  // Without --env, the first player must be a checkpoint: its run names the environment.
  const environmentVersionId = cmd.env ?? (await environmentOf(conn, cmd.players[0]));
  const version = await call(conn, () => conn.api.environments.version.query({ teamId: conn.teamId, versionId: environmentVersionId }));
  for (const b of (version.validation as { description?: { bots?: string[] } } | null)?.description?.bots ?? []) bots.add(b);
  const players = cmd.players.map((p) => (bots.has(p) ? { bot: p } : { checkpointId: p }));
  const created = await call(conn, () => conn.api.tournaments.create.mutate({ teamId: conn.teamId, environmentVersionId, players, gamesPerPair: cmd.games }));
  ctx.out.line(`tournament ${created.tournamentId}: ${created.jobIds.length} pairings of ${cmd.games} games (jobs ${created.jobIds.join(', ')})`);
  if (!cmd.watch) {
    ctx.out.document(created);
    return EXIT.OK;
  }
  let shown = -1;
  for (;;) {
    const t = await call(conn, () => conn.api.tournaments.get.query({ teamId: conn.teamId, tournamentId: created.tournamentId }));
    const done = t.pairings.filter((p) => DONE.includes(p.state)).length;
    if (done !== shown) ctx.out.note(`${done} of ${t.pairings.length} pairings done`);
    shown = done;
    if (done === t.pairings.length) {
      ctx.out.line(
        table(
          ['#', 'player', 'elo', '95%', 'score', 'games'],
          t.players.map((p, i) => [String(i + 1), p.label, String(Math.round(p.elo)), p.ci95 === null || !Number.isFinite(p.ci95) ? '—' : `±${Math.round(p.ci95)}`, String(p.score), String(p.games)]),
        ),
      );
      ctx.out.document(t);
      return t.pairings.every((p) => p.state === 'SUCCEEDED') ? EXIT.OK : EXIT.JOB_FAILED;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
