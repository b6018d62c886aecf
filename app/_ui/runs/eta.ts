/**
 * Seconds left from the measured step rate: the steps that arrived live over the last minutes
 * (their arrival times), at least two of them; null until there are.
 */
export function etaSeconds(stepTimes: ReadonlyArray<{ step: number; at: number }>, reached: number, total: number): number | null {
  if (stepTimes.length < 2 || reached >= total) return null;
  const first = stepTimes[0];
  const last = stepTimes[stepTimes.length - 1];
  const steps = last.step - first.step;
  if (steps <= 0 || last.at <= first.at) return null;
  return Math.round(((last.at - first.at) / steps / 1000) * (total - reached));
}
