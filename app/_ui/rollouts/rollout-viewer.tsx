'use client';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useMemo, useRef } from 'react';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading } from '../components';
import { formatMetric } from '../runs/run-parts';
import { useRunLive } from '../runs/run-live';
import { useUrlState } from '../url-state';
import { FLAG_LABELS, groupOf, type SampleFlag, sampleFlags, segmentsOf, taskOf } from './rollout-flags';

export type Colouring = 'mask' | 'advantage' | 'logprob';

export interface Sample {
  id: bigint | string | number;
  step: number;
  agent: string;
  index: number;
  reward: number;
  turnRewards: unknown;
  endReason: string | null;
  segments: unknown;
  info: unknown;
}

const numberParam = (v: string | null): number | undefined => (v === null || v === '' || !Number.isFinite(Number(v)) ? undefined : Number(v));

/**
 * Group-normalised advantage of each sample (GRPO's: reward minus its group's mean, over the
 * group's standard deviation; 0 for a group of one or of equal rewards), keyed `${step}:${index}`.
 */
function advantages(samples: readonly Sample[]): Map<string, number> {
  const groups = new Map<string, number[]>();
  for (const s of samples) {
    const g = groupOf(s) ?? `${s.step}:all`;
    groups.set(g, [...(groups.get(g) ?? []), s.reward]);
  }
  const out = new Map<string, number>();
  for (const s of samples) {
    const r = groups.get(groupOf(s) ?? `${s.step}:all`)!;
    const mean = r.reduce((a, b) => a + b, 0) / r.length;
    const std = Math.sqrt(r.reduce((a, b) => a + (b - mean) ** 2, 0) / r.length);
    out.set(`${s.step}:${s.index}`, std > 0 ? (s.reward - mean) / std : 0);
  }
  return out;
}

/**
 * The run's rollouts: the samples of a step (the newest by default, following the run while it
 * trains) or of one task across steps, filtered by reward range and end reason, as a virtualised
 * list; the chosen sample's transcript beside it with the policy's (trainable) tokens and the
 * environment's in different colours, tool turns set apart, rewards and the end reason, and
 * flags for suspect samples. Everything chosen is in the URL (`rstep`, `task`, `rmin`, `rmax`,
 * `end`, `sample`, `colour`).
 */
