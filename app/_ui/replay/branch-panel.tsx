'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { GitBranch } from 'lucide-react';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import type { EnvironmentDescription } from '../../../sdk/dry-run-report';
import { useTRPC } from '../../trpc';
import { ErrorNote } from '../components';
import { opponentOf, PlayerOptions } from '../editor/play-panel';
import { useEnvironmentCheckpoints } from '../environment-checkpoints';

/**
 * "Branch from here": the game replayed to the move shown, then continued with a bot, random play
 * or a checkpoint on each side, in the play sandbox; the continuation is a new match (a variation
 * of this one) and opens at the move it branched from.
 */
export function BranchPanel({ teamId, matchId, move, seats, versionId }: { teamId: string; matchId: string; move: number; seats: string[]; versionId: string | null }) {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const version = useQuery({ ...trpc.environments.version.queryOptions({ teamId, versionId: versionId ?? '' }), enabled: versionId !== null });
  const description = (version.data?.validation as { description?: EnvironmentDescription } | null | undefined)?.description;
  const bots = description?.bots ?? [];
  const checkpoints = useEnvironmentCheckpoints(teamId, version.data?.environmentId ?? '');
  const [players, setPlayers] = useState<Record<string, string>>({});
  const branch = useMutation(trpc.play.branch.mutationOptions());
  if (!versionId) return <p className="muted small">This game was played on unsaved code: there is no version to continue it on.</p>;
  const chosen = (seat: string) => players[seat] ?? (bots[0] ? `bot:${bots[0]}` : 'random');
  const go = () => {
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
          <select value={chosen(seat)} onChange={(e) => setPlayers((p) => ({ ...p, [seat]: e.target.value }))} aria-label={`Who plays ${seat} after move ${move}`}>
            <PlayerOptions bots={bots} checkpoints={checkpoints} />
          </select>
        </label>
      ))}
      <button type="button" className="btn btn-small" onClick={go} disabled={branch.isPending || !description}>
        <GitBranch size={14} aria-hidden="true" /> {branch.isPending ? 'Playing…' : `Continue from move ${move}`}
      </button>
      {branch.error ? <ErrorNote error={branch.error} /> : null}
      {refused ? <ErrorNote error={refused} /> : null}
    </div>
  );
}
