import type { Point } from './bucketing';

/**
 * Health markers: steps where a run shows a known failure sign of RL on language models. Pure
 * rules over the run's metric points (by key), so the chart, the rollout viewer and the tests
 * agree on them. Each marker names its step; the page links it to that step's rollouts. A sign
 * that holds for several points in a row (groups with no gradient for the first hundred steps of a
 * bandit run, every episode at the length limit) is one marker over that range, not one a step.
 */
export type HealthKind = 'kl-spike' | 'entropy-collapse' | 'length-limit' | 'zero-variance' | 'nan-skipped';

export interface HealthMarker {
  kind: HealthKind;
  /** The first step showing the sign; `toStep` the last of a run of points in a row that all show it. */
  step: number;
  toStep?: number;
  /** The metric the sign shows on: the panel that draws the marker. */
  key: string;
  /** One sentence for the marker's tooltip and the list under the charts. */
  message: string;
}

export const HEALTH_LABELS: Record<HealthKind, string> = {
  'kl-spike': 'KL spike',
  'entropy-collapse': 'Entropy collapse',
  'length-limit': 'Length at the limit',
  'zero-variance': 'No-gradient groups',
  'nan-skipped': 'NaN step skipped',
};

export interface HealthThresholds {
  /** KL above this many times the median of the previous window (and above `klFloor`). */
  klFactor: number;
  klFloor: number;
  klWindow: number;
  /** Entropy below this share of its early level (the highest of its first `klWindow` points). */
  entropyShare: number;
  /** Share of a step's episodes cut at the context limit. */
  truncatedShare: number;
  /** Share of a step's groups whose rewards are all equal (no gradient). */
  zeroVarianceShare: number;
}

const DEFAULT_THRESHOLDS: HealthThresholds = { klFactor: 4, klFloor: 0.05, klWindow: 10, entropyShare: 0.1, truncatedShare: 0.25, zeroVarianceShare: 0.5 };

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const fmt = (v: number) => Number(v.toPrecision(3)).toString();

function klSpikes(points: readonly Point[], t: HealthThresholds): HealthMarker[] {
  const out: HealthMarker[] = [];
  const window: number[] = [];
  for (const p of points) {
    if (!Number.isFinite(p.value)) continue;
    if (window.length >= Math.min(5, t.klWindow)) {
      const base = median(window);
      if (p.value > t.klFloor && p.value > t.klFactor * Math.max(base, 1e-9)) {
        out.push({ kind: 'kl-spike', step: p.step, key: 'policy/kl', message: `KL ${fmt(p.value)} at step ${p.step}, ${fmt(p.value / Math.max(base, 1e-9))}× the median of the ${window.length} steps before` });
      }
    }
    window.push(p.value);
    if (window.length > t.klWindow) window.shift();
  }
  return out;
}

/** The first step where entropy falls under its share of the early level (once: a collapse is one event). */
function entropyCollapse(points: readonly Point[], t: HealthThresholds): HealthMarker[] {
  const finite = points.filter((p) => Number.isFinite(p.value));
  if (finite.length <= t.klWindow) return [];
  const early = Math.max(...finite.slice(0, t.klWindow).map((p) => p.value));
  if (early <= 0) return [];
  const hit = finite.slice(t.klWindow).find((p) => p.value < t.entropyShare * early);
  return hit ? [{ kind: 'entropy-collapse', step: hit.step, key: 'policy/entropy', message: `Entropy ${fmt(hit.value)} at step ${hit.step}, under ${Math.round(t.entropyShare * 100)}% of its early ${fmt(early)}` }] : [];
}

function byStep(points: readonly Point[] | undefined): Map<number, number> {
  return new Map((points ?? []).map((p) => [p.step, p.value]));
}

