'use client';
import { useQuery } from '@tanstack/react-query';
import { Check, Link2, Pause, Play, SkipBack, SkipForward } from 'lucide-react';
import Link from 'next/link';
import { useParams, useSearchParams } from 'next/navigation';
import { Fragment, memo, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { ErrorNote, Loading } from '../../../../_ui/components';
import { NotFound } from '../../../../_ui/empty-state';
import { isNotFound } from '../../../../_ui/errors';
import { BranchPanel } from '../../../../_ui/replay/branch-panel';
import { GridBoard } from '../../../../_ui/replay/grid-board';
import { blunders, cellName, gridGameOf, positionAfter, winningLine, type Blunder } from '../../../../_ui/replay/grid-game';
import { policyWords } from '../../../../_ui/runs/matches-table';
import { useTeam } from '../../../../_ui/team-context';
import { useTRPC } from '../../../../trpc';

const SPEEDS = [
  { ms: 400, label: 'fast' },
  { ms: 1000, label: '1 s a move' },
  { ms: 2000, label: '2 s a move' },
];

const BLUNDER_WORDS: Record<Blunder, { mark: string; words: string }> = {
  'missed-win': { mark: '??', words: 'missed a win in one' },
  'missed-block': { mark: '?', words: 'left the opponent a win in one' },
};

const KEYS: Array<[string, string]> = [
  ['← or k', 'previous move'],
  ['→ or j', 'next move'],
  ['Home / End', 'start / end of the game'],
  ['n / p', 'next / previous mistake'],
  ['space', 'play or pause'],
  ['f', 'flip the board'],
  ['?', 'show or hide these keys'],
];

type MoveRecord = { agent?: unknown; text?: unknown; byBot?: unknown; rewards?: unknown; info?: unknown };

/** The model's raw text with the move it was read as highlighted ("5,5" inside "<move>5,5</move>"). */
function RawText({ text, move }: { text: string; move: string | null }) {
  const at = move ? text.indexOf(move) : -1;
  if (!move || at < 0) return <pre className="replay-raw">{text || '(empty)'}</pre>;
  return (
    <pre className="replay-raw">
      {text.slice(0, at)}
      <mark>{move}</mark>
      {text.slice(at + move.length)}
    </pre>
  );
}

/**
 * One entry of the move list. Drawn again only when it becomes or stops being the current move, so
 * a step through an 81-move game renders two entries rather than the whole list.
 */
const MoveItem = memo(function MoveItem({ index, agent, cell, text, mark, current, go }: { index: number; agent: string; cell: { row: number; col: number } | null; text: string; mark: Blunder | undefined; current: boolean; go: (n: number) => void }) {
  return (
    <li>
      <button type="button" className={`replay-move${mark ? ` replay-move-${mark}` : ''}`} aria-current={current ? 'step' : undefined} onClick={() => go(index + 1)}>
        <span className="replay-move-n">{index + 1}.</span> {agent} {cell ? cellName(cell) : <span className="muted">{text.slice(0, 24) || '—'}</span>}
        {mark ? (
          <span className="replay-mark" title={BLUNDER_WORDS[mark].words}>
            {BLUNDER_WORDS[mark].mark}
            <span className="sr-only"> ({BLUNDER_WORDS[mark].words})</span>
          </span>
        ) : null}
      </button>
    </li>
  );
});

/**
 * A recorded match as an analysis board (lichess's): the board at any move, the move list with
 * mistakes marked, a scrubber, play and pause, and for the move shown its player, raw text,
 * reward and info. The URL holds the move (`?move=N`, N moves played), so a link opens there.
 */
export default function MatchReplayPage() {
  const { matchId } = useParams<{ matchId: string }>();
  const team = useTeam();
  const trpc = useTRPC();
  const search = useSearchParams();
  const base = `/teams/${team.id}`;
  const match = useQuery({ ...trpc.runs.match.queryOptions({ teamId: team.id, matchId }), retry: (n, e) => !isNotFound(e) && n < 2 });
  // The version the game was played on: its own, or its run's.
  const run = useQuery({ ...trpc.runs.summary.queryOptions({ teamId: team.id, jobId: match.data?.jobId ?? '' }), enabled: Boolean(match.data?.jobId && !match.data.environmentVersionId) });

  const moves = useMemo(() => (Array.isArray(match.data?.moves) ? (match.data.moves as MoveRecord[]) : []), [match.data]);
  const game = useMemo(() => (match.data ? gridGameOf(match.data) : null), [match.data]);
  const marks = useMemo(() => (game ? blunders(game) : new Map<number, Blunder>()), [game]);
  const total = moves.length;

  // The move shown: the URL's at first (past the end opens at the end), then the user's.
  const [shown, setShown] = useState<number | null>(null);
  const fromUrl = Number(search.get('move'));
  const count = Math.min(total, Math.max(0, shown ?? (Number.isInteger(fromUrl) && search.has('move') ? fromUrl : total)));
  const [flipped, setFlipped] = useState(false);
  // `?play=1` (a game opened to be watched) starts playing it move by move.
  const [playing, setPlaying] = useState(() => search.get('play') === '1');
  const [speed, setSpeed] = useState(SPEEDS[1].ms);
  const [help, setHelp] = useState(false);
  const [copied, setCopied] = useState(false);
  const listRef = useRef<HTMLOListElement>(null);

  const go = useCallback(
    (n: number) => {
      const next = Math.min(total, Math.max(0, n));
      setShown(next);
      // The URL follows without a navigation (Next keeps useSearchParams in step with replaceState).
      const url = new URL(window.location.href);
      url.searchParams.set('move', String(next));
      // A shared link opens at the move, not playing.
      url.searchParams.delete('play');
      window.history.replaceState(null, '', url);
    },
    [total],
  );

  const mistakes = useMemo(() => [...marks.keys()].sort((a, b) => a - b), [marks]);
  const nextMistake = useCallback(() => {
    // A mistake at index i is shown once i + 1 moves are played.
    const i = mistakes.find((m) => m + 1 > count);
    if (i !== undefined) go(i + 1);
  }, [mistakes, count, go]);
  const previousMistake = useCallback(() => {
    const i = [...mistakes].reverse().find((m) => m + 1 < count);
    if (i !== undefined) go(i + 1);
  }, [mistakes, count, go]);

  const loaded = match.data !== undefined;
  useEffect(() => {
    // (Before the match is loaded it has no moves: `?play=1` waits for them.)
    if (!playing || !loaded) return;
    if (count >= total) {
      setPlaying(false);
      return;
    }
    const timer = setTimeout(() => go(count + 1), speed);
    return () => clearTimeout(timer);
  }, [playing, loaded, count, total, speed, go]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const target = e.target as HTMLElement | null;
      if (target && (target.tagName === 'INPUT' || target.tagName === 'TEXTAREA' || target.tagName === 'SELECT' || target.isContentEditable)) return;
      const actions: Record<string, () => void> = {
        ArrowLeft: () => go(count - 1),
        k: () => go(count - 1),
        ArrowRight: () => go(count + 1),
        j: () => go(count + 1),
        Home: () => go(0),
        End: () => go(total),
        n: nextMistake,
        p: previousMistake,
        f: () => setFlipped((f) => !f),
        ' ': () => setPlaying((p) => !p),
        '?': () => setHelp((h) => !h),
        Escape: () => setHelp(false),
      };
      const action = actions[e.key];
      if (!action) return;
      e.preventDefault();
      action();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [count, total, go, nextMistake, previousMistake]);

  // Keep the current move in view in a long move list.
  useEffect(() => {
    listRef.current?.querySelector('[aria-current="step"]')?.scrollIntoView({ block: 'nearest' });
  }, [count]);

  if (match.error && isNotFound(match.error)) {
    return <NotFound kind="match" id={matchId} teamName={team.name} back={{ href: `${base}/matches`, label: 'See the team’s matches' }} />;
  }
  if (match.isLoadingError) return <ErrorNote error={match.error} />;
  if (!match.data) return <Loading label="Loading the match…" />;

  const m = match.data;
  const agents = (Array.isArray(m.agents) ? m.agents : []) as Array<{ name: string; policy: string }>;
  const result = (m.result ?? {}) as { endReason?: string; returns?: Record<string, number>; error?: string; info?: Record<string, unknown>; parent?: { matchId: string; move: number } };
  const current = count > 0 ? moves[count - 1] : null;
  const currentMove = count > 0 ? game?.moves[count - 1] : undefined;
  const currentCell = currentMove?.cell ?? null;
  const seat = (name: string) => agents.find((a) => a.name === name);
  const board = game ? positionAfter(game, count) : null;
  const numbers = game ? new Map(game.moves.slice(0, count).flatMap((mv, i) => (mv.cell ? [[cellName(mv.cell), i + 1] as const] : []))) : undefined;
  const mark = count > 0 ? marks.get(count - 1) : undefined;
  const boardLabel = `Board after ${count} of ${total} moves${currentCell ? `; last ${current?.agent as string} at ${cellName(currentCell)}` : ''}${flipped ? ', flipped' : ''}`;

  const copyLink = async () => {
    await navigator.clipboard.writeText(window.location.href);
    setCopied(true);
    setTimeout(() => setCopied(false), 2000);
  };

  return (
    <>
      <p className="breadcrumb">
        <Link href={`${base}/matches`}>Matches</Link>
        {m.jobId ? (
          <>
            {' '}/ <Link href={`${base}/runs/${m.jobId}?tab=matches`}>run {m.jobId}</Link>
          </>
        ) : null}{' '}
        / match
      </p>
      <header className="run-head">
        <div>
          <h1>
            {agents.map((a, i) => (
              <span key={a.name}>
                {i > 0 ? <span className="muted"> vs </span> : null}
                <span className={m.winner === a.name ? 'player-winner' : undefined}>{a.name}</span>{' '}
                <span className="muted small">({policyWords(a.policy)})</span>
              </span>
            ))}
          </h1>
          <p className="run-head-line">
            {m.winner ? `${m.winner} won` : 'No winner'}
            {typeof result.info?.reason === 'string' ? ` — ${result.info.reason}` : ''}
            {result.endReason && result.endReason !== 'terminated' ? ` (${result.endReason})` : ''} · {total} {total === 1 ? 'move' : 'moves'}
            {m.step !== null ? ` · training step ${m.step}` : ''}
            {result.error ? ` · error: ${result.error}` : ''}
          </p>
        </div>
        <div className="actions">
          <button type="button" className="btn" onClick={() => void copyLink()}>
            {copied ? <Check size={15} aria-hidden="true" /> : <Link2 size={15} aria-hidden="true" />} {copied ? 'Link copied' : 'Copy link to this move'}
          </button>
          <button type="button" className="btn" aria-pressed={help} onClick={() => setHelp((h) => !h)} aria-keyshortcuts="?">
            Keys
          </button>
        </div>
      </header>

      {help ? (
        <section className="panel replay-keys" aria-label="Keys">
          <dl className="facts">
            {KEYS.map(([key, what]) => (
              <Fragment key={key}>
                <dt>
                  <kbd>{key}</kbd>
                </dt>
                <dd>{what}</dd>
              </Fragment>
            ))}
          </dl>
        </section>
      ) : null}

      <div className="replay">
        <section className="panel replay-board" aria-label="Board">
          {board ? (
            <GridBoard board={board} last={currentCell} line={game && count > 0 ? winningLine(game, count) : null} numbers={numbers} flipped={flipped} label={boardLabel} />
          ) : (
            <p className="muted">This game does not place stones on a grid: its moves are listed beside, with their text.</p>
          )}
          <div className="replay-controls">
            <button type="button" className="icon-button" onClick={() => go(0)} aria-label="Start of the game" aria-keyshortcuts="Home">
              <SkipBack size={16} aria-hidden="true" />
            </button>
            <button type="button" className="icon-button" onClick={() => setPlaying((p) => !p)} aria-label={playing ? 'Pause' : 'Play'} aria-keyshortcuts="Space">
              {playing ? <Pause size={16} aria-hidden="true" /> : <Play size={16} aria-hidden="true" />}
            </button>
            <button type="button" className="icon-button" onClick={() => go(total)} aria-label="End of the game" aria-keyshortcuts="End">
              <SkipForward size={16} aria-hidden="true" />
            </button>
            <input type="range" min={0} max={total} value={count} onChange={(e) => go(Number(e.target.value))} aria-label="Move" aria-valuetext={`${count} of ${total} moves`} />
            <span className="tabular small">
              {count}/{total}
            </span>
            <label className="small muted">
              <span className="sr-only">Speed</span>
              <select value={speed} onChange={(e) => setSpeed(Number(e.target.value))} aria-label="Speed">
                {SPEEDS.map((s) => (
                  <option key={s.ms} value={s.ms}>
                    {s.label}
                  </option>
                ))}
              </select>
            </label>
            <button type="button" className="btn-small" onClick={() => setFlipped((f) => !f)} aria-pressed={flipped} aria-keyshortcuts="F">
              Flip
            </button>
          </div>
        </section>

        <section className="panel replay-moves" aria-labelledby="moves-title">
          <h2 id="moves-title">
            Moves{' '}
            {mistakes.length > 0 ? (
              <span className="muted small">
                · {mistakes.length} mistake{mistakes.length === 1 ? '' : 's'} (n, p)
              </span>
            ) : null}
          </h2>
          <ol className="replay-move-list" ref={listRef}>
            <li>
              <button type="button" className="replay-move" aria-current={count === 0 ? 'step' : undefined} onClick={() => go(0)}>
                Start
              </button>
            </li>
            {moves.map((mv, i) => (
              <MoveItem key={i} index={i} agent={String(mv.agent ?? '')} cell={game?.moves[i]?.cell ?? null} text={String(mv.text ?? '')} mark={marks.get(i)} current={count === i + 1} go={go} />
            ))}
          </ol>
          {result.parent ? (
            <p className="small muted replay-parent">
              A variation of <Link href={`${base}/matches/${result.parent.matchId}?move=${result.parent.move}`}>its parent game</Link>, from move {result.parent.move}.
            </p>
          ) : null}
          {m.variations.length > 0 ? (
            <>
              <h3 className="small muted">Variations</h3>
              <ul className="replay-variations">
                {m.variations.map((v) => (
                  <li key={v.id}>
                    <Link href={`${base}/matches/${v.id}?move=${v.move}`}>from move {v.move}</Link>
                    <span className="muted small"> · {v.winner ? `${v.winner} won` : 'no winner'}</span>
                  </li>
                ))}
              </ul>
            </>
          ) : null}
          <h3 className="small muted">Branch from here</h3>
          <BranchPanel teamId={team.id} matchId={m.id} move={count} seats={agents.map((a) => a.name)} versionId={m.environmentVersionId ?? run.data?.environment?.versionId ?? null} />
        </section>

        <section className="panel replay-detail" aria-labelledby="detail-title">
          <h2 id="detail-title">{current ? `Move ${count}` : 'Before the first move'}</h2>
          {current ? (
            <>
              <dl className="facts">
                <dt>Player</dt>
                <dd>
                  {String(current.agent ?? '')} <span className="muted">({current.byBot === true ? 'a bot' : policyWords(seat(String(current.agent))?.policy ?? 'policy')})</span>
                </dd>
                <dt>Move</dt>
                <dd>{currentCell ? cellName(currentCell) : <span className="muted">none placed</span>}</dd>
                <dt>Reward</dt>
                <dd className="tabular">
                  {Object.entries((current.rewards ?? {}) as Record<string, number>)
                    .map(([who, r]) => `${who} ${r}`)
                    .join(' · ') || '—'}
                </dd>
                {mark ? (
                  <>
                    <dt>Mark</dt>
                    <dd className="warn">
                      {BLUNDER_WORDS[mark].mark} {BLUNDER_WORDS[mark].words}
                    </dd>
                  </>
                ) : null}
              </dl>
              <h3 className="small muted">Raw text</h3>
              <RawText text={String(current.text ?? '')} move={currentCell ? cellName(currentCell) : null} />
              <h3 className="small muted">Info</h3>
              <pre className="replay-raw">{JSON.stringify(current.info ?? {}, null, 2)}</pre>
            </>
          ) : (
            <p className="muted">
              The empty board. Step with → (or j), or pick a move in the list. Returns at the end:{' '}
              {Object.entries(result.returns ?? {})
                .map(([who, r]) => `${who} ${r}`)
                .join(' · ') || '—'}
              .
            </p>
          )}
        </section>
      </div>
    </>
  );
}
