'use client';
import { useQuery } from '@tanstack/react-query';
import { Download, Image as ImageIcon } from 'lucide-react';
import { memo, type PointerEvent, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Area, CartesianGrid, ComposedChart, Line, ReferenceArea, ReferenceLine, Tooltip, XAxis, YAxis } from 'recharts';
import { describeMetric } from '../../../sdk/live';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading } from '../components';
import { formatMetric } from '../runs/run-parts';
import { useEffectiveTheme } from '../theme';
import { roomyDomain, staticDomain } from './axes';
import { appendLive, type Bucket, type Point } from './bucketing';
import { chartColours, tooltipStyles } from './colours';
import { downloadCsv, downloadPng } from './export';
import type { HealthMarker } from './health';
import { HEALTH_LABELS } from './health';
import { LiveTail, LiveTailContext } from './live-tail';
import { debiasedEma } from './smoothing';

export interface ChartSettings {
  /** Debiased EMA weight, 0 (raw) to 0.99. */
  smoothing: number;
  log: boolean;
  /** Steps shown (brush zoom), or null for the whole run. */
  zoom: { from: number; to: number } | null;
  /** The x axis: step, seconds since the run started, or wall-clock time. */
  x: XMode;
  /** The run's start (ms), for relative time. */
  origin: number | null;
}

export type XMode = 'step' | 'relative' | 'wall';

const Y_AXIS_WIDTH = 52;
/** Markers listed under a panel; more are drawn on the chart and listed when zoomed in. */
const LISTED_MARKERS = 6;
const MARGIN_RIGHT = 12;
const CHART_STYLE = { width: '100%', height: '100%', userSelect: 'none' } as const;
const CHART_MARGIN = { top: 8, right: MARGIN_RIGHT, bottom: 4, left: 0 };
const X_DOMAIN = ['dataMin', 'dataMax'];
const Y_DOMAIN = ['auto', 'auto'];
const NO_DOMAIN = [NaN, NaN] as const;

const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });

function formatX(mode: XMode, x: number): string {
  if (mode === 'step') return String(x);
  if (mode === 'wall') return clock.format(new Date(x));
  return x < 120 ? `${Math.round(x)}s` : x < 7200 ? `${Math.round(x / 60)}m` : `${(x / 3600).toFixed(1)}h`;
}

/** Buckets for a plot this many pixels wide: one per pixel, so min and max make two points a pixel at most. */
function bucketsFor(width: number): number {
  return Math.min(2000, Math.max(50, Math.round(width)));
}

function useWidth<T extends HTMLElement>() {
  const ref = useRef<T>(null);
  const [width, setWidth] = useState(600);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const observer = new ResizeObserver(([entry]) => setWidth(Math.round(entry.contentRect.width / 100) * 100 || 600));
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return [ref, width] as const;
}

/** The index of the first item whose step is past `step` (items in step order). */
function upperBound(items: ReadonlyArray<{ step: number }>, step: number): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (items[mid].step <= step) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

interface Row {
  x: number;
  step: number;
  fromStep: number;
  last: number;
  smooth: number;
  band: [number, number];
}

/**
 * One metric of a run as a panel: the server's downsampled series for the steps in view (min,
 * max and last per bucket, asked again at full fidelity when the reader brushes a range), the
 * live points appended after it, the debiased EMA over the raw line (kept faint), the min..max
 * band, health markers (each a button to that step's rollouts), and CSV/PNG of what it shows.
 */
interface PanelProps {
  teamId: string;
  jobId: string;
  metricKey: string;
  settings: ChartSettings;
  /** The points that came live for this key (a new array only when they change). */
  livePoints: Point[];
  /** When a step arrived live (a stable function). */
  timeOf: (step: number) => number | null;
  onZoom: (zoom: { from: number; to: number }) => void;
  /** This panel's markers. */
  markers: HealthMarker[];
  onMarker: (step: number) => void;
  /** The run's last step, where known: a live x axis reaches no further. */
  totalSteps?: number | null;
}

/**
 * A panel renders again only when its own inputs change: a live frame that brought points for
 * other metrics leaves it alone (the page stays responsive while every metric streams).
 */
export const MetricPanel = memo(MetricPanelView, (a, b) =>
  a.teamId === b.teamId && a.jobId === b.jobId && a.metricKey === b.metricKey && a.settings === b.settings && a.livePoints === b.livePoints && a.totalSteps === b.totalSteps && JSON.stringify(a.markers) === JSON.stringify(b.markers),
);

