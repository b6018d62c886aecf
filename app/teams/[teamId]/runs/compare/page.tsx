'use client';
import { useQueries } from '@tanstack/react-query';
import Link from 'next/link';
import { METRIC_GROUPS, metricGroup } from '../../../../../sdk/live';
import { ComparePanel, RUN_COLOURS } from '../../../../_ui/charts/compare-panel';
import { ErrorNote, Loading, PageTitle } from '../../../../_ui/components';
import { isNotFound } from '../../../../_ui/errors';
import { SameTaskRollouts } from '../../../../_ui/rollouts/same-task';
import { configDiff } from '../../../../_ui/runs/config-diff';
import { KindBadge, RunStateBadge, RunSubject } from '../../../../_ui/runs/run-parts';
import { useTeam } from '../../../../_ui/team-context';
import { useUrlState } from '../../../../_ui/url-state';
import { useTRPC } from '../../../../trpc';

const MAX_RUNS = RUN_COLOURS.length;
const GROUP_ORDER = Object.keys(METRIC_GROUPS);

/**
 * Runs side by side (`?ids=a,b`): their metrics as shared panels with one line per run, each run
 * in one colour across every panel, the config values that differ between them, and each run's
 * answer to the same task.
 */
export default function ComparePage() {
  const team = useTeam();
  const trpc = useTRPC();
  const { params, set } = useUrlState();
  const base = `/teams/${team.id}`;
  const ids = [...new Set((params.get('ids') ?? '').split(',').map((s) => s.trim()).filter((s) => /^[A-Za-z0-9_-]{1,64}$/.test(s)))].slice(0, MAX_RUNS);
  const smoothing = Math.min(0.99, Math.max(0, Number(params.get('smooth') ?? '0.6') || 0));
  const retry = (n: number, e: unknown) => !isNotFound(e) && n < 2;
  const summaries = useQueries({ queries: ids.map((jobId) => ({ ...trpc.runs.summary.queryOptions({ teamId: team.id, jobId }), retry })) });
  const jobs = useQueries({ queries: ids.map((jobId) => ({ ...trpc.jobs.get.queryOptions({ teamId: team.id, jobId }), retry })) });
  const keys = useQueries({ queries: ids.map((jobId) => ({ ...trpc.runs.metricKeys.queryOptions({ teamId: team.id, jobId }), retry })) });

  if (ids.length < 2) {
    return (
      <>
        <PageTitle title="Compare runs" />
        <div className="empty-state">
          <p className="muted">Choose two runs or more on the runs list and press Compare.</p>
          <Link href={`${base}/runs`}>Go to the runs</Link>
        </div>
      </>
    );
  }
  const found = ids.map((id, i) => ({ id, colour: RUN_COLOURS[i], summary: summaries[i], job: jobs[i], keys: keys[i] }));
  const missing = found.filter((r) => r.summary.error && isNotFound(r.summary.error));
  const shown = found.filter((r) => !(r.summary.error && isNotFound(r.summary.error)));
  const otherError = found.find((r) => r.summary.error && !isNotFound(r.summary.error))?.summary.error;
  if (found.some((r) => r.summary.isPending || r.job.isPending || r.keys.isPending) && !otherError) return <Loading label="Loading the runs…" />;
  const allKeys = [...new Set(shown.flatMap((r) => r.keys.data?.map((k) => k.key) ?? []))].sort(
    (a, b) => (GROUP_ORDER.indexOf(metricGroup(a)) + 1 || 99) - (GROUP_ORDER.indexOf(metricGroup(b)) + 1 || 99) || a.localeCompare(b),
  );
  const diff = configDiff(shown.map((r) => r.job.data?.config ?? {}));
  const shownIds = shown.map((r) => r.id);

  return (
    <>
      <p className="breadcrumb">
        <Link href={`${base}/runs`}>Runs</Link> / Compare
      </p>
      <PageTitle title={`Compare ${shown.length} runs`} />
      <ErrorNote error={otherError} />
      {missing.length > 0 ? (
        <p className="notice notice-warning" role="status">
          No run {missing.map((m) => m.id).join(', ')} in {team.name}: left out.
        </p>
      ) : null}
      <ul className="compare-legend" aria-label="Runs compared">
        {shown.map((r) => (
          <li key={r.id}>
            <span className="swatch" style={{ background: r.colour }} />
            {r.summary.data ? <KindBadge run={r.summary.data} /> : null}{' '}
            <Link href={`${base}/runs/${r.id}`} className="mono">
              {r.id}
            </Link>{' '}
            {r.summary.data ? (
              <>
                <RunStateBadge state={r.summary.data.state} /> <RunSubject run={r.summary.data} base={base} />
              </>
            ) : null}
          </li>
        ))}
      </ul>
      <section className="panel" aria-labelledby="diff-title">
        <h2 id="diff-title">Config: what differs</h2>
        {diff.length === 0 ? (
          <p className="muted">Their configs are the same.</p>
        ) : (
          <div className="table-wrap">
            <table className="table" aria-label="Config differences">
              <thead>
                <tr>
                  <th scope="col">Setting</th>
                  {shown.map((r) => (
                    <th key={r.id} scope="col">
                      <span className="swatch" style={{ background: r.colour }} />
                      <span className="mono">{r.id}</span>
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {diff.map((row) => (
                  <tr key={row.path}>
                    <th scope="row" className="mono small">
                      {row.path}
                    </th>
                    {row.values.map((v, i) => (
                      <td key={i} className="mono small">
                        {v ?? <span className="muted">not set</span>}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <div className="chart-toolbar">
        <label className="inline-form small">
          <span className="muted">Smoothing</span>
          <input type="range" min={0} max={0.99} step={0.01} value={smoothing} aria-label="Smoothing" onChange={(e) => set({ smooth: e.target.value }, { replace: true })} />
          <span className="tabular">{smoothing.toFixed(2)}</span>
        </label>
      </div>
      {allKeys.length === 0 ? <p className="muted">None of these runs reported metrics yet.</p> : null}
      <div className="chart-grid">
        {allKeys.map((key) => (
          <ComparePanel key={key} teamId={team.id} jobIds={shownIds} metricKey={key} smoothing={smoothing} />
        ))}
      </div>
      {shown.length > 1 ? (
        <section className="panel" aria-labelledby="same-task-title">
          <h2 id="same-task-title">Rollouts on the same task</h2>
          <SameTaskRollouts teamId={team.id} runs={shown.map((r) => ({ id: r.id, colour: r.colour }))} />
        </section>
      ) : null}
    </>
  );
}
