'use client';
import { useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useMemo } from 'react';
import { METRIC_GROUPS, metricGroup } from '../../../sdk/live';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading } from '../components';
import { useRunLive } from '../runs/run-live';
import { useUrlState } from '../url-state';
import type { Point } from './bucketing';
import { healthMarkers } from './health';
import { type ChartSettings, MetricPanel, type XMode } from './metric-panel';

/** The metrics the health rules read (health.ts). */
const HEALTH_KEYS = ['policy/kl', 'policy/entropy', 'episode/context_truncated', 'episode/count', 'reward/zero_variance_groups', 'loss/total', 'loss/policy', 'optim/grad_norm', 'optim/updates', 'optim/tokens'];
const GROUP_ORDER = Object.keys(METRIC_GROUPS);
const NO_POINTS: Point[] = [];
const noTime = () => null;

const X_MODES: Array<[XMode, string]> = [['step', 'Step'], ['relative', 'Relative time'], ['wall', 'Wall time']];

/** The chart settings in the URL: `smooth` (0–0.99), `log`, `zoom=from-to`, `x`, `q` (search). */
function settingsOf(params: URLSearchParams, origin: number | null): ChartSettings & { q: string } {
  const x = X_MODES.find(([m]) => m === params.get('x'))?.[0] ?? 'step';
  const smooth = Number(params.get('smooth') ?? '0.6');
  const zoom = /^(\d+)-(\d+)$/.exec(params.get('zoom') ?? '');
  const from = zoom ? Number(zoom[1]) : NaN;
  const to = zoom ? Number(zoom[2]) : NaN;
  return {
    smoothing: Number.isFinite(smooth) ? Math.min(0.99, Math.max(0, smooth)) : 0.6,
    log: params.get('log') === '1',
    zoom: Number.isFinite(from) && Number.isFinite(to) && from < to ? { from, to } : null,
    q: params.get('q') ?? '',
    x,
    origin,
  };
}

/** Health markers of the run from its series at full width, with the live points after them. */
function useHealth(teamId: string, jobId: string, keys: string[]) {
  const trpc = useTRPC();
  const live = useRunLive();
  const wanted = HEALTH_KEYS.filter((k) => keys.includes(k));
  const results = useQueries({ queries: wanted.map((key) => trpc.runs.series.queryOptions({ teamId, jobId, key, buckets: 2000 })) });
  const version = live?.version;
  const data = results.map((r) => r.data);
  return useMemo(() => {
    void version;
    const metrics: Record<string, Point[]> = {};
    wanted.forEach((key, i) => {
      const buckets = data[i] ?? [];
      const points = buckets.map((b) => ({ step: b.toStep, value: Number.isFinite(b.min) && Number.isFinite(b.max) ? b.last : Number.NaN }));
      const lastStep = points.length ? points[points.length - 1].step : -1;
      metrics[key] = [...points, ...(live?.points(key) ?? []).filter((p) => p.step > lastStep)];
    });
    return healthMarkers(metrics);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- data is a new array each render; its items are the stable parts
  }, [version, wanted.join(), ...data]);
}

/**
 * The run's charts: one panel per metric it reports, grouped by the key's prefix (sdk/live.ts)
 * in the catalogue's order, with a search box, smoothing, log scale and a zoom shared by every
 * panel (all in the URL, so a link shows the same view). Health markers sit on their panels;
 * each leads to its step's rollouts.
 */