export function RolloutViewer({ teamId, jobId }: { teamId: string; jobId: string }) {
  const trpc = useTRPC();
  const live = useRunLive();
  const { params, set } = useUrlState();
  const step = numberParam(params.get('rstep'));
  const task = params.get('task') ?? undefined;
  const minReward = numberParam(params.get('rmin'));
  const maxReward = numberParam(params.get('rmax'));
  const endReason = params.get('end') || undefined;
  const colouring: Colouring = params.get('colour') === 'advantage' ? 'advantage' : params.get('colour') === 'logprob' ? 'logprob' : 'mask';
  const query = useQuery({
    ...trpc.runs.rollouts.queryOptions({ teamId, jobId, step, task, minReward, maxReward, endReason, limit: 200 }),
    placeholderData: keepPreviousData,
  });
  // Following the newest step: a new step seen live asks again.
  const liveStep = live?.rolloutStep ?? null;
  const { refetch } = query;
  useEffect(() => {
    if (liveStep !== null && step === undefined && task === undefined) void refetch();
  }, [liveStep, step, task, refetch]);

  const samples = useMemo(() => (query.data?.samples ?? []) as Sample[], [query.data]);
  const flags = useMemo(() => sampleFlags(samples), [samples]);
  const adv = useMemo(() => advantages(samples), [samples]);
  const selectedKey = params.get('sample');
  const selected = samples.find((s) => `${s.step}:${s.index}` === selectedKey) ?? samples[0];

  const list = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({ count: samples.length, getScrollElement: () => list.current, estimateSize: () => 56, overscan: 8 });

  if (query.isPending) return <Loading label="Loading rollouts…" />;
  if (query.isLoadingError) return <ErrorNote error={query.error} />;
  const data = query.data;
  const ends = [...new Set(samples.map((s) => s.endReason).filter((e): e is string => e !== null)), ...(endReason ? [endReason] : [])];

  return (
    <div className="rollouts">
      <form className="chart-toolbar" aria-label="Filter rollouts" onSubmit={(e) => e.preventDefault()}>
        {task === undefined ? (
          <label className="inline-form small">
            <span className="muted">Step</span>
            <input
              type="number"
              min={0}
              className="input-narrow"
              aria-label="Step"
              placeholder={data.latestStep === null ? '' : 'newest'}
              value={step ?? ''}
              onChange={(e) => set({ rstep: e.target.value, sample: null }, { replace: true })}
            />
          </label>
        ) : (
          <span className="inline-form small">
            <span className="muted">Same task across steps:</span> <code className="task-chip">{task}</code>
            <button type="button" className="btn btn-small" onClick={() => set({ task: null, sample: null })}>
              Back to one step
            </button>
          </span>
        )}
        <label className="inline-form small">
          <span className="muted">Reward from</span>
          <input type="number" step="any" className="input-narrow" aria-label="Lowest reward" value={minReward ?? ''} onChange={(e) => set({ rmin: e.target.value }, { replace: true })} />
        </label>
        <label className="inline-form small">
          <span className="muted">to</span>
          <input type="number" step="any" className="input-narrow" aria-label="Highest reward" value={maxReward ?? ''} onChange={(e) => set({ rmax: e.target.value }, { replace: true })} />
        </label>
        <label className="inline-form small">
          <span className="muted">Ended by</span>
          <select value={endReason ?? ''} aria-label="End reason" onChange={(e) => set({ end: e.target.value })}>
            <option value="">any reason</option>
            {ends.map((e) => (
              <option key={e} value={e}>
                {e}
              </option>
            ))}
          </select>
        </label>
        <fieldset className="inline-form small">
          <legend className="muted">Colour policy tokens by</legend>
          <label>
            <input type="radio" name="colour" checked={colouring === 'mask'} onChange={() => set({ colour: null }, { replace: true })} /> loss mask
          </label>
          <label>
            <input type="radio" name="colour" checked={colouring === 'advantage'} onChange={() => set({ colour: 'advantage' }, { replace: true })} /> advantage
          </label>
          <label>
            <input type="radio" name="colour" checked={colouring === 'logprob'} onChange={() => set({ colour: 'logprob' }, { replace: true })} /> token probability
          </label>
        </fieldset>
      </form>

      {samples.length === 0 ? (
        <div className="empty-state">
          <h2>No rollouts {data.latestStep === null ? 'yet' : 'match'}</h2>
          <p className="muted">
            {data.latestStep === null ? 'Samples of each step appear here once the run has played its first step.' : 'No sample of this step matches the filters: widen the reward range or choose another end reason.'}
          </p>
        </div>
      ) : (
        <div className="rollout-split">
          <div ref={list} className="rollout-list" role="listbox" aria-label={task === undefined ? `Samples of step ${data.step}` : 'Samples of this task'} tabIndex={0}
            onKeyDown={(e) => {
              if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
              e.preventDefault();
              const at = selected ? samples.indexOf(selected) : -1;
              const next = samples[Math.min(samples.length - 1, Math.max(0, at + (e.key === 'ArrowDown' ? 1 : -1)))];
              set({ sample: `${next.step}:${next.index}` }, { replace: true });
              virtual.scrollToIndex(samples.indexOf(next));
            }}
          >
            <div style={{ height: virtual.getTotalSize(), position: 'relative' }}>
              {virtual.getVirtualItems().map((row) => {
                const s = samples[row.index];
                const key = `${s.step}:${s.index}`;
                const f = flags.get(key) ?? [];
                return (
                  <div
                    key={key}
                    role="option"
                    aria-selected={s === selected}
                    className={`rollout-item ${s === selected ? 'selected' : ''}`}
                    style={{ position: 'absolute', top: 0, left: 0, right: 0, transform: `translateY(${row.start}px)`, height: row.size }}
                    onClick={() => set({ sample: key }, { replace: true })}
                  >
                    <span className="rollout-item-head">
                      <span className="tabular">
                        step {s.step} · #{s.index}
                        {s.agent !== 'agent' ? ` · ${s.agent}` : ''}
                      </span>
                      <span className={`tabular rollout-reward ${s.reward > 0 ? 'good' : s.reward < 0 ? 'bad' : ''}`}>{formatMetric(s.reward)}</span>
                    </span>
                    <span className="muted small">
                      {s.endReason ?? 'ended'}
                      {f.length > 0 ? <span className="rollout-flag-dot" title={f.map((x) => FLAG_LABELS[x]).join('; ')}> ⚠ {f.length}</span> : null}
                    </span>
                  </div>
                );
              })}
            </div>
          </div>
          {selected ? (
            <Transcript
              sample={selected}
              flags={flags.get(`${selected.step}:${selected.index}`) ?? []}
              advantage={adv.get(`${selected.step}:${selected.index}`) ?? 0}
              colouring={colouring}
              onSameTask={task === undefined && taskOf(selected) !== null ? () => set({ task: taskOf(selected), rstep: null, sample: null }) : undefined}
            />
          ) : null}
        </div>
      )}
    </div>
  );
}

