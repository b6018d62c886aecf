'use client';
import { createContext, useContext, useLayoutEffect } from 'react';
import { usePlotArea, useXAxisScale, useYAxisScale } from 'recharts';

/**
 * The live tail of a panel: the points that came over socket.io since the chart's data was last
 * handed to recharts, drawn as a short path over the chart with the chart's own scales.
 *
 * Why: recharts draws a whole panel again (axes, grid, every point of the line and the band) for
 * each change of its data, and at 50 points a second that was most of the page's main thread. The
 * panel hands its data to recharts every two seconds, or at once when a new point falls outside
 * the axes' domains (then the axes must move); in between only this path is drawn again.
 */
export interface TailPoint {
  x: number;
  last: number;
  smooth: number;
}

export interface LiveTailValue {
  /** The last point the chart itself draws (the tail starts there), then the tail's points. */
  points: TailPoint[];
  smoothing: boolean;
  colour: string;
  /** The x axis' domain as the panel set it (the tail must stay inside it). */
  xMax: number;
  /** Asked when a tail point falls outside the chart's domains: the panel hands its data to recharts. */
  onOverflow: () => void;
}

export const LiveTailContext = createContext<LiveTailValue | null>(null);

/**
 * A child of the recharts chart (it reads the chart's scales and plot area), re-rendered on its
 * own when the tail changes: the chart around it is a memoised element the panel does not render
 * again for a new live point.
 */
export function LiveTail() {
  const tail = useContext(LiveTailContext);
  const xScale = useXAxisScale();
  const yScale = useYAxisScale();
  const area = usePlotArea();
  const points = tail?.points ?? [];
  const placed = points.map((p) => ({ x: xScale?.(p.x), last: yScale?.(p.last), smooth: yScale?.(p.smooth) }));
  const inside = (v: number | undefined, lo: number, hi: number) => v !== undefined && Number.isFinite(v) && v >= lo - 0.5 && v <= hi + 0.5;
  const fits =
    !!area &&
    points.every((p) => p.x <= (tail?.xMax ?? -Infinity)) &&
    placed.every((p) => inside(p.x, area.x, area.x + area.width) && inside(p.last, area.y, area.y + area.height) && (!tail?.smoothing || inside(p.smooth, area.y, area.y + area.height)));
  const overflow = points.length > 1 && !fits;
  useLayoutEffect(() => {
    // Before the frame is painted: the panel's new data reaches recharts in this same frame.
    if (overflow) tail?.onOverflow();
  }, [overflow, tail]);
  if (!tail || points.length < 2 || !fits) return null;
  const path = (key: 'last' | 'smooth') => placed.map((p, i) => `${i === 0 ? 'M' : 'L'}${p.x!.toFixed(1)},${p[key]!.toFixed(1)}`).join('');
  return (
    <g className="live-tail" pointerEvents="none">
      <path d={path('last')} fill="none" stroke={tail.colour} strokeOpacity={tail.smoothing ? 0.3 : 1} strokeWidth={tail.smoothing ? 1 : 2} />
      {tail.smoothing ? <path d={path('smooth')} fill="none" stroke={tail.colour} strokeWidth={2} /> : null}
    </g>
  );
}
