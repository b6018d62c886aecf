'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { GitBranch } from 'lucide-react';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import type { EnvironmentDescription } from '../../../sdk/dry-run-report';
import { useTRPC } from '../../trpc';
import { ErrorNote } from '../components';
import { opponentOf, PlayerOptions, PlayPanel } from '../editor/play-panel';
import { useEnvironmentCheckpoints } from '../environment-checkpoints';

/**
 * "Branch from here": the game replayed to the move shown, then continued with a bot, random play,
 * a checkpoint or the user on each side, in the play sandbox. Without the user it is played out at
 * once; with the user on a seat it opens as a play session on the board here. Either way the
 * continuation is a new match (a variation of this one).
 */
/** The player choice that puts the user on a seat. */
const USER = 'user';

export function BranchPanel({ teamId, matchId, move, seats, versionId }: { teamId: string; matchId: string; move: number; seats: string[]; versionId: string | null }) {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const version = useQuery({ ...trpc.environments.version.queryOptions({ teamId, versionId: versionId ?? '' }), enabled: versionId !== null });
  const description = (version.data?.validation as { description?: EnvironmentDescription } | null | undefined)?.description;
  const bots = description?.bots ?? [];
  const checkpoints = useEnvironmentCheckpoints(teamId, version.data?.environmentId ?? '');
  const [players, setPlayers] = useState<Record<string, string>>({});
  // The session the user plays a side of, from the move it was opened at (a new one replaces it).
  const [playing, setPlaying] = useState<{ key: number; move: number; seat: string; opponents: Record<string, string> } | null>(null);
  const branch = useMutation(trpc.play.branch.mutationOptions());
  if (!versionId) return <p className="muted small">This game was played on unsaved code: there is no version to continue it on.</p>;
  const chosen = (seat: string) => players[seat] ?? (bots[0] ? `bot:${bots[0]}` : 'random');
  const userSeat = seats.find((s) => chosen(s) === USER);
  const choose = (seat: string, value: string) =>
    setPlayers((p) => {
      // One seat is the user's: choosing it for another gives the old one back to the first bot.
      const next = value === USER ? Object.fromEntries(Object.entries(p).map(([k, v]) => [k, v === USER ? (bots[0] ? `bot:${bots[0]}` : 'random') : v])) : { ...p };
      return { ...next, [seat]: value };
    });
  const go = () => {
    if (userSeat) {
      setPlaying({ key: Date.now(), move, seat: userSeat, opponents: Object.fromEntries(seats.filter((s) => s !== userSeat).map((s) => [s, chosen(s)])) });
      return;
    }
    const [first, ...rest] = seats;
    branch.mutate(
      { teamId, matchId, move, policy: opponentOf(chosen(first)), opponents: Object.fromEntries(rest.map((s) => [s, opponentOf(chosen(s))])) },
      {
        onSuccess: (r) => {
          if (!r.ok || !r.matchId) return;
          // The parent now lists this variation.
          void queryClient.invalidateQueries({ queryKey: trpc.runs.match.pathKey() });
          router.push(`/teams/${teamId}/matches/${r.matchId}?move=${move}`);
        },
      },
    );
  };
  const refused = branch.data && !branch.data.ok ? (branch.data.error?.message ?? 'the environment could not be loaded') : null;
  return (
    <div className="branch-panel">
      {seats.map((seat) => (
        <label key={seat} className="small">
          {seat}{' '}
          <select value={chosen(seat)} onChange={(e) => choose(seat, e.target.value)} aria-label={`Who plays ${seat} after move ${move}`}>
            <option value={USER}>you</option>
            <PlayerOptions bots={bots} checkpoints={checkpoints} />
          </select>
        </label>
      ))}
      <button type="button" className="btn btn-small" onClick={go} disabled={branch.isPending || !description}>
        <GitBranch size={14} aria-hidden="true" /> {branch.isPending ? 'Playing…' : userSeat ? `Play ${userSeat} from move ${move}` : `Continue from move ${move}`}
      </button>
      {branch.error ? <ErrorNote error={branch.error} /> : null}
      {refused ? <ErrorNote error={refused} /> : null}
      {playing && version.data && description ? (
        <div className="branch-play">
          <p className="small muted">
            You play {playing.seat} from move {playing.move}; the finished game is kept as a variation of this one.
          </p>
          <PlayPanel
            key={playing.key}
            teamId={teamId}
            environmentId={version.data.environmentId}
            versionId={versionId}
            draft={null}
            description={description}
            onReveal={(at) => router.push(`/teams/${teamId}/environments/${version.data!.environmentId}?file=${encodeURIComponent(at.file)}&line=${at.line}`)}
            from={{ matchId, move: playing.move }}
            initial={{ seat: playing.seat, opponents: playing.opponents }}
          />
        </div>
      ) : null}
    </div>
  );
}
