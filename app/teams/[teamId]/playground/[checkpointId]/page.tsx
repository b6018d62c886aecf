'use client';
import { useQuery } from '@tanstack/react-query';
import { Play } from 'lucide-react';
import Link from 'next/link';
import { useParams, useRouter, useSearchParams } from 'next/navigation';
import { useCallback, useEffect, useState } from 'react';
import { ErrorNote, Field, Loading } from '../../../../_ui/components';
import { NotFound } from '../../../../_ui/empty-state';
import { isNotFound } from '../../../../_ui/errors';
import { formatBytes } from '../../../../_ui/format';
import type { EnvironmentDescription } from '../../../../../sdk/dry-run-report';
import { PlayPanel } from '../../../../_ui/editor/play-panel';
import { ExportCheckpoint } from '../../../../_ui/models/export-checkpoint';
import { atLeast } from '../../../../_ui/roles';
import type { SessionPhase } from '../../../../_ui/playground/inference-session';
import { type PlaygroundRequest, SessionColumn } from '../../../../_ui/playground/session-column';
import { WatchGame } from '../../../../_ui/playground/watch-game';
import { useTeam } from '../../../../_ui/team-context';
import { useTRPC } from '../../../../trpc';

/** The sampling controls' starting values: the training default temperature, a short answer. */
const DEFAULTS = { temperature: 1, topP: 1, topK: 0, maxTokens: 64, samples: 1, seed: 0 };

function numberOr(value: string, fallback: number): number {
  const n = Number(value);
  return value.trim() === '' || !Number.isFinite(n) ? fallback : n;
}

/**
 * The inference playground: a checkpoint loaded on a worker (an inference session), a prompt in
 * the policy's chat format (the environment's system prompt and an observation, pre-filled from
 * its dry run), sampling controls, and completions streaming token by token with each token's
 * probability and alternatives. `?vs=<checkpoint>` puts a second checkpoint beside it (A/B), on
 * the same prompt and seeds.
 */
