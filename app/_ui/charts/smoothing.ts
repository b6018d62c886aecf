/**
 * Debiased exponential moving average, as Weights & Biases smooths by default: an EMA started at
 * zero and divided by (1 - weight^n), so the first points are not pulled toward zero. `weight`
 * is the slider's 0 (no smoothing) to 0.99. Non-finite values are skipped (the output keeps
 * them as NaN so indexes still line up with the input).
 */
export function debiasedEma(values: readonly number[], weight: number): number[] {
  const w = Math.min(Math.max(weight, 0), 0.999);
  const out = new Array<number>(values.length);
  let last = 0;
  let n = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) {
      out[i] = Number.NaN;
      continue;
    }
    last = last * w + (1 - w) * v;
    n++;
    out[i] = w === 0 ? v : last / (1 - w ** n);
  }
  return out;
}
