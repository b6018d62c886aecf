'use client';
import { useQueries } from '@tanstack/react-query';
import { useMemo } from 'react';
import { CartesianGrid, ComposedChart, Line, Tooltip, XAxis, YAxis } from 'recharts';
import { useTRPC } from '../../trpc';
import { formatMetric } from '../runs/run-parts';
import { useEffectiveTheme } from '../theme';
import { staticDomain } from './axes';
import { chartColours, tooltipStyles } from './colours';
import { debiasedEma } from './smoothing';

/** Colours of runs compared: one per run, kept across every panel (Okabe–Ito, readable in both themes). */
export const RUN_COLOURS = ['#e69f00', '#56b4e9', '#009e73', '#cc79a7', '#d55e00', '#0072b2', '#a08c00', '#8c8c8c'];

const BUCKETS = 400;

/**
 * One metric of several runs: a line per run in the run's colour, smoothed as the run page
 * smooths, each from its own downsampled series; rows are merged by step.
 */
const AUTO = ['auto', 'auto'];

export function ComparePanel({ teamId, jobIds, metricKey, smoothing }: { teamId: string; jobIds: string[]; metricKey: string; smoothing: number }) {
  const trpc = useTRPC();
  const colours = chartColours(useEffectiveTheme());
  const results = useQueries({ queries: jobIds.map((jobId) => trpc.runs.series.queryOptions({ teamId, jobId, key: metricKey, buckets: BUCKETS })) });
  const datas = results.map((r) => r.data);
  const rows = useMemo(() => {
    const byStep = new Map<number, Record<string, number>>();
    datas.forEach((buckets, i) => {
      const finite = (buckets ?? []).filter((b) => Number.isFinite(b.last));
      const smooth = debiasedEma(
        finite.map((b) => b.last),
        smoothing,
      );
      finite.forEach((b, j) => {
        const row = byStep.get(b.toStep) ?? { step: b.toStep };
        row[`r${i}`] = smooth[j];
        byStep.set(b.toStep, row);
      });
    });
    return [...byStep.values()].sort((a, b) => a.step - b.step);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the series' data are the inputs; the array around them is new each render
  }, [smoothing, ...datas]);
  const yDomain = useMemo(() => staticDomain(rows.flatMap((r) => Object.entries(r).flatMap(([k, v]) => (k === 'step' ? [] : [v])))) ?? AUTO, [rows]);
  const pending = results.some((r) => r.isPending);
  return (
    <figure className="chart metric-panel" aria-label={`${metricKey}, runs compared`} data-metric={metricKey} data-runs={results.filter((r) => (r.data?.length ?? 0) > 0).length}>
      <figcaption className="metric-panel-head">
        <span className="metric-panel-title">{metricKey}</span>
      </figcaption>
      <div className="chart-box chart-box-small" aria-hidden="true">
        {pending ? null : rows.length === 0 ? (
          <p className="muted chart-empty">No run here reported {metricKey}.</p>
        ) : (
          <ComposedChart data={rows} style={{ width: '100%', height: '100%' }} responsive margin={{ top: 8, right: 12, bottom: 4, left: 0 }} accessibilityLayer={false}>
            <CartesianGrid stroke={colours.grid} strokeDasharray="3 3" />
            <XAxis dataKey="step" type="number" domain={['dataMin', 'dataMax']} allowDecimals={false} stroke={colours.text} tick={{ fill: colours.text, fontSize: 11 }} />
            <YAxis width={52} domain={yDomain} stroke={colours.text} tick={{ fill: colours.text, fontSize: 11 }} tickFormatter={(v: number) => formatMetric(v)} />
            <Tooltip
              isAnimationActive={false}
              {...tooltipStyles(colours)}
              labelFormatter={(step) => `step ${String(step)}`}
              formatter={(value, name) => [formatMetric(Number(value)), jobIds[Number(String(name).slice(1))]]}
            />
            {jobIds.map((id, i) => (
              <Line key={id} dataKey={`r${i}`} stroke={RUN_COLOURS[i % RUN_COLOURS.length]} strokeWidth={2} dot={false} connectNulls isAnimationActive={false} />
            ))}
          </ComposedChart>
        )}
      </div>
    </figure>
  );
}
