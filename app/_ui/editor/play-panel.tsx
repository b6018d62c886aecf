'use client';
import Link from 'next/link';
import { useMutation } from '@tanstack/react-query';
import { Bot, Play, RotateCcw, Send, Square } from 'lucide-react';
import { useEffect, useRef, useState } from 'react';
import type { EnvironmentDescription, SandboxErrorJson, Transcript } from '../../../sdk/dry-run-report';
import type { PlayOpponent, PlaySession, PlayTurn } from '../../../sdk/play';
import { useTRPC } from '../../trpc';
import { ErrorNote } from '../components';
import { type CheckpointChoice, useEnvironmentCheckpoints } from '../environment-checkpoints';

type Source = { versionId: string } | { draft: { entry: string; files: Record<string, string>; manifest: Record<string, unknown> } };

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(3));
const opponentKey = (o: PlayOpponent) => ('bot' in o ? `bot:${o.bot}` : 'checkpointId' in o ? `checkpoint:${o.checkpointId}` : 'random');
export const opponentOf = (key: string): PlayOpponent =>
  key.startsWith('bot:') ? { bot: key.slice(4) } : key.startsWith('checkpoint:') ? { checkpointId: key.slice(11) } : { random: true };

/** Who a turn's player was, in a few words. */
function playerLabel(by: PlayTurn['by'], checkpoints: CheckpointChoice[]): string {
  if ('user' in by) return 'you';
  if ('bot' in by) return `bot ${by.bot}`;
  if ('checkpointId' in by) return `checkpoint ${checkpoints.find((c) => c.id === by.checkpointId)?.label ?? by.checkpointId}`;
  return 'random';
}

/** The options of a player picker: the environment's bots, random play, and the team's checkpoints of this environment. */
export function PlayerOptions({ bots, checkpoints }: { bots: string[]; checkpoints: CheckpointChoice[] }) {
  return (
    <>
      {bots.map((b) => (
        <option key={b} value={`bot:${b}`}>bot {b}</option>
      ))}
      <option value="random">random</option>
      {checkpoints.length > 0 ? (
        <optgroup label="Checkpoints (newest first)">
          {checkpoints.map((c) => (
            <option key={c.id} value={`checkpoint:${c.id}`}>checkpoint {c.label}</option>
          ))}
        </optgroup>
      ) : null}
    </>
  );
}

/** A board game's moves from the turns' info (`move: [row, col]`, 1-based, as the gomoku template writes it). */
function boardOf(task: unknown, turns: PlayTurn[]): { size: number; stones: Map<string, string>; last: string | null } | null {
  const size = (task as { size?: unknown } | null)?.size;
  if (typeof size !== 'number' || size < 3 || size > 25) return null;
  const stones = new Map<string, string>();
  let last: string | null = null;
  for (const t of turns) {
    const move = t.info.move;
    if (Array.isArray(move) && move.length === 2) {
      last = `${String(move[0])},${String(move[1])}`;
      stones.set(last, t.agent);
    }
  }
  return { size, stones, last };
}