/**
 * A token's probability as a background: none when the policy was sure of it, red growing as it
 * was less likely (a sampled surprise, where learning or collapse shows first).
 */
function probabilityStyle(logprob: number) {
  const doubt = 1 - Math.exp(logprob);
  return { background: `color-mix(in srgb, var(--bad) ${Math.round(doubt * 55)}%, transparent)` };
}

/** Advantage as a background: blue for better than its group, red for worse, stronger further out. */
function advantageStyle(a: number) {
  const strength = Math.min(1, Math.abs(a) / 2);
  const hue = a >= 0 ? 'var(--info)' : 'var(--bad)';
  return { background: `color-mix(in srgb, ${hue} ${Math.round(10 + strength * 40)}%, transparent)` };
}

export function Transcript({ sample, flags, advantage, colouring, onSameTask }: { sample: Sample; flags: SampleFlag[]; advantage: number; colouring: Colouring; onSameTask?: () => void }) {
  const segments = segmentsOf(sample);
  const turnRewards = Array.isArray(sample.turnRewards) ? sample.turnRewards.filter((r): r is number => typeof r === 'number') : [];
  const task = taskOf(sample);
  return (
    <article className="transcript" aria-label={`Sample ${sample.index} of step ${sample.step}`}>
      <header className="transcript-head">
        <h3>
          Step {sample.step}, sample #{sample.index}
        </h3>
        <dl className="facts-row small">
          <div className="fact">
            <dt>Reward</dt>
            <dd className="tabular">{formatMetric(sample.reward)}</dd>
          </div>
          <div className="fact">
            <dt>Advantage</dt>
            <dd className="tabular">{formatMetric(advantage)}</dd>
          </div>
          <div className="fact">
            <dt>Ended by</dt>
            <dd>{sample.endReason ?? '—'}</dd>
          </div>
          {turnRewards.length > 0 ? (
            <div className="fact">
              <dt>Per turn</dt>
              <dd className="tabular">{turnRewards.map((r) => formatMetric(r)).join(' · ')}</dd>
            </div>
          ) : null}
        </dl>
        {task !== null ? (
          <p className="small">
            <span className="muted">Task</span> <code className="task-chip">{task}</code>{' '}
            {onSameTask ? (
              <button type="button" className="btn btn-small" onClick={onSameTask}>
                Same task across steps
              </button>
            ) : null}
          </p>
        ) : null}
        {flags.length > 0 ? (
          <ul className="rollout-flags" aria-label="Suspect sample">
            {flags.map((f) => (
              <li key={f} className="badge badge-warn">
                {FLAG_LABELS[f]}
              </li>
            ))}
          </ul>
        ) : null}
        <p className="legend small">
          <span className="seg seg-policy">policy (trained on)</span> <span className="seg seg-env">environment (not trained on)</span> <span className="seg seg-env seg-tool">tool</span>
          {colouring === 'logprob' ? (
            <>
              {' '}
              · <span className="seg-token" style={probabilityStyle(Math.log(0.2))}>unlikely</span> to <span className="seg-token">sure</span>: each policy token by the probability it was sampled with
              {segments.some((s) => s.trainable && !s.tokens) ? ' (not stored for this sample)' : ''}
            </>
          ) : null}
        </p>
      </header>
      <div className="transcript-body" tabIndex={0} aria-label="Transcript">
        {segments.length === 0 ? <p className="muted">This sample has no transcript.</p> : null}
        {segments.map((seg, i) => (
          <span
            key={i}
            className={`seg ${seg.trainable ? 'seg-policy' : 'seg-env'} ${seg.role === 'tool' ? 'seg-tool' : ''}`}
            data-trainable={seg.trainable}
            data-role={seg.role}
            title={`${seg.role}${seg.trainable ? ', trained on' : ', not trained on'}`}
            style={seg.trainable && colouring === 'advantage' ? advantageStyle(advantage) : undefined}
          >
            {seg.trainable && colouring === 'logprob' && seg.tokens
              ? seg.tokens.map((t, k) => (
                  <span key={k} className="seg-token" data-logprob={t.logprob.toFixed(3)} title={`p = ${Math.exp(t.logprob).toFixed(3)} (log-prob ${t.logprob.toFixed(2)})`} style={probabilityStyle(t.logprob)}>
                    {t.text}
                  </span>
                ))
              : seg.text}
          </span>
        ))}
      </div>
    </article>
  );
}
