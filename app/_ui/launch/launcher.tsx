'use client';
import { useMutation, useQuery } from '@tanstack/react-query';
import { CheckCircle2, Clock, Copy, Rocket, RotateCcw } from 'lucide-react';
import { usePathname, useRouter, useSearchParams } from 'next/navigation';
import { useDeferredValue, useEffect, useMemo, useState } from 'react';
import { baseNameSchema, runTagsSchema } from '../../../sdk/job-config';
import { ALGORITHMS, describeOptions, OPTION_GROUP_TITLES, resolveTraining, type Algorithm, type OptionDoc, type OptionGroup } from '../../../sdk/training-config';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading, PageTitle } from '../components';
import { useEnvironmentCheckpoints } from '../environment-checkpoints';
import { cliCommand, flattenOverrides, nestOverrides, parseField } from './config-text';
import { formatParameters } from '../models/model-card';
import { MixEditor } from './mix-editor';
import { checkpointStartHint } from './start-hint';

const GROUPS = Object.entries(OPTION_GROUP_TITLES).map(([id, title]) => ({ id: id as OptionGroup, title }));

/** Model size presets for a new policy (the model group's options, filled in). */
const PRESETS: { id: string; label: string; model: Record<string, number> }[] = [
  { id: 'tiny', label: 'Tiny · 2 layers × 64 (0.1 M, minutes on a CPU)', model: { layers: 2, width: 64, heads: 4 } },
  { id: 'small', label: 'Small · 4 layers × 128 (0.8 M)', model: { layers: 4, width: 128, heads: 4 } },
  { id: 'medium', label: 'Medium · 6 layers × 256 (4.8 M, wants a GPU)', model: { layers: 6, width: 256, heads: 8 } },
];

const ALGO_LABEL: Record<Algorithm, string> = { grpo: 'GRPO', ppo: 'PPO', sft: 'SFT' };

