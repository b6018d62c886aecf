/**
 * The y axis of a live panel: the rows' values with a fifth of their range as room above and
 * below, out to round numbers (a step of 1, 2, 2.5 or 5 times a power of ten, about six ticks). Values
 * that are never negative (a reward in 0..1, a loss) keep an axis from zero or above. Each new
 * value outside draws the whole chart again: a rising reward sets a new high with most points,
 * and the room is what lets a run of them fit.
 */
export function roomyDomain(values: Iterable<number>): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!Number.isFinite(lo)) return [NaN, NaN];
  // A range of float noise is no range: room round the value instead.
  const span = hi - lo <= 1e-9 * Math.max(1, Math.abs(hi)) ? 0 : hi - lo;
  const room = span * 0.2 || Math.abs(hi) * 0.2 || 1;
  const raw = (span + 2 * room) / 6;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  const round = (v: number) => Number(v.toPrecision(12));
  const from = Math.floor((lo - room) / step) * step;
  return [round(lo >= 0 ? Math.max(0, from) : from), round(Math.ceil((hi + room) / step) * step)];
}

/**
 * Every finite value the same, to float noise (a smoothed constant is 7.999999999 here and there):
 * recharts' automatic domain then labels its ticks alike ("8", "8").
 */
export function isFlat(values: Iterable<number>): boolean {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return Number.isFinite(lo) && hi - lo <= 1e-9 * Math.max(1, Math.abs(hi));
}

/** The y domain of a chart that is not live: room round a flat series' value, else null (recharts' own). */
export function staticDomain(values: readonly number[]): [number, number] | null {
  return isFlat(values) ? roomyDomain(values) : null;
}
