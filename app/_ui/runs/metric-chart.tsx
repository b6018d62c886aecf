'use client';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Area, CartesianGrid, ComposedChart, Line, Tooltip, XAxis, YAxis } from 'recharts';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading } from '../components';
import { useEffectiveTheme } from '../theme';
import { formatMetric } from './run-parts';
import { LIVE_REFETCH_MS } from './run-state';

/** Buckets asked of runs.series: about two per pixel of a chart this wide at most. */
const BUCKETS = 400;

const COLOURS = {
  light: { line: '#b45309', band: '#f59e0b', grid: '#e2e8f0', text: '#5b6b80', tooltip: '#ffffff', border: '#cbd5e1' },
  dark: { line: '#f0a73a', band: '#f0a73a', grid: '#2a313b', text: '#8e9aa8', tooltip: '#161b22', border: '#3d4651' },
};

/** The metric a run's page opens on: what the run is judged by. */
export function primaryMetric(kind: string, algorithm: string | null): string {
  if (kind === 'EVAL') return 'eval/score';
  if (kind === 'SFT' || algorithm === 'sft') return 'loss/total';
  return 'reward/mean';
}

/**
 * One metric of a run over its steps, downsampled by the server (runs.series: min, max and last
 * per bucket): the line through each bucket's last value and the band from min to max, so no
 * spike hides. A table of the same numbers sits under it. Part 2's charts add zoom and smoothing.
 */
export function MetricChart({ teamId, jobId, metric, active }: { teamId: string; jobId: string; metric: string; active: boolean }) {
  const trpc = useTRPC();
  const theme = useEffectiveTheme();
  const colours = COLOURS[theme];
  // Recharts measures the page: draw after mount, so the server's HTML and the first render agree.
  const [mounted, setMounted] = useState(false);
  useEffect(() => setMounted(true), []);
  const series = useQuery({ ...trpc.runs.series.queryOptions({ teamId, jobId, key: metric, buckets: BUCKETS }), refetchInterval: active ? LIVE_REFETCH_MS : false });

  if (series.isPending) return <Loading label={`Loading ${metric}…`} />;
  if (series.isError) return <ErrorNote error={series.error} />;
  const data = series.data
    .filter((b) => Number.isFinite(b.last) && Number.isFinite(b.min) && Number.isFinite(b.max))
    .map((b) => ({ step: b.toStep, last: b.last, band: [b.min, b.max] as [number, number], fromStep: b.fromStep, count: b.count }));
  if (data.length === 0) return <p className="muted">{active ? `No ${metric} yet: the first point comes after the run’s first step.` : `This run reported no ${metric}.`}</p>;
  const banded = data.some((d) => d.band[0] !== d.band[1]);
  return (
    <figure className="chart" aria-label={`${metric} by step`}>
      <div className="chart-box" aria-hidden="true">
        {mounted ? (
          <ComposedChart data={data} style={{ width: '100%', height: '100%' }} responsive margin={{ top: 8, right: 16, bottom: 4, left: 0 }} accessibilityLayer={false}>
            <CartesianGrid stroke={colours.grid} strokeDasharray="3 3" />
            <XAxis dataKey="step" type="number" domain={['dataMin', 'dataMax']} allowDecimals={false} stroke={colours.text} tick={{ fill: colours.text, fontSize: 12 }} />
            <YAxis width={56} stroke={colours.text} tick={{ fill: colours.text, fontSize: 12 }} tickFormatter={(v: number) => formatMetric(v)} domain={['auto', 'auto']} />
            <Tooltip
              contentStyle={{ background: colours.tooltip, border: `1px solid ${colours.border}`, borderRadius: 6, fontSize: 12 }}
              labelFormatter={(step) => `step ${String(step)}`}
              formatter={(value, name) => [Array.isArray(value) ? value.map((v) => formatMetric(Number(v))).join(' … ') : formatMetric(Number(value)), name === 'band' ? 'min … max' : metric]}
            />
            {banded ? <Area dataKey="band" stroke="none" fill={colours.band} fillOpacity={0.18} isAnimationActive={false} /> : null}
            <Line dataKey="last" stroke={colours.line} strokeWidth={2} dot={data.length < 40} isAnimationActive={false} />
          </ComposedChart>
        ) : null}
      </div>
      <figcaption className="chart-legend">
        <span>
          <span className="swatch" style={{ background: colours.line }} />
          {metric}
        </span>
        {banded ? (
          <span>
            <span className="swatch" style={{ background: colours.band, opacity: 0.4 }} />
            min … max per bucket
          </span>
        ) : null}
        <span className="tabular">last {formatMetric(data[data.length - 1].last)} at step {data[data.length - 1].step}</span>
      </figcaption>
      <details className="chart-table">
        <summary>The numbers as a table</summary>
        <div className="table-wrap" tabIndex={0}>
          <table className="table">
            <caption className="sr-only">{metric} by step</caption>
            <thead>
              <tr>
                <th scope="col">Steps</th>
                <th scope="col" className="num">Last</th>
                <th scope="col" className="num">Min</th>
                <th scope="col" className="num">Max</th>
              </tr>
            </thead>
            <tbody>
              {data.map((d) => (
                <tr key={d.step}>
                  <th scope="row" className="tabular">{d.fromStep === d.step ? d.step : `${d.fromStep}–${d.step}`}</th>
                  <td className="num">{formatMetric(d.last)}</td>
                  <td className="num">{formatMetric(d.band[0])}</td>
                  <td className="num">{formatMetric(d.band[1])}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
