'use client';
import { RotateCcw } from 'lucide-react';
import { useEffect, useRef } from 'react';
import { ErrorNote } from '../components';
import { type Completion, type Served, servedKey, type SessionPhase, useInferenceSession } from './inference-session';
import { TokenText } from './token-text';
import type { ChatPrompt } from '../../../sdk/worker-protocol';
import { readableTimes } from '../runs/run-state';

/** What the page asks every column to sample: sent once per `id`. */
export interface PlaygroundRequest {
  id: number;
  prompt: { chat: ChatPrompt } | { prompt: string };
  maxTokens: number;
  temperature: number;
  topP?: number;
  topK?: number;
  stop?: string[];
  seeds: number[];
}

const PHASE_WORDS: Record<SessionPhase, string> = {
  opening: 'Opening a session…',
  placing: 'Placing the session on a worker…',
  loading: 'Loading the weights…',
  ready: 'Ready',
  ended: 'The session has ended',
  failed: 'The session could not start',
};

const END_WORDS: Record<string, string> = {
  eos: 'ended by the model',
  stop: 'stop string',
  length: 'max tokens reached',
  cancelled: 'the session stopped',
  error: 'error',
};

/** Tokens a second as drawn here, and as the worker sampled them (its own clock), once done. */
function rate(c: Completion): string | null {
  if (!c.done || c.firstAt === null || c.lastAt === null || c.tokens.length < 2) return null;
  const seconds = (c.lastAt - c.firstAt) / 1000;
  const t = c.done.timing;
  const worker = t && t.decodeMs > 0 && t.tokens > 1 ? ` (worker ${((t.tokens - 1) / (t.decodeMs / 1000)).toFixed(0)})` : '';
  return seconds > 0 ? `${((c.tokens.length - 1) / seconds).toFixed(0)} tok/s${worker}` : null;
}

/**
 * One checkpoint's (or imported model's) side of the playground: its session's state, and the
 * completions of every request the page sends, streaming. Reports its readiness (by the served
 * thing's key: its checkpoint's id, or model:<id>) so the page enables Generate.
 */
export function SessionColumn({
  teamId,
  served,
  title,
  request,
  colour,
  onPhase,
}: {
  teamId: string;
  served: Served;
  title: string;
  request: PlaygroundRequest | null;
  colour: boolean;
  onPhase: (key: string, phase: SessionPhase) => void;
}) {
  const session = useInferenceSession(teamId, served);
  const sent = useRef(0);
  const { phase, generate } = session;
  const key = servedKey(served);

  useEffect(() => onPhase(key, phase), [key, phase, onPhase]);

  useEffect(() => {
    if (!request || request.id === sent.current || phase !== 'ready') return;
    sent.current = request.id;
    const { seeds, prompt, id: _id, ...params } = request;
    // One request per sample: the worker serves them in order, each streaming as it goes.
    void (async () => {
      for (const seed of seeds) await generate({ ...prompt, ...params, seed, alternatives: 5 }, request.id).catch(() => undefined);
    })();
  }, [request, phase, generate]);

  const job = session.job;
  const completions = [...session.completions].sort((a, b) => b.batch - a.batch || a.seed - b.seed);
  const stopped = phase === 'ended' || phase === 'failed';
  return (
    <section className="panel playground-column" aria-label={title}>
      <header className="playground-column-head">
        <h2>{title}</h2>
        <p className={`playground-state playground-state-${phase}`} role="status" data-testid="session-state">
          <span className="playground-dot" aria-hidden="true" /> {PHASE_WORDS[phase]}
          {phase === 'ready' && job?.worker ? ` on ${job.worker.name}` : ''}
          {phase === 'loading' && job?.worker ? ` on ${job.worker.name}` : ''}
          {phase === 'placing' && job?.waitingReason ? ` — ${readableTimes(job.waitingReason.replace(/^waiting:\s*/, ''))}` : ''}
          {phase === 'ended' && job ? ` (${job.failureReason ?? (job.state === 'SUCCEEDED' ? 'idle' : job.state.toLowerCase())})` : ''}
        </p>
        {stopped ? (
          <button type="button" className="btn btn-small" onClick={session.restart}>
            <RotateCcw size={14} aria-hidden="true" /> Start again
          </button>
        ) : null}
      </header>
      {session.openError ? <ErrorNote error={session.openError} /> : null}
      {phase === 'failed' && job?.failureReason ? <ErrorNote error={`The session failed: ${job.failureReason}`} /> : null}
      {session.sampleError ? <ErrorNote error={session.sampleError} /> : null}
      {completions.length === 0 ? (
        <p className="muted small playground-empty">{phase === 'ready' ? 'Write a prompt and press Generate (Ctrl-Enter).' : 'Completions appear here, token by token, once the session is ready.'}</p>
      ) : (
        <>
        <p className="small muted playground-hint">Point at a token, or focus a completion and use ← →, to see its probability and the likeliest alternatives.</p>
        <ol className="playground-completions">
          {completions.map((c) => (
            <li key={c.requestId} className="playground-completion" data-testid="completion" data-done={c.done ? c.done.reason : ''}>
              <TokenText tokens={c.tokens} colour={colour} label={`Completion with seed ${c.seed}`} />
              <p className="playground-completion-foot small muted tabular">
                seed {c.seed} · {c.tokens.length} tokens
                {c.firstAt !== null ? ` · first token ${Math.round(c.firstAt - c.sentAt)} ms` : ''}
                {rate(c) ? ` · ${rate(c)}` : ''} · {c.done ? END_WORDS[c.done.reason] : stopped ? 'cut off: the session stopped' : <span className="playground-streaming">streaming…</span>}
              </p>
              {c.done?.reason === 'error' ? <ErrorNote error={c.done.error ?? 'the worker could not sample'} /> : null}
            </li>
          ))}
        </ol>
        </>
      )}
    </section>
  );
}
