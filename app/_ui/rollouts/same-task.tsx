'use client';
import { useQueries, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useTRPC } from '../../trpc';
import { ErrorNote, Loading } from '../components';
import { taskOf } from './rollout-flags';
import { Transcript } from './rollout-viewer';

/** Tasks offered: those of the first run's newest samples. */
const SAMPLES_READ = 50;

/**
 * The compare page's rollouts: one task, each run's newest sample of it side by side (the same
 * prompt answered by each policy). The task is chosen among the first run's newest samples'; a run
 * that never played it says so.
 */
export function SameTaskRollouts({ teamId, runs }: { teamId: string; runs: Array<{ id: string; colour: string }> }) {
  const trpc = useTRPC();
  const first = useQuery(trpc.runs.rollouts.queryOptions({ teamId, jobId: runs[0].id, limit: SAMPLES_READ }));
  const tasks = [...new Set((first.data?.samples ?? []).map(taskOf).filter((t): t is string => t !== null))];
  const [picked, setPicked] = useState<string | null>(null);
  const task = picked !== null && tasks.includes(picked) ? picked : (tasks[0] ?? null);
  const each = useQueries({
    queries: runs.map((r) => ({ ...trpc.runs.rollouts.queryOptions({ teamId, jobId: r.id, task: task ?? '', limit: 1 }), enabled: task !== null })),
  });
  if (first.isPending) return <Loading label="Loading rollouts…" />;
  if (first.isLoadingError) return <ErrorNote error={first.error} />;
  if (tasks.length === 0) return <p className="muted">The first run has no rollouts with a task to compare on.</p>;
  return (
    <>
      <label className="inline-form small">
        <span className="muted">Task</span>
        <select value={task ?? ''} onChange={(e) => setPicked(e.target.value)} aria-label="Task to compare on">
          {tasks.map((t) => (
            <option key={t} value={t}>
              {t.length > 80 ? `${t.slice(0, 80)}…` : t}
            </option>
          ))}
        </select>
      </label>
      <div className="same-task-grid">
        {runs.map((r, i) => {
          const q = each[i];
          const sample = q.data?.samples[0];
          return (
            <section key={r.id} className="same-task-column" aria-label={`Run ${r.id} on this task`}>
              <h3 className="small">
                <span className="swatch" style={{ background: r.colour }} /> <span className="mono">{r.id}</span>
              </h3>
              {q.isPending ? (
                <Loading label="Loading…" />
              ) : q.isLoadingError ? (
                <ErrorNote error={q.error} />
              ) : sample ? (
                <Transcript sample={sample} flags={[]} advantage={0} colouring="mask" />
              ) : (
                <p className="muted small">This run has no sample of this task.</p>
              )}
            </section>
          );
        })}
      </div>
    </>
  );
}
