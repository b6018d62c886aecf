import Link from 'next/link';
import type { RunSummary } from '../../../server/runs/list-runs';
import { isActive, runKindLabel } from './run-state';

/** A job's state; a pulsing dot while it may still change (`live`: a current state, not a past one). */
export function RunStateBadge({ state, title, live = true }: { state: string; title?: string; live?: boolean }) {
  return (
    <span className={`badge badge-status-${state.toLowerCase()} ${live && isActive(state) ? 'badge-live' : ''}`} title={title}>
      {state.toLowerCase()}
    </span>
  );
}

export function KindBadge({ run }: { run: Pick<RunSummary, 'kind' | 'algorithm'> }) {
  return <span className="badge badge-kind">{runKindLabel(run)}</span>;
}

/** Step of total as a bar and numbers; the step alone when the total is unknown; an evaluation's games. */
export function Progress({ run }: { run: Pick<RunSummary, 'kind' | 'state' | 'step' | 'totalSteps'> }) {
  const { step, totalSteps: total } = run;
  const done = run.state === 'SUCCEEDED';
  if (run.kind === 'EVAL') return total ? <span className="progress-text">{done ? `${total} games played` : `${total} games`}</span> : <span className="muted">—</span>;
  if (step === null && !total) return <span className="muted">—</span>;
  // Steps are numbered from 1 (sdk/live.ts stepNumber): the step just reported is that many of the total.
  const reached = step ?? 0;
  if (!total) return <span className="progress-text">step {reached}</span>;
  const share = Math.min(1, reached / total);
  return (
    <span className={`progress ${done || share >= 1 ? 'progress-done' : ''}`}>
      <span className="progress-bar" role="progressbar" aria-label="Steps done" aria-valuemin={0} aria-valuemax={total} aria-valuenow={reached}>
        <span style={{ width: `${share * 100}%` }} />
      </span>
      <span className="progress-text">
        {reached}/{total}
      </span>
    </span>
  );
}

/** The environment (and its version) or the dataset a run trains on, linked. */
export function RunSubject({ run, base }: { run: Pick<RunSummary, 'environment' | 'dataset'>; base: string }) {
  if (run.environment) {
    return (
      <Link href={`${base}/environments/${run.environment.id}?v=${run.environment.version}`}>
        {run.environment.name} <span className="muted">v{run.environment.version}</span>
      </Link>
    );
  }
  if (run.dataset) {
    return (
      <Link href={`${base}/datasets/${run.dataset.id}?version=${run.dataset.version}`}>
        {run.dataset.name} <span className="muted">v{run.dataset.version}</span>
      </Link>
    );
  }
  return <span className="muted">—</span>;
}

/** A number as a metric reads best: 3 significant digits, tabular. */
export function formatMetric(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 0.001 || abs >= 1e6)) return value.toExponential(2);
  return Number(value.toPrecision(3)).toString();
}