function MetricPanelView({ teamId, jobId, metricKey, settings, livePoints, timeOf, onZoom, markers, onMarker, totalSteps }: PanelProps) {
  const trpc = useTRPC();
  const colours = chartColours(useEffectiveTheme());
  const [box, width] = useWidth<HTMLDivElement>();
  const buckets = bucketsFor(width);
  const { zoom } = settings;
  const series = useQuery({
    ...trpc.runs.series.queryOptions({ teamId, jobId, key: metricKey, buckets, fromStep: zoom?.from, toStep: zoom?.to }),
    placeholderData: (previous) => previous,
  });
  const [drag, setDrag] = useState<{ from: number; to: number } | null>(null);
  const [tableOpen, setTableOpen] = useState(false);
  const figure = useRef<HTMLElement>(null);

  // Live points in view (none after the range when zoomed into the past), in step order.
  const inRange = useMemo(() => (zoom ? livePoints.filter((p) => p.step >= zoom.from && p.step <= zoom.to) : livePoints), [livePoints, zoom]);
  // The live points up to `committed` are in recharts' data; later ones are the live tail
  // (live-tail.tsx), drawn over the chart without drawing the chart again. `drawn` trails
  // `committed` by two frames: recharts takes new data in an effect, after the frame that handed
  // it over, and the tail keeps those points drawn until it has.
  const newest = inRange.length > 0 ? inRange[inRange.length - 1].step : -Infinity;
  const newestRef = useRef(newest);
  newestRef.current = newest;
  const [committed, setCommitted] = useState(newest);
  const [drawn, setDrawn] = useState(newest);
  const live = !zoom && livePoints.length > 0;
  const cut = live ? committed : Infinity;
  const held = upperBound(inRange, cut);
  const commit = useCallback(() => setCommitted(newestRef.current), []);
  useEffect(() => {
    let frame = requestAnimationFrame(() => (frame = requestAnimationFrame(() => setDrawn(committed))));
    return () => cancelAnimationFrame(frame);
  }, [committed]);

  const xOf = useCallback(
    (step: number, at?: string | Date): number | null => {
      if (settings.x === 'step') return step;
      const t = at ? new Date(at).getTime() : timeOf(step);
      if (t === null) return null;
      return settings.x === 'wall' ? t : (t - (settings.origin ?? t)) / 1000;
    },
    [settings.x, settings.origin, timeOf],
  );
  const { rows, skipped, dropped } = useMemo(() => {
    const base: Bucket[] = series.data ?? [];
    const finite = base.filter((b) => Number.isFinite(b.last) && Number.isFinite(b.min) && Number.isFinite(b.max));
    const handed = inRange.slice(0, held);
    const merged = appendLive(finite, handed, buckets);
    const notFinite = base.length - finite.length + handed.filter((p) => !Number.isFinite(p.value)).length;
    // A log scale cannot draw zero or below.
    const shown = settings.log ? merged.filter((b) => b.min > 0) : merged;
    const smooth = debiasedEma(
      shown.map((b) => b.last),
      settings.smoothing,
    );
    const all = shown.map((b, i) => ({ x: xOf(b.toStep, b.at), step: b.toStep, fromStep: b.fromStep, last: b.last, smooth: smooth[i], band: [b.min, b.max] as [number, number] }));
    return {
      rows: all.filter((r): r is Row => r.x !== null),
      skipped: notFinite,
      dropped: merged.length - shown.length,
    };
    // `inRange` changes with every live point; the rows change only with the points handed to
    // recharts (`held` of them), so the chart is not drawn again for a point of the tail.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [series.data, held, zoom, buckets, settings.log, settings.smoothing, xOf]);

  // The tail: the live points after the last row recharts has drawn (from the row at `drawn`,
  // overlapping what was just handed over until recharts draws it), smoothed on from the rows.
  const tail = useMemo((): Array<Pick<Row, 'x' | 'step' | 'last' | 'smooth'>> => {
    if (!live || rows.length === 0 || newest <= rows[rows.length - 1].step) return [];
    const lastStep = rows[rows.length - 1].step;
    const anchorAt = Math.max(0, upperBound(rows, drawn) - 1);
    const anchor = rows[anchorAt];
    const placed = inRange.slice(upperBound(inRange, anchor.step)).flatMap((p) => {
      const x = Number.isFinite(p.value) && (!settings.log || p.value > 0) ? xOf(p.step) : null;
      return x === null ? [] : [{ x, step: p.step, last: p.value }];
    });
    const fresh = placed.filter((p) => p.step > lastStep);
    const smoothFresh = debiasedEma([...rows.map((r) => r.last), ...fresh.map((p) => p.last)], settings.smoothing).slice(rows.length);
    const smoothOfRow = new Map(rows.slice(anchorAt).map((r) => [r.step, r.smooth]));
    let k = 0;
    return [anchor, ...placed.map((p) => ({ ...p, smooth: p.step > lastStep ? smoothFresh[k++] : (smoothOfRow.get(p.step) ?? p.last) }))];
  }, [live, rows, newest, drawn, inRange, settings.log, settings.smoothing, xOf]);
  const tailing = tail.length > 1;
  useEffect(() => {
    // The tail is handed to recharts two seconds after it started, however fast points come (so
    // the tooltip and the table soon have its points).
    if (!tailing) return;
    const timer = setTimeout(commit, 2000);
    return () => clearTimeout(timer);
  }, [tailing, committed, commit]);

  // While points stream in, the x axis reaches a little past the newest one and the y axis a
  // little above and below the values, so the next points fit without moving the axes (a point
  // outside hands the tail over at once). A rising reward sets a new high with most points: with
  // the y axis drawn tight round the data, every one of them drew the whole chart again.
  const lo = rows[0]?.x ?? 0;
  const hi = rows[rows.length - 1]?.x ?? 0;
  // (At least 50 steps or 10 seconds: each hand-over draws the whole chart, and a run's first
  // steps, on a narrow axis, would hand over with nearly every point. Not past the run's last step.)
  const ahead = hi + Math.max((hi - lo) * 0.25, settings.x === 'step' ? 50 : settings.x === 'relative' ? 10 : 10_000);
  const xMax = !live ? hi : settings.x === 'step' && totalSteps && totalSteps > hi ? Math.min(ahead, totalSteps) : ahead;
  const xDomain = useMemo(() => (live ? ([dataMin]: readonly [number, number]): [number, number] => [dataMin, xMax] : X_DOMAIN), [live, xMax]);
  const values = useMemo(() => rows.flatMap((r) => [r.last, r.smooth, r.band[0], r.band[1]]), [rows]);
  const [yLo, yHi] = settings.log ? NO_DOMAIN : live ? roomyDomain(values) : (staticDomain(values) ?? NO_DOMAIN);
  const yDomain = useMemo(() => (Number.isFinite(yLo) ? [yLo, yHi] : Y_DOMAIN), [yLo, yHi]);
  const xFromPointer = (e: PointerEvent<HTMLElement>): number | null => {
    if (rows.length < 2) return null;
    const rect = e.currentTarget.getBoundingClientRect();
    const share = (e.clientX - rect.left - Y_AXIS_WIDTH) / (rect.width - Y_AXIS_WIDTH - MARGIN_RIGHT);
    if (share < 0 || share > 1) return null;
    return lo + share * (xMax - lo);
  };
  const stepAt = (x: number) => rows.find((r) => r.x >= x)?.step ?? rows[rows.length - 1]?.step;
  const xAt = (step: number) => rows.find((r) => r.step >= step)?.x ?? rows[rows.length - 1]?.x;

  const info = describeMetric(metricKey);
  const title = metricKey;
  // The markers over the steps in view (a zoom lists the ones it shows).
  const mine = zoom ? markers.filter((m) => (m.toStep ?? m.step) >= zoom.from && m.step <= zoom.to) : markers;
  const banded = rows.some((r) => r.band[0] !== r.band[1]);
  const smoothing = settings.smoothing > 0;

  // Recharts 3 keeps each child's props in its store, and a prop that is a new object or function
  // on every render (a tick style, a formatter) is stored again, and the chart drawn again, each
  // live frame: these stay the same while their inputs do.
  const axis = useMemo(() => ({ stroke: colours.text, tick: { fill: colours.text, fontSize: 11 } }), [colours.text]);
  const formatXTick = useCallback((v: number) => formatX(settings.x, v), [settings.x]);
  const tooltip = useMemo(
    () => ({
      ...tooltipStyles(colours),
      labelFormatter: (x: unknown, payload: ReadonlyArray<{ payload?: unknown }>) => {
        const row = payload[0]?.payload as Row | undefined;
        return settings.x === 'step' ? `step ${String(x)}` : `step ${row?.step ?? '?'} · ${formatX(settings.x, Number(x))}`;
      },
      formatter: (value: unknown, name: unknown): [string, string] => [
        Array.isArray(value) ? value.map((v) => formatMetric(Number(v))).join(' … ') : formatMetric(Number(value)),
        name === 'band' ? 'min … max' : name === 'smooth' ? 'smoothed' : 'value',
      ],
    }),
    [colours, settings.x],
  );

  // The chart as one element, made again only when what recharts draws changes: a render of the
  // panel for a point of the live tail gives React the same element, and it leaves the chart be.
  const markerKey = JSON.stringify(mine);
  const chart = useMemo(
    () =>
      rows.length === 0 ? null : (
        <ComposedChart data={rows} style={CHART_STYLE} responsive margin={CHART_MARGIN} accessibilityLayer={false}>
          <CartesianGrid stroke={colours.grid} strokeDasharray="3 3" />
          <XAxis dataKey="x" type="number" domain={xDomain} allowDecimals={settings.x !== 'step'} stroke={axis.stroke} tick={axis.tick} tickFormatter={formatXTick} />
          <YAxis width={Y_AXIS_WIDTH} scale={settings.log ? 'log' : 'auto'} domain={yDomain} stroke={axis.stroke} tick={axis.tick} tickFormatter={formatMetric} allowDataOverflow={settings.log} />
          <Tooltip isAnimationActive={false} contentStyle={tooltip.contentStyle} itemStyle={tooltip.itemStyle} labelStyle={tooltip.labelStyle} labelFormatter={tooltip.labelFormatter} formatter={tooltip.formatter} />
          {banded ? <Area dataKey="band" stroke="none" fill={colours.band} fillOpacity={0.16} isAnimationActive={false} /> : null}
          <Line dataKey="last" stroke={colours.line} strokeOpacity={smoothing ? 0.3 : 1} strokeWidth={smoothing ? 1 : 2} dot={rows.length < 40 && !smoothing} isAnimationActive={false} />
          {smoothing ? <Line dataKey="smooth" stroke={colours.line} strokeWidth={2} dot={false} isAnimationActive={false} /> : null}
          {mine.map((m) =>
            m.toStep === undefined ? (
              <ReferenceLine key={`${m.kind}-${m.step}`} x={xAt(m.step)} stroke={colours.marker} strokeDasharray="4 2" />
            ) : (
              <ReferenceArea key={`${m.kind}-${m.step}`} x1={xAt(m.step)} x2={xAt(m.toStep)} fill={colours.marker} fillOpacity={0.08} />
            ),
          )}
          {drag ? <ReferenceArea x1={drag.from} x2={drag.to} fill={colours.line} fillOpacity={0.12} /> : null}
          <LiveTail />
        </ComposedChart>
      ),
    // `mine` and `xAt` are read through `markerKey` and `rows`.
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [rows, xDomain, yDomain, colours, settings.x, settings.log, axis, formatXTick, tooltip, banded, smoothing, markerKey, drag],
  );
  const tailValue = useMemo(() => ({ points: tail, smoothing, colour: colours.line, xMax, onOverflow: commit }), [tail, smoothing, colours.line, xMax, commit]);

  let body;
  if (series.isPending) body = <Loading label={`Loading ${metricKey}…`} />;
  else if (series.isLoadingError) body = <ErrorNote error={series.error} />;
  else if (rows.length === 0)
    body = <p className="muted chart-empty">{zoom ? `No ${metricKey} between steps ${zoom.from} and ${zoom.to}.` : `No ${metricKey} points yet: they come after the run’s first step.`}</p>;
  else body = <LiveTailContext.Provider value={tailValue}>{chart}</LiveTailContext.Provider>;

  // What the panel shows, the tail's points after the rows (each step once).
  const shownRows: Row[] = useMemo(
    () => (tail.length > 1 ? [...rows, ...tail.filter((p) => p.step > rows[rows.length - 1].step).map((p) => ({ ...p, fromStep: p.step, band: [p.last, p.last] as [number, number] }))] : rows),
    [rows, tail],
  );
  const last = shownRows[shownRows.length - 1];
  return (
    <figure ref={figure} className="chart metric-panel" aria-label={`${metricKey} by ${settings.x === 'step' ? 'step' : 'time'}`} data-metric={metricKey} data-points={shownRows.length} data-last-step={last?.step ?? ''}>
      <figcaption className="metric-panel-head">
        <span className="metric-panel-title" title={info?.description ?? metricKey}>
          {title}
        </span>
        <span className="tabular muted small">{last ? `${formatMetric(last.last)} at step ${last.step}` : ''}</span>
        <span className="metric-panel-tools">
          <button type="button" className="btn btn-ghost btn-icon" aria-label={`Download ${metricKey} as CSV`} title="CSV" disabled={rows.length === 0} onClick={() => downloadCsv(metricKey, shownRows)}>
            <Download size={14} aria-hidden="true" />
          </button>
          <button type="button" className="btn btn-ghost btn-icon" aria-label={`Download ${metricKey} as PNG`} title="PNG" disabled={rows.length === 0} onClick={() => figure.current && void downloadPng(metricKey, figure.current, colours.background)}>
            <ImageIcon size={14} aria-hidden="true" />
          </button>
        </span>
      </figcaption>
      <div
        className="chart-box chart-box-small"
        ref={box}
        aria-hidden="true"
        // The brush: a drag across the plot, read from the pointer's position over the plot area
        // (between the y axis and the right margin, drawn from the first row's x to the last's).
        onPointerDown={(e) => {
          const x = xFromPointer(e);
          if (x === null) return;
          e.currentTarget.setPointerCapture(e.pointerId);
          setDrag({ from: x, to: x });
        }}
        onPointerMove={(e) => {
          const x = drag ? xFromPointer(e) : null;
          if (drag && x !== null) setDrag({ ...drag, to: x });
        }}
        onPointerUp={() => {
          // The brush is in the axis' units; the zoom is in steps (what runs.series is asked for).
          const from = drag ? stepAt(Math.min(drag.from, drag.to)) : undefined;
          const to = drag ? stepAt(Math.max(drag.from, drag.to)) : undefined;
          if (from !== undefined && to !== undefined && from < to) onZoom({ from, to });
          setDrag(null);
        }}
        onPointerCancel={() => setDrag(null)}
      >
        {body}
      </div>
      {skipped > 0 || dropped > 0 ? (
        <p className="muted small chart-note">
          {skipped > 0 ? `${skipped} point${skipped === 1 ? '' : 's'} not a finite number (NaN or ±Infinity), left out. ` : ''}
          {dropped > 0 ? `${dropped} at zero or below, not drawn on the log scale.` : ''}
        </p>
      ) : null}
      {mine.length > 0 ? (
        <ul className="health-markers" aria-label={`Health markers on ${metricKey}`}>
          {mine.slice(0, LISTED_MARKERS).map((m) => (
            <li key={`${m.kind}-${m.step}`}>
              <button type="button" className="btn btn-ghost small" title={m.message} onClick={() => onMarker(m.step)}>
                ⚠ {HEALTH_LABELS[m.kind]} {m.toStep === undefined ? `at step ${m.step}` : `at steps ${m.step}–${m.toStep}`}
              </button>
            </li>
          ))}
          {mine.length > LISTED_MARKERS ? <li className="muted small">and {mine.length - LISTED_MARKERS} more on the chart (zoom in to list them)</li> : null}
        </ul>
      ) : null}
      <details className="chart-table" onToggle={(e) => setTableOpen(e.currentTarget.open)}>
        <summary>The numbers as a table</summary>
        {/* Drawn only while open: a closed table of every panel would cost the page each live frame. */}
        {tableOpen ? <div className="table-wrap" tabIndex={0}>
          <table className="table" aria-label={`${metricKey} by step, as numbers`}>
            <thead>
              <tr>
                <th scope="col">Steps</th>
                <th scope="col" className="num">Last</th>
                <th scope="col" className="num">Smoothed</th>
                <th scope="col" className="num">Min</th>
                <th scope="col" className="num">Max</th>
              </tr>
            </thead>
            <tbody>
              {shownRows.map((d) => (
                <tr key={d.step} data-step={d.step} data-from-step={d.fromStep}>
                  <th scope="row" className="tabular">{d.fromStep === d.step ? d.step : `${d.fromStep}–${d.step}`}</th>
                  <td className="num">{formatMetric(d.last)}</td>
                  <td className="num">{formatMetric(d.smooth)}</td>
                  <td className="num">{formatMetric(d.band[0])}</td>
                  <td className="num">{formatMetric(d.band[1])}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div> : null}
      </details>
    </figure>
  );
}