export function RunCharts({ teamId, jobId, active, startedAt, totalSteps, onPickStep }: { teamId: string; jobId: string; active: boolean; startedAt: Date | string | null; totalSteps?: number | null; onPickStep: (step: number) => void }) {
  const trpc = useTRPC();
  const live = useRunLive();
  const { params, set } = useUrlState();
  const origin = startedAt ? new Date(startedAt).getTime() : null;
  const raw = settingsOf(params, origin);
  // One settings object while they stay the same, so panels that did not change skip their render.
  const settings = useMemo(() => raw, [raw.smoothing, raw.log, raw.zoom?.from, raw.zoom?.to, raw.x, raw.origin, raw.q]); // eslint-disable-line react-hooks/exhaustive-deps
  const onZoom = useCallback((z: { from: number; to: number }) => set({ zoom: `${z.from}-${z.to}` }), [set]);
  const timeOf = live?.timeOf ?? noTime;
  const keys = useQuery(trpc.runs.metricKeys.queryOptions({ teamId, jobId }));
  const names = useMemo(() => keys.data?.map((k) => k.key) ?? [], [keys.data]);
  const markers = useHealth(teamId, jobId, names);
  // A key first seen live (the first step, a new metric mid-run) brings the list again.
  const queryClient = useQueryClient();
  const unknown = live?.keys().some((k) => !names.includes(k)) ?? false;
  useEffect(() => {
    if (unknown && !keys.isFetching) void queryClient.invalidateQueries({ queryKey: trpc.runs.metricKeys.queryKey({ teamId, jobId }) });
  }, [unknown, keys.isFetching, queryClient, trpc, teamId, jobId]);

  if (keys.isPending) return <Loading label="Loading the run’s metrics…" />;
  if (keys.isLoadingError) return <ErrorNote error={keys.error} />;
  if (names.length === 0) {
    return (
      <div className="empty-state">
        <h2>No metrics yet</h2>
        <p className="muted">{active ? 'Charts appear here after the run’s first step; this page adds points as they come.' : 'This run reported no metrics.'}</p>
      </div>
    );
  }
  const q = settings.q.trim().toLowerCase();
  const shown = names.filter((k) => !q || k.toLowerCase().includes(q));
  const groups = new Map<string, string[]>();
  for (const k of shown) groups.set(metricGroup(k), [...(groups.get(metricGroup(k)) ?? []), k]);
  const ordered = [...groups].sort(([a], [b]) => (GROUP_ORDER.indexOf(a) + 1 || 99) - (GROUP_ORDER.indexOf(b) + 1 || 99) || a.localeCompare(b));

  return (
    <div className="run-charts">
      <div className="chart-toolbar" role="group" aria-label="Chart settings">
        <label className="inline-form small">
          <span className="muted">Search</span>
          <input type="search" value={settings.q} placeholder="reward, kl…" aria-label="Search metrics" onChange={(e) => set({ q: e.target.value }, { replace: true })} />
        </label>
        <label className="inline-form small">
          <span className="muted">Smoothing</span>
          <input type="range" min={0} max={0.99} step={0.01} value={settings.smoothing} aria-label="Smoothing" onChange={(e) => set({ smooth: e.target.value }, { replace: true })} />
          <span className="tabular">{settings.smoothing.toFixed(2)}</span>
        </label>
        <label className="inline-form small">
          <input type="checkbox" checked={settings.log} onChange={(e) => set({ log: e.target.checked ? '1' : null }, { replace: true })} />
          <span>Log scale</span>
        </label>
        <label className="inline-form small">
          <span className="muted">X axis</span>
          <select value={settings.x} onChange={(e) => set({ x: e.target.value === 'step' ? null : e.target.value }, { replace: true })}>
            {X_MODES.map(([m, label]) => (
              <option key={m} value={m}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <ZoomFields zoom={settings.zoom} onZoom={(z) => set({ zoom: z ? `${z.from}-${z.to}` : null })} />
      </div>
      {markers.length > 0 ? (
        <p className="muted small">
          {markers.length} health marker{markers.length === 1 ? '' : 's'} on the charts: each opens its step’s rollouts.
        </p>
      ) : null}
      {ordered.length === 0 ? <p className="muted">No metric matches “{settings.q}”.</p> : null}
      {ordered.map(([group, members]) => (
        <section key={group} className="chart-group" aria-labelledby={`group-${group}`}>
          <h2 id={`group-${group}`} className="chart-group-title">
            {(METRIC_GROUPS as Record<string, string>)[group] ?? group} <span className="muted small">{members.length}</span>
          </h2>
          <div className="chart-grid">
            {members.map((key) => (
              <MetricPanel
                key={key}
                teamId={teamId}
                jobId={jobId}
                metricKey={key}
                settings={settings}
                livePoints={live?.points(key) ?? NO_POINTS}
                timeOf={timeOf}
                onZoom={onZoom}
                markers={markers.filter((m) => m.key === key)}
                onMarker={onPickStep}
                totalSteps={totalSteps}
              />
            ))}
          </div>
        </section>
      ))}
    </div>
  );
}

/** The zoom as two step fields (the keyboard's way to brush) and a reset. */
function ZoomFields({ zoom, onZoom }: { zoom: ChartSettings['zoom']; onZoom: (zoom: ChartSettings['zoom']) => void }) {
  return (
    <form
      className="inline-form small"
      aria-label="Zoom to steps"
      onSubmit={(e) => {
        e.preventDefault();
        const form = new FormData(e.currentTarget);
        const from = Number(form.get('from'));
        const to = Number(form.get('to'));
        if (Number.isInteger(from) && Number.isInteger(to) && from < to) onZoom({ from, to });
      }}
    >
      <span className="muted">Steps</span>
      <input key={`f${zoom?.from}`} name="from" type="number" min={0} defaultValue={zoom?.from ?? ''} placeholder="from" aria-label="Zoom from step" className="input-narrow" />
      <input key={`t${zoom?.to}`} name="to" type="number" min={0} defaultValue={zoom?.to ?? ''} placeholder="to" aria-label="Zoom to step" className="input-narrow" />
      <button type="submit" className="btn btn-small">
        Zoom
      </button>
      {zoom ? (
        <button type="button" className="btn btn-small" onClick={() => onZoom(null)}>
          Reset zoom
        </button>
      ) : null}
    </form>
  );
}
