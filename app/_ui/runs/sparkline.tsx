'use client';
import { useQuery } from '@tanstack/react-query';
import { useTRPC } from '../../trpc';

const WIDTH = 80;
const HEIGHT = 20;

/** A run's reward (or loss) as a tiny line: 40 buckets of runs.series, drawn as plain SVG; asked again while the run is active. */
export function Sparkline({ teamId, jobId, metric, active }: { teamId: string; jobId: string; metric: string; active: boolean }) {
  const trpc = useTRPC();
  const series = useQuery({ ...trpc.runs.series.queryOptions({ teamId, jobId, key: metric, buckets: 40 }), staleTime: 10_000, refetchInterval: active ? 10_000 : false });
  const points = (series.data ?? []).filter((b) => Number.isFinite(b.last));
  if (points.length < 2) return <span className="sparkline-empty" aria-hidden="true" />;
  const lo = Math.min(...points.map((p) => p.last));
  const hi = Math.max(...points.map((p) => p.last));
  const x0 = points[0].toStep;
  const x1 = points[points.length - 1].toStep;
  const path = points
    .map((p) => `${(((p.toStep - x0) / Math.max(1, x1 - x0)) * WIDTH).toFixed(1)},${(HEIGHT - 2 - ((p.last - lo) / Math.max(1e-12, hi - lo)) * (HEIGHT - 4)).toFixed(1)}`)
    .join(' ');
  return (
    <svg className="sparkline" width={WIDTH} height={HEIGHT} viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={`${metric} over the run`} data-points={points.length}>
      <polyline points={path} fill="none" stroke="currentColor" strokeWidth={1.5} />
    </svg>
  );
}
