import { foldBuckets } from '../../../sdk/series-buckets';
/**
 * Client-side downsampling: live points appended after the server's buckets, and whole series
 * a test or benchmark holds, are folded into at most `buckets` buckets of min, max and last by
 * step, the same shape as runs.series gives (server/api/routers/runs.ts), so a chart never draws
 * more than about two points per pixel. Points must come in step order; non-finite values are
 * counted in `skipped` and left out.
 */
export interface Point {
  step: number;
  value: number;
}

export interface Bucket {
  fromStep: number;
  toStep: number;
  min: number;
  max: number;
  last: number;
  count: number;
  /** When the last step was stored (runs.series gives it), for an x axis by time. */
  at?: Date;
}

export interface Bucketed {
  buckets: Bucket[];
  /** Points left out because their value was NaN or ±Infinity. */
  skipped: number;
}

export function bucketPoints(points: readonly Point[], buckets: number): Bucketed {
  let skipped = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (const p of points) {
    if (!Number.isFinite(p.value)) continue;
    if (p.step < lo) lo = p.step;
    if (p.step > hi) hi = p.step;
  }
  if (lo > hi) return { buckets: [], skipped: points.length };
  const width = Math.max(1, Math.ceil((hi - lo + 1) / Math.max(1, buckets)));
  const out: Bucket[] = [];
  let index = -1;
  for (const p of points) {
    if (!Number.isFinite(p.value)) {
      skipped++;
      continue;
    }
    const i = Math.floor((p.step - lo) / width);
    const current = out[out.length - 1];
    if (i !== index || !current) {
      out.push({ fromStep: p.step, toStep: p.step, min: p.value, max: p.value, last: p.value, count: 1 });
      index = i;
    } else {
      current.toStep = p.step;
      if (p.value < current.min) current.min = p.value;
      if (p.value > current.max) current.max = p.value;
      current.last = p.value;
      current.count++;
    }
  }
  return { buckets: out, skipped };
}

/**
 * Merges the server's buckets with points that came live after them: points at or before the
 * last bucket's step are already in it (the catch-up or the series include them); later ones
 * become buckets of their own, then the whole is folded again if it grew past `max`.
 */
export function appendLive(base: readonly Bucket[], live: readonly Point[], max: number): Bucket[] {
  const lastStep = base.length > 0 ? base[base.length - 1].toStep : -Infinity;
  const fresh = live.filter((p) => p.step > lastStep && Number.isFinite(p.value));
  if (fresh.length === 0) return base as Bucket[];
  const all = [...base, ...fresh.map((p) => ({ fromStep: p.step, toStep: p.step, min: p.value, max: p.value, last: p.value, count: 1 }))];
  return all.length <= max ? all : mergeBuckets(all, max);
}

/** Folds ordered buckets into at most `max` by step range. */
export function mergeBuckets(parts: readonly Bucket[], max: number): Bucket[] {
  if (parts.length === 0) return [];
  const lo = parts[0].fromStep;
  const hi = parts[parts.length - 1].toStep;
  const width = Math.max(1, Math.ceil((hi - lo + 1) / Math.max(1, max)));
  return foldBuckets(parts, lo, width);
}
