'use client';
import { Play } from 'lucide-react';
import { useEffect, useState } from 'react';
import { Field } from '../components';
import type { PlaygroundRequest } from './session-column';

/** The sampling controls' starting values: the training default temperature, a short answer. */
const DEFAULTS = { temperature: 1, topP: 1, topK: 0, maxTokens: 64, samples: 1, seed: 0 };

function numberOr(value: string, fallback: number): number {
  const n = Number(value);
  return value.trim() === '' || !Number.isFinite(n) ? fallback : n;
}

/**
 * The playground's prompt: a conversation in the policy's chat format (a system message and a
 * user message) or raw text, the sampling controls, and Generate (Ctrl-Enter). Each send is one
 * request for every column of the page, on the same prompt and seeds.
 */
export function PromptForm({
  ready,
  columns,
  example,
  systemHint,
  messageHint = 'What the environment would say: an observation the model answers.',
  rawOnly = false,
  colour,
  onColour,
  onSend,
}: {
  /** Every column's session is ready to sample. */
  ready: boolean;
  columns: number;
  /** The prompt to start from (an environment's system prompt and first observation), once known. */
  example: { system: string; message: string } | null;
  systemHint: string;
  messageHint?: string;
  /** A model without a chat template reads raw text only. */
  rawOnly?: boolean;
  colour: boolean;
  onColour: (colour: boolean) => void;
  onSend: (request: Omit<PlaygroundRequest, 'id'>) => void;
}) {
  const [system, setSystem] = useState('');
  const [message, setMessage] = useState('');
  const [rawChosen, setRaw] = useState(false);
  const raw = rawOnly || rawChosen;
  const [rawPrompt, setRawPrompt] = useState('');
  const [temperature, setTemperature] = useState(String(DEFAULTS.temperature));
  const [topP, setTopP] = useState(String(DEFAULTS.topP));
  const [topK, setTopK] = useState(String(DEFAULTS.topK));
  const [maxTokens, setMaxTokens] = useState(String(DEFAULTS.maxTokens));
  const [stop, setStop] = useState('');
  const [seed, setSeed] = useState(String(DEFAULTS.seed));
  const [samples, setSamples] = useState(String(DEFAULTS.samples));
  const [prefilled, setPrefilled] = useState(false);

  // The example, once: the user edits from there.
  useEffect(() => {
    if (prefilled || !example) return;
    setPrefilled(true);
    setSystem(example.system);
    setMessage(example.message);
  }, [example, prefilled]);

  const problems: string[] = [];
  const t = numberOr(temperature, NaN);
  if (!(t >= 0 && t <= 10)) problems.push('Temperature is a number from 0 to 10.');
  const p = numberOr(topP, NaN);
  if (!(p > 0 && p <= 1)) problems.push('Top-p is above 0 and at most 1.');
  const k = numberOr(topK, NaN);
  if (!(Number.isInteger(k) && k >= 0)) problems.push('Top-k is a whole number, 0 for all tokens.');
  const m = numberOr(maxTokens, NaN);
  if (!(Number.isInteger(m) && m >= 1 && m <= 512)) problems.push('Max tokens is a whole number from 1 to 512.');
  const n = numberOr(samples, NaN);
  if (!(Number.isInteger(n) && n >= 1 && n <= 8)) problems.push('Samples is a whole number from 1 to 8.');
  const s0 = numberOr(seed, NaN);
  if (!(Number.isInteger(s0) && s0 >= 0)) problems.push('Seed is a whole number from 0.');
  if (!raw && message.trim() === '') problems.push('Write a message for the model to answer.');

  const send = () => {
    if (!ready || problems.length > 0) return;
    const stops = stop
      .split('\n')
      .map((x) => x.replace(/\\n/g, '\n'))
      .filter((x) => x !== '');
    onSend({
      prompt: raw ? { prompt: rawPrompt } : { chat: { system, messages: [{ role: 'user', text: message }] } },
      temperature: t,
      topP: p,
      topK: k,
      maxTokens: m,
      ...(stops.length ? { stop: stops } : {}),
      seeds: Array.from({ length: n }, (_, i) => s0 + i),
    });
  };
  const onFormKey = (e: React.KeyboardEvent) => {
    if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') {
      e.preventDefault();
      send();
    }
  };

  return (
    <form
      className="panel playground-prompt"
      aria-label="Prompt"
      onKeyDown={onFormKey}
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <h2>Prompt</h2>
      {rawOnly ? (
        <p className="hint">This model has no chat template: the prompt is raw text.</p>
      ) : (
        <label className="switch small">
          <input type="checkbox" checked={rawChosen} onChange={(e) => setRaw(e.target.checked)} /> Raw text (no chat format)
        </label>
      )}
      {raw ? (
        <Field label="Raw prompt" hint={rawOnly ? 'Sent as text, continued by the model.' : 'Sent as text after the start token, without the system and turn markers the policy was trained with.'}>
          {(a) => <textarea {...a} className="mono" rows={8} value={rawPrompt} onChange={(e) => setRawPrompt(e.target.value)} />}
        </Field>
      ) : (
        <>
          <Field label="System" hint={systemHint}>
            {(a) => <textarea {...a} className="mono" rows={5} value={system} onChange={(e) => setSystem(e.target.value)} />}
          </Field>
          <Field label="Message" hint={messageHint}>
            {(a) => <textarea {...a} className="mono" rows={7} value={message} onChange={(e) => setMessage(e.target.value)} />}
          </Field>
        </>
      )}
      <div className="playground-params">
        <Field label="Temperature" hint="0 is greedy.">
          {(a) => <input {...a} inputMode="decimal" value={temperature} onChange={(e) => setTemperature(e.target.value)} />}
        </Field>
        <Field label="Top-p">{(a) => <input {...a} inputMode="decimal" value={topP} onChange={(e) => setTopP(e.target.value)} />}</Field>
        <Field label="Top-k" hint="0: all tokens.">
          {(a) => <input {...a} inputMode="numeric" value={topK} onChange={(e) => setTopK(e.target.value)} />}
        </Field>
        <Field label="Max tokens">{(a) => <input {...a} inputMode="numeric" value={maxTokens} onChange={(e) => setMaxTokens(e.target.value)} />}</Field>
        <Field label="Seed" hint="Samples use seed, seed+1, …">
          {(a) => <input {...a} inputMode="numeric" value={seed} onChange={(e) => setSeed(e.target.value)} />}
        </Field>
        <Field label="Samples">{(a) => <input {...a} inputMode="numeric" value={samples} onChange={(e) => setSamples(e.target.value)} />}</Field>
      </div>
      <Field label="Stop strings" hint="One a line; \n for a newline.">
        {(a) => <textarea {...a} className="mono" rows={2} value={stop} onChange={(e) => setStop(e.target.value)} />}
      </Field>
      {problems.length > 0 ? (
        <ul className="playground-problems small" aria-live="polite">
          {problems.map((x) => (
            <li key={x}>{x}</li>
          ))}
        </ul>
      ) : null}
      <div className="actions">
        <button type="submit" className="btn btn-primary" disabled={!ready || problems.length > 0} aria-keyshortcuts="Control+Enter">
          <Play size={15} aria-hidden="true" /> Generate <kbd>Ctrl ↵</kbd>
        </button>
        <label className="switch small">
          <input type="checkbox" checked={colour} onChange={(e) => onColour(e.target.checked)} /> Colour by probability
        </label>
      </div>
      {!ready ? <p className="hint">Generate is enabled once {columns > 1 ? 'both sessions are' : 'the session is'} ready.</p> : null}
    </form>
  );
}