function show(value: unknown): string {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * The experiment launcher: what to train, from where, every option of the algorithm with its
 * default and meaning (generated from sdk/training-config.ts, so the form and the API cannot
 * disagree), the scheduler's answer before submitting (jobs.preview), and the same run as a
 * command line and JSON.
 */
/** "Start from"'s value for an imported model, beside checkpoint ids. */
const MODEL_PREFIX = 'model:';

export function Launcher({ teamId }: { teamId: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const params = useSearchParams();
  const setParam = (k: string, v: string | null) => {
    const next = new URLSearchParams(params.toString());
    if (v === null) next.delete(k);
    else next.set(k, v);
    router.replace(`${pathname}?${next.toString()}`, { scroll: false });
  };

  // "Duplicate": a past run's config fills the form.
  const fromJobId = params.get('from');
  const fromJob = useQuery({ ...trpc.jobs.get.queryOptions({ teamId, jobId: fromJobId ?? '' }), enabled: !!fromJobId });
  const fromConfig = fromJob.data?.config as
    | { environmentVersionId?: string; datasetVersionId?: string; baseCheckpointId?: string; baseModelId?: string; saveAs?: string; tags?: string[]; training?: Record<string, unknown> }
    | undefined;

  const envs = useQuery(trpc.environments.list.queryOptions({ teamId }));
  const environmentId = params.get('environment') ?? envs.data?.[0]?.id ?? '';
  const env = useQuery({ ...trpc.environments.get.queryOptions({ teamId, environmentId }), enabled: !!environmentId });
  const versionId = params.get('version') ?? fromConfig?.environmentVersionId ?? env.data?.versions.find((v) => v.validationStatus === 'VALID')?.id ?? env.data?.versions[0]?.id ?? '';
  const version = useQuery({ ...trpc.environments.version.queryOptions({ teamId, versionId }), enabled: !!versionId });
  const splits = useQuery({ ...trpc.environments.datasets.queryOptions({ teamId, versionId }), enabled: !!versionId });
  const datasets = useQuery(trpc.datasets.list.queryOptions({ teamId }));
  const jobs = useQuery(trpc.jobs.list.queryOptions({ teamId, limit: 100 }));
  // The team's named checkpoints: offered first as what to start from.
  const bases = useQuery(trpc.runs.bases.queryOptions({ teamId }));
  // Imported pretrained models: the other kind of starting point.
  const models = useQuery(trpc.models.list.queryOptions({ teamId }));
  // The environment's sampler checkpoints: what the opponent mix offers as frozen opponents.
  const opponentCheckpoints = useEnvironmentCheckpoints(teamId, environmentId);

  const manifest = version.data?.manifest as { name?: string; agents?: string[]; training?: Record<string, unknown>; dataset?: { train?: string } } | undefined;
  const manifestTraining = manifest?.training;
  // The environment's bots, as its last dry run described them: what the opponent mix may name.
  const bots = (version.data?.validation as { description?: { bots?: string[] } | null } | null | undefined)?.description?.bots ?? [];
  const algorithm = (params.get('algo') as Algorithm | null) ?? (fromJob.data?.kind === 'SFT' ? 'sft' : ((manifestTraining?.algorithm as Algorithm | undefined) ?? 'grpo'));
  const docs = useMemo(() => describeOptions(algorithm), [algorithm]);

  // The form: text per option (empty = the manifest's value or the default).
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [startFrom, setStartFrom] = useState<string>('');
  const [preset, setPreset] = useState('');
  const [datasetVersionId, setDatasetVersionId] = useState('');
  const [priority, setPriority] = useState(0);
  const [deviceCount, setDeviceCount] = useState(1);
  const [timeLimitMinutes, setTimeLimitMinutes] = useState('');
  // Tags as typed: words apart by spaces or commas.
  const [tagsText, setTagsText] = useState('');
  const [saveAs, setSaveAs] = useState('');
  useEffect(() => {
    if (!fromConfig) return;
    const flat = flattenOverrides(fromConfig.training ?? {});
    setTexts(Object.fromEntries(Object.entries(flat).map(([k, v]) => [k, show(v)])));
    // A run from a checkpoint of a model names both: the checkpoint is where it starts.
    setStartFrom(fromConfig.baseCheckpointId ?? (fromConfig.baseModelId ? `${MODEL_PREFIX}${fromConfig.baseModelId}` : ''));
    // A duplicate does not take the base name over: the original run holds it already.
    setSaveAs('');
    setTagsText((fromConfig.tags ?? []).join(' '));
    setDatasetVersionId(fromConfig.datasetVersionId ?? '');
    setPriority(fromJob.data?.priority ?? 0);
  }, [fromConfig, fromJob.data?.priority]);
  const trainSplit = splits.data?.splits.find((s) => s.split === 'train');
  const datasetChoice = datasetVersionId || trainSplit?.latest?.id || '';

  const fieldErrors: Record<string, string> = {};
  const flat: Record<string, unknown> = {};
  for (const doc of docs) {
    const parsed = parseField(doc, texts[doc.name] ?? '');
    if (parsed.error) fieldErrors[doc.name] = `write ${parsed.error}`;
    else if (parsed.value !== undefined) flat[doc.name] = parsed.value;
  }
  const presetModel = PRESETS.find((p) => p.id === preset)?.model ?? {};
  for (const [k, v] of Object.entries(presetModel)) if (!(`model.${k}` in flat)) flat[`model.${k}`] = v;
  const overrides = { algorithm, ...nestOverrides(flat) };
  const resolved = resolveTraining(algorithm === 'sft' ? undefined : manifestTraining, overrides);
  if (!resolved.ok) {
    for (const p of resolved.problems) {
      const [path, ...rest] = p.split(': ');
      if (!fieldErrors[path]) fieldErrors[path] = rest.join(': ');
    }
  }
  const effective = resolved.ok ? (resolved.config as Record<string, unknown>) : null;
  const effectiveOf = (name: string) => (name.startsWith('model.') ? (effective?.model as Record<string, unknown> | undefined)?.[name.slice(6)] : effective?.[name]);

  const tags = tagsText.split(/[\s,]+/).filter(Boolean);
  const tagged = tags.length > 0 ? { tags } : {};
  // The submit's own check (sdk/job-config.ts), so the field says what is wrong as it is typed.
  const tagsCheck = runTagsSchema.safeParse(tags);
  const tagsError = tagsCheck.success ? null : tagsCheck.error.issues[0].message;
  const saveAsCheck = baseNameSchema.safeParse(saveAs);
  const saveAsError = saveAs === '' || saveAsCheck.success ? null : saveAsCheck.error.issues[0].message;
  const saved = saveAs !== '' && saveAsCheck.success ? { saveAs: saveAsCheck.data } : {};
  const kind = algorithm === 'sft' ? 'SFT' : 'TRAIN';
  const needsDataset = kind === 'SFT' || !!manifest?.dataset?.train;
  // "Start from" holds a checkpoint id, or an imported model's as `model:<id>`.
  const startModelId = startFrom.startsWith(MODEL_PREFIX) ? startFrom.slice(MODEL_PREFIX.length) : null;
  const start = startModelId ? { baseModelId: startModelId } : startFrom ? { baseCheckpointId: startFrom } : {};
  // What the chosen checkpoint holds (adapters or every weight, of which model), for the hint below.
  const startCheckpointId = startFrom && !startModelId ? startFrom : '';
  const contents = useQuery({ ...trpc.runs.checkpointContents.queryOptions({ teamId, checkpointId: startCheckpointId }), enabled: !!startCheckpointId, retry: false });
  const config =
    kind === 'SFT'
      ? { datasetVersionId: datasetChoice, ...start, ...saved, ...tagged, training: overrides }
      : {
          environmentVersionId: versionId,
          ...(needsDataset && datasetChoice ? { datasetVersionId: datasetChoice } : {}),
          ...start,
          ...saved,
          ...tagged,
          training: overrides,
        };
  const input = {
    teamId,
    kind: kind as 'TRAIN' | 'SFT',
    priority,
    deviceCount,
    ...(timeLimitMinutes ? { timeLimitSeconds: Math.round(Number(timeLimitMinutes) * 60) } : {}),
    config,
  };
  const formOk = Object.keys(fieldErrors).length === 0 && !tagsError && !saveAsError && !!versionId && (!needsDataset || !!datasetChoice);
  const deferredInput = useDeferredValue(JSON.stringify(input));
  const preview = useQuery({ ...trpc.jobs.preview.queryOptions(JSON.parse(deferredInput) as typeof input), enabled: formOk, staleTime: 2_000, retry: false });
  const previewFieldError = preview.data && !preview.data.ok && preview.data.field ? preview.data.field.replace(/^config\.training\.|^training\./, '') : null;

  const submit = useMutation(trpc.jobs.submit.mutationOptions({ onSuccess: (job) => router.push(`/teams/${teamId}/runs/${job.id}`) }));

  const baseOptions = (bases.data ?? []).map((b) => ({
    id: b.id,
    name: b.name,
    label: `${b.name} · step ${b.step}${b.training?.environment ? ` · ${b.training.environment.name} v${b.training.environment.version}` : b.training?.dataset ? ` · ${b.training.dataset.name}` : ''}`,
  }));
  const startBase = baseOptions.find((b) => b.id === startFrom);
  const modelOptions = (models.data ?? []).map((m) => ({ id: m.id, name: m.name, label: `${m.name} · ${m.card.family} · ${formatParameters(m.card.parameters)}` }));
  const startModel = modelOptions.find((m) => m.id === startModelId);
  const baseIds = new Set(baseOptions.map((b) => b.id));
  const checkpoints = (jobs.data ?? []).filter((j) => !j.checkpoints[0] || !baseIds.has(j.checkpoints[0].id)).flatMap((j) => (j.checkpoints[0] ? [{ id: j.checkpoints[0].id, label: `${j.kind.toLowerCase()} ${j.id.slice(0, 10)} · step ${j.checkpoints[0].step} · ${j.state.toLowerCase()}` }] : []));
  const datasetOptions = (datasets.data ?? []).flatMap((d) => (d.latest ? [{ id: d.latest.id, label: `${d.name} · v${d.latest.version} · ${d.latest.rowCount} rows` }] : []));
  const cli = cliCommand({
    environment: env.data?.name ?? manifest?.name ?? '<environment>',
    algorithm,
    overrides: flat,
    priority,
    tags,
    // A base by its name, which `--from` resolves, so the command reads as what was chosen.
    ...(startModelId ? { model: startModel?.name ?? startModelId } : startFrom ? { from: startBase?.name ?? startFrom } : {}),
    ...saved,
    ...(needsDataset && datasetVersionId ? { dataset: datasetVersionId } : {}),
  });
  const json = JSON.stringify({ kind, priority, deviceCount, config }, null, 2);

  if (envs.isPending) return <Loading label="Loading environments…" />;
  if (envs.isLoadingError) return <ErrorNote error={envs.error} />;
  if (envs.data.length === 0) return <p className="muted">No environments yet — create one from a template first.</p>;

  return (
    <div className="launcher">
      <PageTitle title="Launch a run" />
      <form
        className="launcher-grid"
        aria-label="Launch a run"
        onSubmit={(e) => {
          e.preventDefault();
          if (formOk) submit.mutate(input);
        }}
      >
        <div className="launcher-form">
          <section className="panel" aria-labelledby="what-title">
            <h2 id="what-title">What to train</h2>
            <div className="form-grid">
              <div className="field">
                <label htmlFor="l-env">Environment</label>
                <select id="l-env" value={environmentId} onChange={(e) => { setParam('environment', e.target.value); setParam('version', null); }}>
                  {envs.data.map((e) => (
                    <option key={e.id} value={e.id}>{e.name}</option>
                  ))}
                </select>
              </div>
              <div className="field">
                <label htmlFor="l-version">Version</label>
                <select id="l-version" value={versionId} onChange={(e) => setParam('version', e.target.value)}>
                  {env.data?.versions.map((v) => (
                    <option key={v.id} value={v.id}>
                      v{v.version} · {v.validationStatus.toLowerCase()}
                    </option>
                  ))}
                </select>
              </div>
              <fieldset className="field segmented">
                <legend>Algorithm</legend>
                <div>
                  {ALGORITHMS.map((a) => (
                    <label key={a} className={a === algorithm ? 'selected' : undefined}>
                      <input type="radio" name="algorithm" value={a} checked={a === algorithm} onChange={() => setParam('algo', a)} /> {ALGO_LABEL[a]}
                    </label>
                  ))}
                </div>
              </fieldset>
              {needsDataset ? (
                <div className="field">
                  <label htmlFor="l-dataset">{kind === 'SFT' ? 'Demonstrations (dataset)' : 'Training rows (dataset)'}</label>
                  <select id="l-dataset" value={datasetChoice} onChange={(e) => setDatasetVersionId(e.target.value)} aria-invalid={!datasetChoice}>
                    <option value="">Choose a dataset…</option>
                    {datasetOptions.map((d) => (
                      <option key={d.id} value={d.id}>{d.label}</option>
                    ))}
                  </select>
                  {!datasetChoice ? <span className="field-error">This run needs a dataset: upload one on the Datasets page.</span> : null}
                </div>
              ) : null}
              <div className="field">
                <label htmlFor="l-tags">Tags</label>
                <input id="l-tags" value={tagsText} placeholder="baseline lr-sweep" onChange={(e) => setTagsText(e.target.value)} aria-invalid={tagsError ? true : undefined} aria-describedby="l-tags-note" />
                <span id="l-tags-note" className={tagsError ? 'field-error' : 'hint'}>{tagsError ?? 'Words to find the run by in the runs list, apart by spaces.'}</span>
              </div>
              <div className="field">
                <label htmlFor="l-start">Start from</label>
                <select id="l-start" value={startFrom} onChange={(e) => setStartFrom(e.target.value)}>
                  <option value="">A new model</option>
                  {baseOptions.length > 0 ? (
                    <optgroup label="Bases">
                      {baseOptions.map((b) => (
                        <option key={b.id} value={b.id}>{b.label}</option>
                      ))}
                    </optgroup>
                  ) : null}
                  {modelOptions.length > 0 ? (
                    <optgroup label="Imported models">
                      {modelOptions.map((m) => (
                        <option key={m.id} value={`${MODEL_PREFIX}${m.id}`}>{m.label}</option>
                      ))}
                    </optgroup>
                  ) : null}
                  {checkpoints.length > 0 ? (
                    <optgroup label="Recent checkpoints">
                      {checkpoints.map((c) => (
                        <option key={c.id} value={c.id}>Checkpoint of {c.label}</option>
                      ))}
                    </optgroup>
                  ) : null}
                </select>
                <span className="hint">
                  {bases.isLoadingError
                    ? 'Bases could not be loaded; recent checkpoints are listed.'
                    : startModelId
                      ? 'LoRA adapters (rank 8, every linear layer) on the frozen model, through its own chat template; lora below changes them, false trains every weight.'
                      : startFrom
                        ? contents.data
                          ? checkpointStartHint(contents.data)
                          : 'Continues from the checkpoint’s weights: a checkpoint with LoRA adapters keeps training them (on its imported model); one without trains every weight unless lora below adds adapters.'
                        : 'Full-parameter training of a new policy of the size below.'}
                </span>
              </div>
              <div className="field">
                <label htmlFor="l-save-as">Save as base</label>
                <input id="l-save-as" value={saveAs} placeholder="optional, e.g. gomoku-9x9-bc" onChange={(e) => setSaveAs(e.target.value)} aria-invalid={saveAsError ? true : undefined} aria-describedby="l-save-as-note" />
                <span id="l-save-as-note" className={saveAsError ? 'field-error' : 'hint'}>
                  {saveAsError ?? 'When the run succeeds, its last checkpoint becomes a base of this name to start other runs from (a name already taken is left as it is).'}
                </span>
              </div>
              {!startFrom ? (
                <div className="field">
                  <label htmlFor="l-preset">Model size</label>
                  <select id="l-preset" value={preset} onChange={(e) => setPreset(e.target.value)}>
                    <option value="">As configured (see Model below)</option>
                    {PRESETS.map((p) => (
                      <option key={p.id} value={p.id}>{p.label}</option>
                    ))}
                  </select>
                </div>
              ) : null}
            </div>
          </section>

          {GROUPS.map((g) => {
            const inGroup = docs.filter((d) => d.group === g.id && !(startFrom && d.group === 'model'));
            if (inGroup.length === 0) return null;
            if (g.id === 'multi-agent' && (manifest?.agents?.length ?? 1) < 2) return null;
            const errorOf = (name: string) => fieldErrors[name] ?? (previewFieldError === name && preview.data && !preview.data.ok ? preview.data.message : undefined);
            if (g.id === 'multi-agent') {
              return (
                <section key={g.id} className="panel" aria-labelledby={`g-${g.id}`}>
                  <h2 id={`g-${g.id}`}>{g.title}</h2>
                  <MixEditor
                    agents={manifest?.agents ?? []}
                    bots={bots}
                    checkpoints={opponentCheckpoints}
                    learnersText={texts.learners ?? ''}
                    opponentsText={texts.opponents ?? ''}
                    manifestLearners={manifestTraining?.learners as string[] | undefined}
                    manifestOpponents={manifestTraining?.opponents as Record<string, number> | undefined}
                    errors={{ learners: errorOf('learners'), opponents: errorOf('opponents') }}
                    onChange={(name, t) => setTexts((c) => ({ ...c, [name]: t }))}
                  />
                </section>
              );
            }
            return (
              <section key={g.id} className="panel" aria-labelledby={`g-${g.id}`}>
                <h2 id={`g-${g.id}`}>{g.title}</h2>
                <div className="options">
                  {inGroup.map((doc) => (
                    <OptionField
                      key={doc.name}
                      doc={doc}
                      text={texts[doc.name] ?? ''}
                      effective={effectiveOf(doc.name)}
                      fromManifest={doc.name.startsWith('model.') ? undefined : manifestTraining?.[doc.name]}
                      error={errorOf(doc.name)}
                      onChange={(t) => setTexts((c) => ({ ...c, [doc.name]: t }))}
                    />
                  ))}
                </div>
              </section>
            );
          })}
        </div>

        <aside className="launcher-side">
          <section className="panel" aria-labelledby="res-title">
            <h2 id="res-title">Resources</h2>
            <div className="form-grid">
              <div className="field">
                <label htmlFor="l-priority">Priority</label>
                <input id="l-priority" type="number" min={0} value={priority} onChange={(e) => setPriority(Math.max(0, Math.floor(Number(e.target.value) || 0)))} />
              </div>
              <div className="field">
                <label htmlFor="l-devices">Devices</label>
                <input id="l-devices" type="number" min={1} max={64} value={deviceCount} onChange={(e) => setDeviceCount(Math.max(1, Math.floor(Number(e.target.value) || 1)))} />
              </div>
              <div className="field">
                <label htmlFor="l-time">Time limit (minutes)</label>
                <input id="l-time" type="number" min={1} placeholder="team default" value={timeLimitMinutes} onChange={(e) => setTimeLimitMinutes(e.target.value)} />
              </div>
            </div>
          </section>
          <section className="panel" aria-labelledby="sched-title" aria-live="polite">
            <h2 id="sched-title">The scheduler's answer</h2>
            {!formOk ? (
              <p className="muted">Fix the fields marked in red first.</p>
            ) : preview.isPending ? (
              <Loading label="Asking the scheduler…" />
            ) : preview.isLoadingError ? (
              <ErrorNote error={preview.error} />
            ) : preview.data.ok ? (
              <div className="placement">
                <p className={preview.data.placement.startsNow ? 'ok placement-line' : 'warn placement-line'}>
                  {preview.data.placement.startsNow ? <CheckCircle2 size={16} aria-hidden="true" /> : <Clock size={16} aria-hidden="true" />}
                  {preview.data.placement.reason}
                </p>
                {preview.data.estimate ? (
                  <p className="muted small">
                    Needs about {(preview.data.estimate.bytes / 2 ** 20).toFixed(0)} MB
                    {preview.data.estimate.largestDeviceBytes ? ` of ${(preview.data.estimate.largestDeviceBytes / 2 ** 30).toFixed(1)} GB on the largest device` : ''}.
                  </p>
                ) : null}
              </div>
            ) : (
              <p className="notice notice-error" role="alert">
                {preview.data.message}
              </p>
            )}
            <button type="submit" className="btn-primary btn-block" disabled={!formOk || submit.isPending || (preview.data ? !preview.data.ok : false)}>
              <Rocket size={16} aria-hidden="true" /> {submit.isPending ? 'Launching…' : `Launch ${ALGO_LABEL[algorithm]}`}
            </button>
            <ErrorNote error={submit.error} />
          </section>
          <section className="panel" aria-labelledby="cli-title">
            <h2 id="cli-title">Same run elsewhere</h2>
            <CopyBlock label="Command line" text={cli} />
            <CopyBlock label="Job JSON (jobs.submit)" text={json} />
          </section>
        </aside>
      </form>
    </div>
  );
}

function OptionField({
  doc,
  text,
  effective,
  fromManifest,
  error,
  onChange,
}: {
  doc: OptionDoc;
  text: string;
  effective: unknown;
  fromManifest: unknown;
  error?: string;
  onChange: (text: string) => void;
}) {
  const id = `opt-${doc.name}`;
  const changed = text.trim() !== '';
  const placeholder = show(fromManifest !== undefined ? fromManifest : doc.default);
  const origin = fromManifest !== undefined ? `manifest: ${show(fromManifest)} · default ${show(doc.default)}` : `default ${show(doc.default) || 'none'}`;
  return (
    <div className={`option${changed ? ' option-changed' : ''}${error ? ' option-error' : ''}`}>
      <label htmlFor={id} className="mono">
        {doc.name}
      </label>
      <div className="option-input">
        {doc.input.kind === 'boolean' || doc.input.kind === 'choice' ? (
          <select id={id} value={text} onChange={(e) => onChange(e.target.value)} aria-invalid={!!error} aria-describedby={`${id}-doc`}>
            <option value="">{placeholder} ({fromManifest !== undefined ? 'manifest' : 'default'})</option>
            {(doc.input.kind === 'boolean' ? ['true', 'false'] : doc.input.values).map((v) => (
              <option key={v} value={v}>{v}</option>
            ))}
          </select>
        ) : doc.input.kind === 'json' ? (
          <textarea id={id} value={text} rows={3} className="mono" placeholder={placeholder || 'null'} onChange={(e) => onChange(e.target.value)} aria-invalid={!!error} aria-describedby={`${id}-doc`} />
        ) : (
          <input
            id={id}
            value={text}
            inputMode={doc.input.kind === 'number' ? 'decimal' : undefined}
            placeholder={placeholder}
            onChange={(e) => onChange(e.target.value)}
            aria-invalid={!!error}
            aria-describedby={`${id}-doc`}
          />
        )}
        {changed ? (
          <button type="button" className="icon-button" onClick={() => onChange('')} aria-label={`Reset ${doc.name}`} title="Reset to the default">
            <RotateCcw size={14} aria-hidden="true" />
          </button>
        ) : null}
      </div>
      <p className="hint" id={`${id}-doc`}>
        {doc.description} <span className="muted">({origin}{effective !== undefined && changed ? `; this run: ${show(effective)}` : ''})</span>
      </p>
      {error ? <p className="field-error" role="alert">{error}</p> : null}
    </div>
  );
}

function CopyBlock({ label, text }: { label: string; text: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="copy-block">
      <div className="copy-head">
        <span className="small muted">{label}</span>
        <button
          type="button"
          className="btn-small"
          onClick={() => {
            void navigator.clipboard.writeText(text).then(() => {
              setCopied(true);
              setTimeout(() => setCopied(false), 1500);
            });
          }}
        >
          <Copy size={13} aria-hidden="true" /> {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      {/* Focusable: a long command or JSON scrolls, and the keyboard must reach it to scroll it. */}
      <pre className="code-sample" tabIndex={0} aria-label={label}>
        {text}
      </pre>
    </div>
  );
}