function Board({ board, agents, onPick }: { board: NonNullable<ReturnType<typeof boardOf>>; agents: string[]; onPick: (row: number, col: number) => void }) {
  const rows = Array.from({ length: board.size }, (_, i) => i + 1);
  return (
    <table className="board" aria-label={`Board, ${board.size} by ${board.size}`}>
      <tbody>
        {rows.map((r) => (
          <tr key={r}>
            {rows.map((c) => {
              const who = board.stones.get(`${r},${c}`);
              const label = who ? `${r},${c}: ${who}` : `${r},${c}: empty`;
              return (
                <td key={c}>
                  <button
                    type="button"
                    className={`cell${who ? ` stone stone-${agents.indexOf(who)}` : ''}${board.last === `${r},${c}` ? ' last' : ''}`}
                    aria-label={label}
                    disabled={!!who}
                    onClick={() => onPick(r, c)}
                  />
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function TurnView({ turn, mine, checkpoints }: { turn: PlayTurn; mine: boolean; checkpoints: CheckpointChoice[] }) {
  const rewards = Object.entries(turn.rewards).filter(([, r]) => r !== 0);
  const info = Object.keys(turn.info).length > 0 ? JSON.stringify(turn.info) : null;
  return (
    <div className={`play-turn${mine ? ' play-turn-mine' : ''}`}>
      <div className="turn-role">
        {turn.agent} · {playerLabel(turn.by, checkpoints)}
        {turn.logprob !== undefined ? ` · log-prob ${turn.logprob.toFixed(2)}` : ''}
        {rewards.length > 0 ? ` · reward ${rewards.map(([a, r]) => `${a} ${fmt(r)}`).join(', ')}` : ''}
        {turn.terminated ? ' · terminated' : turn.truncated ? ' · truncated' : ''}
      </div>
      <pre>{turn.action}</pre>
      {info ? <pre className="play-info">info {info}</pre> : null}
      {turn.tool ? <div className="small muted">tool {turn.tool.name ?? '?'}: {turn.tool.ok ? 'ok' : turn.tool.error}</div> : null}
    </div>
  );
}

function ErrorAt({ error, onReveal }: { error: SandboxErrorJson; onReveal: (at: { file: string; line: number; column: number }) => void }) {
  return (
    <div className="notice notice-error" role="alert">
      <strong>{error.kind === 'timeout' ? 'Took too long' : error.kind === 'memory' ? 'Out of memory' : 'The environment failed'}</strong> ({error.during}): {error.message}
      {error.location ? (
        <div>
          <button type="button" className="btn-small" onClick={() => onReveal(error.location!)}>
            Go to {error.location.file}:{error.location.line}:{error.location.column}
          </button>
        </div>
      ) : null}
    </div>
  );
}

/**
 * The play console: the user acts as an agent of the environment in the real sandbox (on the
 * server's play processes, never in the page), turn by turn, with bots or the team's checkpoints
 * of this environment in the other seats; or watches a bot or a checkpoint play one episode.
 */
export function PlayPanel({
  teamId,
  environmentId,
  versionId,
  draft,
  description,
  onReveal,
  preferred,
  from,
  initial,
}: {
  teamId: string;
  environmentId: string;
  versionId: string;
  /** The editor's unsaved files, when there are edits: the console can play them before saving. */
  draft: Source | null;
  description: EnvironmentDescription | null;
  onReveal: (at: { file: string; line: number; column: number }) => void;
  /** Who plays the other seats and "let it play" unless the user picks another (the playground's checkpoint, `checkpoint:<id>`). */
  preferred?: string;
  /** A recorded match's position to start from (the replay's "branch from here"): its moves up to `move` are played first. */
  from?: { matchId: string; move: number };
  /** The user's seat and the other seats' players (`bot:<name>`, `random`, `checkpoint:<id>`), chosen elsewhere: the session opens with them at once. */
  initial?: { seat: string; opponents: Record<string, string> };
}) {
  const trpc = useTRPC();
  const agents = description?.agents ?? [];
  const bots = description?.bots ?? [];
  const checkpoints = useEnvironmentCheckpoints(teamId, environmentId);
  const [useDraft, setUseDraft] = useState(false);
  const [seat, setSeat] = useState(initial?.seat ?? '');
  const [opponents, setOpponents] = useState<Record<string, string>>(initial?.opponents ?? {});
  const [session, setSession] = useState<PlaySession | null>(null);
  const [turns, setTurns] = useState<PlayTurn[]>([]);
  const [observation, setObservation] = useState<string | null>(null);
  const [state, setState] = useState<{ done: boolean; endReason: string | null; returns: Record<string, number>; error: SandboxErrorJson | null }>({ done: false, endReason: null, returns: {}, error: null });
  const [action, setAction] = useState('');
  const [autoplayed, setAutoplayed] = useState<(Transcript & { players: Record<string, PlayOpponent> }) | null>(null);
  const [policy, setPolicy] = useState('');
  // The match a finished game of several agents was saved as (it opens in the replay).
  const [matchId, setMatchId] = useState<string | null>(null);
  const actionRef = useRef<HTMLTextAreaElement>(null);
  const endRef = useRef<HTMLDivElement>(null);
  const mySeat = seat || agents[0] || '';
  const source: Source = useDraft && draft ? draft : { versionId };
  const others = agents.filter((a) => a !== mySeat);
  const fallback = preferred ?? (bots[0] ? `bot:${bots[0]}` : 'random');
  const opponentsInput = Object.fromEntries(others.map((a) => [a, opponentOf(opponents[a] ?? fallback)]));

  const open = useMutation(
    trpc.play.open.mutationOptions({
      onSuccess: (r) => {
        setAutoplayed(null);
        if (!r.ok) {
          setSession(null);
          setState({ done: true, endReason: 'error', returns: {}, error: r.error ?? (r.compileErrors[0] ? { kind: 'syntax', during: 'compile', message: r.compileErrors[0].message, location: r.compileErrors[0].location, userStack: '' } : null) });
          return;
        }
        setSession(r);
        setMatchId(null);
        setTurns(r.history);
        setObservation(r.observation);
        setState({ done: r.done, endReason: r.endReason, returns: r.returns, error: r.error });
        setTimeout(() => actionRef.current?.focus(), 0);
      },
    }),
  );
  const step = useMutation(
    trpc.play.step.mutationOptions({
      onSuccess: (r) => {
        setTurns((t) => [...t, ...(r.turn ? [r.turn] : []), ...r.botTurns]);
        setObservation(r.observation);
        setState({ done: r.done, endReason: r.endReason, returns: r.returns, error: r.error });
        setMatchId(r.matchId ?? null);
        setAction('');
        setTimeout(() => actionRef.current?.focus(), 0);
      },
    }),
  );
  const close = useMutation(trpc.play.close.mutationOptions());
  const autoplay = useMutation(
    trpc.play.autoplay.mutationOptions({
      onSuccess: (r) => {
        setSession(null);
        if (r.ok) {
          setAutoplayed({ ...r.transcript, players: r.players });
          setMatchId(r.matchId ?? null);
          setState({ done: true, endReason: r.transcript.endReason, returns: r.transcript.totalRewards, error: r.transcript.error });
        } else {
          setAutoplayed(null);
          setState({ done: true, endReason: 'error', returns: {}, error: r.error });
        }
      },
    }),
  );
  // In braces: scrollIntoView returns a promise in current browsers, and an effect may return only its clean-up.
  useEffect(() => {
    endRef.current?.scrollIntoView({ block: 'nearest' });
  }, [turns.length, autoplayed]);
  // Leaving the page or the tab ends the session rather than waiting for the idle timeout.
  const sessionId = session?.sessionId;
  const closeSession = close.mutate;
  useEffect(() => () => {
    if (sessionId) closeSession({ teamId, sessionId });
  }, [sessionId, teamId, closeSession]);

  const start = () => open.mutate({ teamId, source, seat: mySeat || undefined, opponents: others.length ? opponentsInput : undefined, ...(from ? { from } : {}) });
  // Chosen elsewhere (the replay's branch panel): open at once, once.
  const opened = useRef(false);
  useEffect(() => {
    if (!initial || opened.current) return;
    opened.current = true;
    start();
  });
  const send = () => {
    if (session && action.trim() && !step.isPending) step.mutate({ teamId, sessionId: session.sessionId, action });
  };
  const board = session ? boardOf(session.task, turns) : null;

  return (
    <div className="side-body play">
      <form
        className="play-setup"
        aria-label="Play settings"
        onSubmit={(e) => {
          e.preventDefault();
          start();
        }}
      >
        {draft ? (
          <label className="small">
            <input type="checkbox" checked={useDraft} onChange={(e) => setUseDraft(e.target.checked)} /> Play the unsaved edits
          </label>
        ) : null}
        {agents.length > 1 ? (
          <div className="play-seats">
            <label>
              You play{' '}
              <select value={mySeat} onChange={(e) => setSeat(e.target.value)}>
                {agents.map((a) => (
                  <option key={a} value={a}>{a}</option>
                ))}
              </select>
            </label>
            {others.map((a) => (
              <label key={a}>
                {a} is{' '}
                <select value={opponentKey(opponentsInput[a])} onChange={(e) => setOpponents((o) => ({ ...o, [a]: e.target.value }))}>
                  <PlayerOptions bots={bots} checkpoints={checkpoints} />
                </select>
              </label>
            ))}
          </div>
        ) : null}
        <div className="actions">
          <button type="submit" className="btn-primary btn-small" disabled={open.isPending}>
            <Play size={14} aria-hidden="true" /> {session ? 'New episode' : open.isPending ? 'Opening…' : 'Play an episode'}
          </button>
          {bots.length > 0 || agents.length > 0 ? (
            <>
              <label className="sr-only" htmlFor="play-policy">Bot or checkpoint that plays</label>
              <select id="play-policy" value={policy || fallback} onChange={(e) => setPolicy(e.target.value)} className="select-small">
                <PlayerOptions bots={bots} checkpoints={checkpoints} />
              </select>
              <button
                type="button"
                className="btn-small"
                disabled={autoplay.isPending}
                onClick={() => autoplay.mutate({ teamId, source, policy: opponentOf(policy || fallback), opponents: others.length ? opponentsInput : undefined })}
              >
                <Bot size={14} aria-hidden="true" /> {autoplay.isPending ? 'Playing…' : 'Let it play'}
              </button>
            </>
          ) : null}
          {session && !state.done ? (
            <button type="button" className="btn-small" onClick={() => { close.mutate({ teamId, sessionId: session.sessionId }); setSession(null); }}>
              <Square size={13} aria-hidden="true" /> End
            </button>
          ) : null}
        </div>
      </form>
      <ErrorNote error={open.error ?? step.error ?? autoplay.error} />
      {!session && !autoplayed && !state.error ? (
        <p className="muted small">Act as the agent in the real sandbox: you see the system prompt and the observation, type the action, and get the reward, the info and the next observation, turn by turn.</p>
      ) : null}
      {session ? (
        <div className="play-log" aria-live="polite">
          <div className="turn turn-system">
            <div className="turn-role">system · {session.seat}</div>
            <pre>{session.systemPrompt}</pre>
          </div>
          {turns.map((t, i) => (
            <TurnView key={i} turn={t} mine={'user' in t.by} checkpoints={checkpoints} />
          ))}
          {board ? <Board board={board} agents={agents} onPick={(r, c) => setAction(`<move>${r},${c}</move>`)} /> : null}
          {observation !== null && !state.done ? (
            <div className="turn turn-observation">
              <div className="turn-role">observation · your turn ({session.seat})</div>
              <pre>{observation}</pre>
            </div>
          ) : null}
        </div>
      ) : null}
      {autoplayed ? (
        <div className="play-log">
          <p className="small muted">One episode, seed {autoplayed.seed}:</p>
          {autoplayed.turns.map((t, i) => (
            <div key={i} className="play-turn">
              <div className="turn-role">
                {t.agent}
                {autoplayed.players[t.agent] ? ` · ${playerLabel(autoplayed.players[t.agent], checkpoints)}` : ''} · reward {Object.values(t.rewards).map(fmt).join(', ') || '0'}
              </div>
              <pre className="muted">{t.observation}</pre>
              <pre>{t.action}</pre>
            </div>
          ))}
        </div>
      ) : null}
      {state.error ? <ErrorAt error={state.error} onReveal={onReveal} /> : null}
      {(session || autoplayed) && Object.keys(state.returns).length > 0 ? (
        <p className="play-returns" role="status">
          {state.done ? `Episode over (${state.endReason ?? 'ended'}). ` : ''}Return: {Object.entries(state.returns).map(([a, r]) => `${agents.length > 1 ? `${a} ` : ''}${fmt(r)}`).join(' · ')}
          {state.done && session ? (
            <button type="button" className="btn-small" onClick={start}>
              <RotateCcw size={13} aria-hidden="true" /> Again
            </button>
          ) : null}
          {state.done && matchId ? (
            <Link href={`/teams/${teamId}/matches/${matchId}`} className="btn-small">
              Open in the replay
            </Link>
          ) : null}
        </p>
      ) : null}
      {session && !state.done ? (
        <form
          className="play-input"
          aria-label="Act as the agent"
          onSubmit={(e) => {
            e.preventDefault();
            send();
          }}
        >
          <label htmlFor="play-action" className="sr-only">
            Your action
          </label>
          <textarea
            id="play-action"
            ref={actionRef}
            value={action}
            rows={2}
            placeholder="Type the agent's action — Enter sends, Shift-Enter adds a line"
            onChange={(e) => setAction(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey) {
                e.preventDefault();
                send();
              }
            }}
          />
          <button type="submit" className="btn-primary" disabled={!action.trim() || step.isPending} aria-label="Send the action">
            <Send size={15} aria-hidden="true" />
          </button>
        </form>
      ) : null}
      <div ref={endRef} />
    </div>
  );
}