export default function PlaygroundPage() {
  const { checkpointId } = useParams<{ checkpointId: string }>();
  const search = useSearchParams();
  const router = useRouter();
  const team = useTeam();
  const trpc = useTRPC();
  const base = `/teams/${team.id}`;
  const vs = search.get('vs');

  const info = useQuery({ ...trpc.inference.checkpoint.queryOptions({ teamId: team.id, checkpointId }), retry: (n, e) => !isNotFound(e) && n < 2 });
  const run = useQuery({
    ...trpc.runs.summary.queryOptions({ teamId: team.id, jobId: info.data?.checkpoint.jobId ?? '' }),
    enabled: Boolean(info.data?.checkpoint.jobId),
  });
  const others = useQuery(trpc.runs.teamCheckpoints.queryOptions({ teamId: team.id, kind: 'SAMPLER', offset: 0, limit: 100 }));
  const versionId = info.data?.environment?.versionId ?? '';
  const version = useQuery({ ...trpc.environments.version.queryOptions({ teamId: team.id, versionId }), enabled: versionId !== '' });
  const description = (version.data?.validation as { description?: EnvironmentDescription } | null | undefined)?.description ?? null;

  const [system, setSystem] = useState('');
  const [message, setMessage] = useState('');
  const [raw, setRaw] = useState(false);
  const [rawPrompt, setRawPrompt] = useState('');
  const [temperature, setTemperature] = useState(String(DEFAULTS.temperature));
  const [topP, setTopP] = useState(String(DEFAULTS.topP));
  const [topK, setTopK] = useState(String(DEFAULTS.topK));
  const [maxTokens, setMaxTokens] = useState(String(DEFAULTS.maxTokens));
  const [stop, setStop] = useState('');
  const [seed, setSeed] = useState(String(DEFAULTS.seed));
  const [samples, setSamples] = useState(String(DEFAULTS.samples));
  const [colour, setColour] = useState(false);
  const [request, setRequest] = useState<PlaygroundRequest | null>(null);
  const [phases, setPhases] = useState<Record<string, SessionPhase>>({});
  const [prefilled, setPrefilled] = useState(false);

  // The environment's own first prompt, once: the user edits from there.
  useEffect(() => {
    if (prefilled || !info.data) return;
    setPrefilled(true);
    if (info.data.example) {
      setSystem(info.data.example.system);
      setMessage(info.data.example.observation);
    }
  }, [info.data, prefilled]);

  const onPhase = useCallback((id: string, phase: SessionPhase) => setPhases((p) => (p[id] === phase ? p : { ...p, [id]: phase })), []);
  const columns = vs && vs !== checkpointId ? [checkpointId, vs] : [checkpointId];
  const ready = columns.every((c) => phases[c] === 'ready');

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
    setRequest((r) => ({
      id: (r?.id ?? 0) + 1,
      prompt: raw ? { prompt: rawPrompt } : { chat: { system, messages: [{ role: 'user', text: message }] } },
      temperature: t,
      topP: p,
      topK: k,
      maxTokens: m,
      ...(stops.length ? { stop: stops } : {}),
      seeds: Array.from({ length: n }, (_, i) => s0 + i),
    }));
  };
  const onFormKey = (e: React.KeyboardEvent) => {
    if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') {
      e.preventDefault();
      send();
    }
  };

  if (info.error && isNotFound(info.error)) {
    return <NotFound kind="checkpoint" id={checkpointId} teamName={team.name} back={{ href: `${base}/checkpoints`, label: 'See the team’s checkpoints' }} />;
  }
  if (info.isLoadingError) return <ErrorNote error={info.error} />;
  if (!info.data) return <Loading label="Loading the checkpoint…" />;

  const { checkpoint, environment, model } = info.data;
  const label = (id: string) => {
    const c = others.data?.checkpoints.find((x) => x.id === id);
    if (id === checkpointId) return `A · step ${checkpoint.step}`;
    return c ? `B · ${c.job?.environmentName ?? 'checkpoint'} step ${c.step}` : `B · ${id}`;
  };
  const setVs = (id: string) => {
    const url = new URLSearchParams(search.toString());
    if (id) url.set('vs', id);
    else url.delete('vs');
    router.replace(`?${url.toString()}`);
  };

  return (
    <>
      <p className="breadcrumb">
        <Link href={`${base}/checkpoints`}>Checkpoints</Link>
        {checkpoint.jobId ? (
          <>
            {' '}/ <Link href={`${base}/runs/${checkpoint.jobId}?tab=checkpoints`}>run {checkpoint.jobId}</Link>
          </>
        ) : null}{' '}
        / playground
      </p>
      <header className="run-head">
        <div>
          <h1>
            Playground <span className="muted">· {environment ? `${environment.name} v${environment.version}` : 'checkpoint'} step {checkpoint.step}</span>
          </h1>
          <p className="run-head-line">
            {checkpoint.kind.toLowerCase()} checkpoint {checkpoint.id} · {formatBytes(checkpoint.bytes)}
            {checkpoint.isAdapter ? ' · LoRA adapter' : ''}
            {model ? (
              <>
                {' · fine-tuned from '}
                <Link href={`${base}/models/${model.id}`}>{model.name}</Link>
              </>
            ) : null}
            {run.data ? ` · ${run.data.algorithm ?? run.data.kind.toLowerCase()} run by ${run.data.owner.name}` : ''}
          </p>
        </div>
        <div className="actions">
          {model && checkpoint.kind === 'SAMPLER' && atLeast(team.role, 'MEMBER') ? <ExportCheckpoint teamId={team.id} checkpoint={checkpoint} /> : null}
          <label className="small">
            Compare with{' '}
            <select value={vs ?? ''} onChange={(e) => setVs(e.target.value)} aria-label="Compare with another checkpoint">
              <option value="">nothing (one checkpoint)</option>
              {(others.data?.checkpoints ?? [])
                .filter((c) => c.id !== checkpointId)
                .map((c) => (
                  <option key={c.id} value={c.id}>
                    {c.job?.environmentName ?? 'checkpoint'} · step {c.step} · run {c.job?.id ?? 'deleted'}
                  </option>
                ))}
            </select>
          </label>
        </div>
      </header>

      <div className={`playground${columns.length > 1 ? ' playground-ab' : ''}`}>
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
          <label className="switch small">
            <input type="checkbox" checked={raw} onChange={(e) => setRaw(e.target.checked)} /> Raw text (no chat format)
          </label>
          {raw ? (
            <Field label="Raw prompt" hint="Sent as text after the start token, without the system and turn markers the policy was trained with.">
              {(a) => <textarea {...a} className="mono" rows={8} value={rawPrompt} onChange={(e) => setRawPrompt(e.target.value)} />}
            </Field>
          ) : (
            <>
              <Field label="System" hint={environment ? `The system prompt ${environment.name}'s policy reads (from its dry run); edit freely.` : 'The system message.'}>
                {(a) => <textarea {...a} className="mono" rows={5} value={system} onChange={(e) => setSystem(e.target.value)} />}
              </Field>
              <Field label="Message" hint="What the environment would say: an observation the model answers.">
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
              <input type="checkbox" checked={colour} onChange={(e) => setColour(e.target.checked)} /> Colour by probability
            </label>
          </div>
          {!ready ? <p className="hint">Generate is enabled once {columns.length > 1 ? 'both sessions are' : 'the session is'} ready.</p> : null}
        </form>

        <div className="playground-results">
          {columns.map((id) => (
            <SessionColumn key={id} teamId={team.id} checkpointId={id} title={columns.length > 1 ? label(id) : 'Completions'} request={request} colour={colour} onPhase={onPhase} />
          ))}
        </div>
      </div>

      {environment && description ? (
        <section className="panel" aria-labelledby="play-env-title">
          <h2 id="play-env-title">Play {environment.name} with this checkpoint</h2>
          <p className="hint">
            The environment in its sandbox, turn by turn, with this checkpoint in the other seats (play against it{description.agents.length > 1 ? ' on the board' : ''}) or playing a whole
            episode by itself (&ldquo;Let it play&rdquo;), as training played it: the same prompts, legal-move masking and temperature.
          </p>
          {description.agents.length === 2 ? (
            <WatchGame
              teamId={team.id}
              environmentId={environment.id}
              versionId={environment.versionId}
              description={description}
              checkpointId={checkpointId}
              against={vs && vs !== checkpointId ? vs : null}
            />
          ) : null}
          <PlayPanel
            teamId={team.id}
            environmentId={environment.id}
            versionId={environment.versionId}
            draft={null}
            description={description}
            onReveal={(at) => router.push(`${base}/environments/${environment.id}?file=${encodeURIComponent(at.file)}&line=${at.line}`)}
            preferred={`checkpoint:${checkpointId}`}
          />
        </section>
      ) : null}
    </>
  );
}
