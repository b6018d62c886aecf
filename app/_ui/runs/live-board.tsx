'use client';
import { useEffect, useState } from 'react';
import { useRunLive } from './run-live';

/** How long each position shows while a game is played back as it came. */
const MOVE_MS = 350;

/**
 * The newest game of a training run, live: each step's first game streams its positions (as the
 * moving seat saw them) once the step has played it, and they are shown move by move, then held
 * until the next step's game comes. The text is the environment's own rendering of the board, so
 * this works for any game an environment writes. The finished games are listed below it.
 */
export function LiveBoard() {
  const live = useRunLive();
  const board = live?.board ?? null;
  const count = board ? board.positions.filter((p) => p !== undefined).length : 0;
  // The move shown: it walks to the newest one at the playback's pace, and starts again at a new game.
  const [shown, setShown] = useState(0);
  const key = board ? `${board.step}:${board.game}` : '';
  useEffect(() => setShown(0), [key]);
  useEffect(() => {
    if (shown >= count - 1) return;
    const timer = setTimeout(() => setShown((n) => n + 1), MOVE_MS);
    return () => clearTimeout(timer);
  }, [shown, count]);
  if (!board || count === 0) return null;
  const at = Math.min(shown, count - 1);
  return (
    <section className="panel live-board" aria-labelledby="live-board-title">
      <h2 id="live-board-title" className="small">
        Live: a game of step {board.step}
      </h2>
      <p className="muted small" aria-live="off" data-move={at + 1}>
        Position {at + 1} of {count}
        {at + 1 < count ? ' · playing…' : ' · until the next step’s game'}
      </p>
      <pre className="live-board-text" aria-label={`Step ${board.step}, position ${at + 1} of ${count}`}>
        {board.positions[at]}
      </pre>
    </section>
  );
}
