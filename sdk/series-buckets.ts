/** A metric's summary over a step range: what runs.series serves and a chart draws. */
export interface StepBucket {
  fromStep: number;
  toStep: number;
  min: number;
  max: number;
  last: number;
  count: number;
  /** When the last step was stored, for an x axis by time. */
  at?: Date;
}

/**
 * Folds ordered summaries into buckets `width` steps wide counted from `origin`: one rule for the
 * server's series (runs.series) and the chart's live appends, so the two never draw differently.
 */
export function foldBuckets<B extends StepBucket>(parts: readonly B[], origin: number, width: number): B[] {
  const out: B[] = [];
  let index = -1;
  for (const p of parts) {
    const i = Math.floor((p.fromStep - origin) / width);
    const current = out[out.length - 1];
    if (i !== index || !current) {
      out.push({ ...p });
      index = i;
    } else {
      current.toStep = p.toStep;
      current.min = Math.min(current.min, p.min);
      current.max = Math.max(current.max, p.max);
      current.last = p.last;
      current.count += p.count;
      current.at = p.at;
    }
  }
  return out;
}