/** Steps where many episodes were cut at the context limit: responses drifting to the limit. */
function lengthAtLimit(truncated: readonly Point[] | undefined, counts: readonly Point[] | undefined, t: HealthThresholds): HealthMarker[] {
  const count = byStep(counts);
  const share = (p: Point) => {
    const n = count.get(p.step);
    return n && Number.isFinite(p.value) && p.value > 0 && p.value / n >= t.truncatedShare ? p.value / n : null;
  };
  return runsOf(truncated ?? [], share).map((r) => ({
    kind: 'length-limit' as const,
    step: r.from,
    ...(r.to > r.from ? { toStep: r.to } : {}),
    key: 'episode/response_tokens',
    message:
      r.to > r.from
        ? `Steps ${r.from} to ${r.to}: at least ${percent(t.truncatedShare)} of each step's episodes (up to ${percent(r.worst)}) were cut at the context limit`
        : `${percent(r.worst)} of step ${r.from}'s episodes were cut at the context limit`,
  }));
}

/**
 * The points in a row (in series order: a bucketed series' neighbours are in a row too) that
 * `flagged` picks, as [first, last, worst value] runs.
 */
function runsOf(points: readonly Point[], flagged: (p: Point) => number | null): Array<{ from: number; to: number; worst: number; count: number }> {
  const runs: Array<{ from: number; to: number; worst: number; count: number }> = [];
  let open = false;
  for (const p of points) {
    const v = flagged(p);
    if (v === null) {
      open = false;
      continue;
    }
    const last = runs[runs.length - 1];
    if (open && last) {
      last.to = p.step;
      last.worst = Math.max(last.worst, v);
      last.count++;
    } else runs.push({ from: p.step, to: p.step, worst: v, count: 1 });
    open = true;
  }
  return runs;
}

const percent = (v: number) => `${Math.round(v * 100)}%`;

function zeroVariance(shares: readonly Point[] | undefined, t: HealthThresholds): HealthMarker[] {
  return runsOf(shares ?? [], (p) => (Number.isFinite(p.value) && p.value >= t.zeroVarianceShare ? p.value : null)).map((r) => ({
    kind: 'zero-variance' as const,
    step: r.from,
    ...(r.to > r.from ? { toStep: r.to } : {}),
    key: 'reward/mean',
    message:
      r.to > r.from
        ? `Steps ${r.from} to ${r.to}: at least ${percent(t.zeroVarianceShare)} of each step's groups (up to ${percent(r.worst)}) had all-equal rewards: no gradient from them`
        : `${percent(r.worst)} of step ${r.from}'s groups had all-equal rewards: no gradient from them`,
  }));
}

/** Steps whose loss or gradient norm was NaN/±Infinity, or that made no update though there were tokens to train. */
function nanSkipped(metrics: Readonly<Record<string, readonly Point[]>>): HealthMarker[] {
  const steps = new Set<number>();
  for (const key of ['loss/total', 'loss/policy', 'optim/grad_norm']) for (const p of metrics[key] ?? []) if (!Number.isFinite(p.value)) steps.add(p.step);
  const tokens = byStep(metrics['optim/tokens']);
  for (const p of metrics['optim/updates'] ?? []) if (p.value === 0 && (tokens.get(p.step) ?? 0) > 0) steps.add(p.step);
  return [...steps].sort((a, b) => a - b).map((step) => ({ kind: 'nan-skipped', step, key: 'loss/total', message: `Step ${step}'s update was skipped: its loss or gradient was not a number` }));
}

/**
 * Every marker for a run. `metrics`: points by key in step order (any keys; missing ones give no
 * markers). The share of groups with all-equal returns is the runner's `reward/zero_variance_groups`.
 */
export function healthMarkers(metrics: Readonly<Record<string, readonly Point[]>>, thresholds: HealthThresholds = DEFAULT_THRESHOLDS): HealthMarker[] {
  return [
    ...klSpikes(metrics['policy/kl'] ?? [], thresholds),
    ...entropyCollapse(metrics['policy/entropy'] ?? [], thresholds),
    ...lengthAtLimit(metrics['episode/context_truncated'], metrics['episode/count'], thresholds),
    ...zeroVariance(metrics['reward/zero_variance_groups'], thresholds),
    ...nanSkipped(metrics),
  ].sort((a, b) => a.step - b.step);
}
