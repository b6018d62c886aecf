'use client';
import { useMutation } from '@tanstack/react-query';
import { Eye } from 'lucide-react';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import type { EnvironmentDescription } from '../../../sdk/dry-run-report';
import { useTRPC } from '../../trpc';
import { ErrorNote } from '../components';
import { opponentOf, PlayerOptions } from '../editor/play-panel';
import { useEnvironmentCheckpoints } from '../environment-checkpoints';

/**
 * "Watch them play", one click: the playground's checkpoint on a seat of a game of two agents
 * against another checkpoint (the A/B one when there is one) or a bot; the game is played in the
 * play sandbox, kept as a match, and opens in the replay playing move by move.
 */
export function WatchGame({
  teamId,
  environmentId,
  versionId,
  description,
  checkpointId,
  against,
}: {
  teamId: string;
  environmentId: string;
  versionId: string;
  description: EnvironmentDescription;
  checkpointId: string;
  /** The other checkpoint on the page (A/B), offered first. */
  against: string | null;
}) {
  const trpc = useTRPC();
  const router = useRouter();
  const checkpoints = useEnvironmentCheckpoints(teamId, environmentId);
  const [seat, setSeat] = useState(description.agents[0]);
  const [opponent, setOpponent] = useState<string | null>(null);
  const watch = useMutation(
    trpc.play.autoplay.mutationOptions({
      onSuccess: (r) => {
        if (r.ok && r.matchId) router.push(`/teams/${teamId}/matches/${r.matchId}?move=0&play=1`);
      },
    }),
  );
  const offered = against && checkpoints.some((c) => c.id === against) ? against : null;
  const chosen = opponent ?? (offered ? `checkpoint:${offered}` : description.bots[0] ? `bot:${description.bots[0]}` : 'random');
  const others = description.agents.filter((a) => a !== seat);
  const refused = watch.data && !watch.data.ok ? (watch.data.error?.message ?? 'the game could not be played') : null;
  const noMoves = watch.data?.ok && !watch.data.matchId ? 'The game ended before its first move: nothing to replay.' : null;
  return (
    <form
      className="inline-form watch-game"
      aria-label="Watch a game"
      onSubmit={(e) => {
        e.preventDefault();
        watch.mutate({ teamId, source: { versionId }, policy: { checkpointId }, opponents: Object.fromEntries(others.map((a) => [a, opponentOf(chosen)])) });
      }}
    >
      <label className="small">
        This checkpoint plays{' '}
        <select value={seat} onChange={(e) => setSeat(e.target.value)}>
          {description.agents.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
      </label>
      <label className="small">
        against{' '}
        <select value={chosen} onChange={(e) => setOpponent(e.target.value)}>
          <PlayerOptions bots={description.bots} checkpoints={checkpoints} />
        </select>
      </label>
      <button type="submit" className="btn btn-small" disabled={watch.isPending}>
        <Eye size={14} aria-hidden="true" /> {watch.isPending ? 'Playing the game…' : 'Watch them play'}
      </button>
      {watch.error ? <ErrorNote error={watch.error} /> : null}
      {refused ?? noMoves ? <ErrorNote error={refused ?? noMoves} /> : null}
    </form>
  );
}
