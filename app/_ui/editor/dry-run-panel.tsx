'use client';
import { AlertTriangle, CheckCircle2, CircleX } from 'lucide-react';
import type { Distribution, DryRunReport, Transcript } from '../../../sdk/dry-run-report';
import type { EditorProblem } from './markers';

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(3));

function Histogram({ label, d }: { label: string; d: Distribution }) {
  const max = Math.max(1, ...d.histogram.map((h) => h.count));
  const rows = [...d.histogram].sort((a, b) => a.value - b.value);
  return (
    <figure className="histogram">
      <figcaption>
        <strong>{label}</strong>{' '}
        <span className="muted small">
          mean {fmt(d.mean)} ± {fmt(d.std)} · min {fmt(d.min)} · max {fmt(d.max)}
        </span>
      </figcaption>
      <table className="histogram-table">
        <thead className="sr-only">
          <tr>
            <th>Value</th>
            <th>Episodes</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((h) => (
            <tr key={h.value}>
              <th scope="row" className="mono small">
                {fmt(h.value)}
              </th>
              <td>
                <span className="histogram-bar" style={{ width: `${(100 * h.count) / max}%` }} />
                <span className="small tabular">{h.count}</span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}

function TranscriptView({ t }: { t: Transcript }) {
  const agents = Object.keys(t.systemPrompts);
  return (
    <details className="transcript">
      <summary>
        Episode seed {t.seed} · {t.turns.length} turn{t.turns.length === 1 ? '' : 's'} · {t.endReason} · return{' '}
        {Object.entries(t.totalRewards)
          .map(([a, r]) => (agents.length > 1 ? `${a} ${fmt(r)}` : fmt(r)))
          .join(', ')}
      </summary>
      {agents.map((a) => (
        <div key={a} className="turn turn-system">
          <div className="turn-role">system{agents.length > 1 ? ` · ${a}` : ''}</div>
          <pre>{t.systemPrompts[a]}</pre>
        </div>
      ))}
      {t.turns.map((turn, i) => (
        <div key={i}>
          <div className="turn turn-observation">
            <div className="turn-role">observation{agents.length > 1 ? ` · ${turn.agent}` : ''}</div>
            <pre>{turn.observation}</pre>
          </div>
          <div className="turn turn-action">
            <div className="turn-role">
              action · reward {Object.entries(turn.rewards).map(([a, r]) => (agents.length > 1 ? `${a} ${fmt(r)}` : fmt(r))).join(', ') || '0'}
            </div>
            <pre>{turn.action}</pre>
          </div>
        </div>
      ))}
      {t.error ? <p className="notice notice-error small">{t.error.message}</p> : null}
    </details>
  );
}

/** What the last save's dry run found: problems (click to go to the line), tests, statistics, transcripts. */
export function DryRunPanel({
  report,
  problems,
  saving,
  onReveal,
}: {
  report: DryRunReport | null;
  problems: EditorProblem[];
  saving: boolean;
  onReveal: (p: EditorProblem) => void;
}) {
  if (saving) {
    return (
      <div className="side-body">
        <p className="muted loading" role="status">
          <span className="spinner" aria-hidden="true" /> Saving and dry-running in the sandbox…
        </p>
      </div>
    );
  }
  if (!report) {
    return (
      <div className="side-body">
        <p className="muted">This version has not been dry-run yet. Save (Ctrl S) to check it: the server compiles, type-checks and plays a few episodes in the sandbox.</p>
      </div>
    );
  }
  const errors = problems.filter((p) => p.severity === 'error');
  const warnings = problems.filter((p) => p.severity === 'warning');
  return (
    <div className="side-body">
      <p className={`dry-run-status ${report.ok ? 'ok' : 'bad'}`} role="status">
        {report.ok ? <CheckCircle2 size={16} aria-hidden="true" /> : <CircleX size={16} aria-hidden="true" />}
        <strong>{report.ok ? 'Dry run passed' : 'Dry run failed'}</strong>
        <span className="muted small">
          {report.episodes} episode{report.episodes === 1 ? '' : 's'} in {(report.durationMs / 1000).toFixed(1)} s · policy: {report.policy}
          {report.typeCheckMs !== null && report.typeCheckMs !== undefined ? ` · type-checked in ${(report.typeCheckMs / 1000).toFixed(1)} s` : ''}
          {report.queue && report.queue.waitedMs > 500 ? ` · waited ${(report.queue.waitedMs / 1000).toFixed(1)} s behind ${report.queue.ahead}` : ''}
        </span>
      </p>
      {errors.length + warnings.length > 0 ? (
        <section aria-label="Problems">
          <h3>Problems</h3>
          <ul className="problems">
            {[...errors, ...warnings].map((p, i) => (
              <li key={i}>
                <button type="button" className="problem" onClick={() => onReveal(p)}>
                  {p.severity === 'error' ? <CircleX size={14} className="bad" aria-label="error" /> : <AlertTriangle size={14} className="warn" aria-label="warning" />}
                  <span className="problem-message">{p.message}</span>
                  <span className="muted small mono nowrap">
                    {p.file}:{p.line}:{p.column}
                  </span>
                </button>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      {report.tests && report.tests.length > 0 ? (
        <section aria-label="Reward tests">
          <h3>
            Reward tests{' '}
            <span className="muted small">
              {report.tests.filter((t) => t.pass).length} of {report.tests.length} pass
            </span>
          </h3>
          <ul className="tests">
            {report.tests.map((t, i) => (
              <li key={i} className={t.pass ? 'ok' : 'bad'}>
                {t.pass ? <CheckCircle2 size={14} aria-label="pass" /> : <CircleX size={14} aria-label="fail" />} <span>{t.name}</span>
                <span className="muted small mono">
                  {t.actual !== null ? `reward ${fmt(t.actual)}` : ''} · expected {JSON.stringify(t.expected)}
                </span>
                {!t.pass && (t.error?.message ?? t.failure) ? <div className="small">{t.error?.message ?? t.failure}</div> : null}
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      {report.episodes > 0 ? (
        <section aria-label="Statistics">
          <h3>Episodes</h3>
          <dl className="facts small">
            <dt>Ended</dt>
            <dd>
              {Object.entries(report.endReasons)
                .filter(([, n]) => n > 0)
                .map(([r, n]) => `${r} ${n}`)
                .join(' · ') || '—'}
            </dd>
            <dt>Turns</dt>
            <dd>
              mean {fmt(report.lengths.mean)} · min {report.lengths.min} · max {report.lengths.max}
            </dd>
          </dl>
          {Object.entries(report.rewards).map(([agent, d]) => (
            <Histogram key={agent} label={`Return${Object.keys(report.rewards).length > 1 ? ` of ${agent}` : ''}`} d={d} />
          ))}
        </section>
      ) : null}
      {report.transcripts.length > 0 ? (
        <section aria-label="Transcripts">
          <h3>Transcripts</h3>
          {report.transcripts.slice(0, 4).map((t) => (
            <TranscriptView key={t.episodeId} t={t} />
          ))}
        </section>
      ) : null}
      {report.logs.length > 0 ? (
        <section aria-label="Logs">
          <h3>Logs</h3>
          <pre className="log-box">{report.logs.slice(0, 200).join('\n')}</pre>
        </section>
      ) : null}
    </div>
  );
}
