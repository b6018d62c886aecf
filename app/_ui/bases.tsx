'use client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useState } from 'react';
import { baseNameSchema } from '../../sdk/job-config';
import { useTRPC } from '../trpc';
import { ErrorNote, Loading } from './components';
import { DataTable, type Column } from './data-table';
import { formatDateTime, formatRelative } from './format';
import { formatMetric } from './runs/run-parts';

// Bases: the team's named checkpoints (server/runs/bases.ts), listed with their cards, and the
// "Name…" action that names, renames or clears a checkpoint's base name.

type Base = NonNullable<ReturnType<typeof useBases>['data']>[number];

function useBases(teamId: string) {
  const trpc = useTRPC();
  return useQuery(trpc.runs.bases.queryOptions({ teamId }));
}

const f = formatMetric;

/**
 * What the latest eval reported, as its own log line puts it: wins, draws and losses in a game
 * (gpu-worker/job-runner/scores.ts), mean return and success otherwise.
 */
function evalLine(metrics: Record<string, number>, against: string): string {
  const m = metrics;
  const games = m['eval/games'];
  if (m['eval/win_rate'] !== undefined) {
    const interval = m['eval/win_rate_low'] !== undefined ? ` (95% ${f(m['eval/win_rate_low'])}–${f(m['eval/win_rate_high'])})` : '';
    return `win ${f(m['eval/win_rate'])}${interval} · draw ${f(m['eval/draw_rate'])} · loss ${f(m['eval/loss_rate'])}${games !== undefined ? ` over ${games} games` : ''} vs ${against}`;
  }
  if (m['eval/mean_return'] !== undefined) {
    const success = m['eval/success_rate'] !== undefined ? ` · success ${f(m['eval/success_rate'])}` : '';
    return `mean return ${f(m['eval/mean_return'])}${success}${games !== undefined ? ` over ${games} episodes` : ''}`;
  }
  if (m['eval/score'] !== undefined) return `score ${f(m['eval/score'])}`;
  return 'no figures reported';
}

/** How the base was trained, in one line: "grpo · gomoku v3 · 400 steps · warm start: bot expert, 400 steps · from arith-base". */
function trainingLine(t: NonNullable<Base['training']>): string {
  const parts = [
    t.algorithm ?? t.kind.toLowerCase(),
    t.environment ? `${t.environment.name} v${t.environment.version}` : null,
    t.dataset ? `on ${t.dataset.name} v${t.dataset.version}` : null,
    t.steps !== null ? `${t.steps} steps` : null,
    t.warmStart ? `warm start: ${t.warmStart.from === 'bot' ? `bot ${t.warmStart.bot ?? ''}` : 'dataset'}${t.warmStart.steps !== null ? `, ${t.warmStart.steps} steps` : ''}` : null,
    t.startedFrom ? `from ${t.startedFrom.name ?? `checkpoint ${t.startedFrom.checkpointId}`}` : null,
  ];
  return parts.filter(Boolean).join(' · ');
}

const columns = (base: string, teamId: string, mayName: boolean): Column<Base>[] => [
  { header: 'Base', rowHeader: true, className: 'mono', cell: (b) => b.name },
  {
    header: 'Checkpoint',
    className: 'nowrap',
    cell: (b) => (
      <>
        step {b.step}
        <span className="cell-sub">
          {b.kind.toLowerCase()}
          {b.isAdapter ? ' · LoRA' : ''}
        </span>
      </>
    ),
  },
  {
    header: 'How it was trained',
    cell: (b) =>
      b.training ? (
        <>
          <Link href={`${base}/runs/${b.training.jobId}`} className="id-link">
            {b.training.jobId}
          </Link>
          <span className="cell-sub">{trainingLine(b.training)}</span>
        </>
      ) : (
        <span className="muted">its run was deleted</span>
      ),
  },
  {
    header: 'Latest eval',
    className: 'small tabular',
    cell: (b) =>
      b.eval ? (
        <>
          {evalLine(b.eval.metrics, b.eval.against)}
          <span className="cell-sub">
            <Link href={`${base}/runs/${b.eval.jobId}`} className="id-link">
              {b.eval.jobId}
            </Link>
            {b.eval.finishedAt ? <span title={formatDateTime(b.eval.finishedAt)}> · {formatRelative(b.eval.finishedAt)}</span> : null}
          </span>
        </>
      ) : (
        <span className="muted">not evaluated yet</span>
      ),
  },
  {
    header: 'Actions',
    className: 'row-actions',
    cell: (b) => (
      <span className="inline-actions">
        <Link href={`${base}/playground/${b.id}`} className="btn btn-small" aria-label={`Open base ${b.name} in the playground`}>
          Playground
        </Link>
        {mayName ? <NameCheckpoint teamId={teamId} checkpoint={b} /> : null}
      </span>
    ),
  },
];

/** The team's bases with their cards: what runs can start from (the launcher's "Start from", `--from <name>`). */
export function BasesSection({ teamId, mayName }: { teamId: string; mayName: boolean }) {
  const bases = useBases(teamId);
  const base = `/teams/${teamId}`;
  return (
    <section aria-labelledby="bases-title">
      <h2 id="bases-title">Bases</h2>
      {bases.isPending ? (
        <Loading label="Loading bases…" />
      ) : bases.isLoadingError ? (
        <ErrorNote error={bases.error} />
      ) : (
        <DataTable
          panel
          label="Bases"
          rows={bases.data}
          rowKey={(b) => b.id}
          columns={columns(base, teamId, mayName)}
          empty={
            <p className="muted">
              No bases yet. Name a checkpoint below ({mayName ? '“Name…”' : 'members can'}), or launch a run with “Save as base” (<code>--save-as &lt;name&gt;</code>) to start other runs from it by name.
            </p>
          }
        />
      )}
    </section>
  );
}

/**
 * "Name…": an inline form that names one of the team's checkpoints as a base, renames it, or
 * clears its name. The server's answer (a name taken by another checkpoint) shows next to it.
 */
export function NameCheckpoint({ teamId, checkpoint }: { teamId: string; checkpoint: { id: string; step: number; name: string | null } }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const [text, setText] = useState(checkpoint.name ?? '');
  const rename = useMutation(
    trpc.runs.nameCheckpoint.mutationOptions({
      onSuccess: () => {
        setOpen(false);
        // Every list that shows names: the bases, the team's checkpoints, a run's checkpoints.
        void queryClient.invalidateQueries({ queryKey: trpc.runs.bases.pathKey() });
        void queryClient.invalidateQueries({ queryKey: trpc.runs.teamCheckpoints.pathKey() });
        void queryClient.invalidateQueries({ queryKey: trpc.runs.checkpoints.pathKey() });
      },
    }),
  );
  if (!open) {
    return (
      <button type="button" className="btn-small" onClick={() => { setText(checkpoint.name ?? ''); rename.reset(); setOpen(true); }} aria-label={`Name checkpoint ${checkpoint.id} (step ${checkpoint.step}) as a base`}>
        {checkpoint.name ? 'Rename…' : 'Name…'}
      </button>
    );
  }
  const check = baseNameSchema.safeParse(text);
  const problem = text.trim() === '' ? null : check.success ? null : check.error.issues[0].message;
  const inputId = `name-${checkpoint.id}`;
  return (
    <form
      className="inline-form"
      aria-label={`Base name of checkpoint ${checkpoint.id}`}
      onSubmit={(e) => {
        e.preventDefault();
        if (check.success) rename.mutate({ teamId, checkpointId: checkpoint.id, name: check.data });
      }}
    >
      <label htmlFor={inputId} className="sr-only">Base name</label>
      <input id={inputId} value={text} placeholder="gomoku-9x9-bc" autoFocus onChange={(e) => setText(e.target.value)} aria-invalid={problem ? true : undefined} />
      <button type="submit" className="btn-small" disabled={!check.success || rename.isPending}>
        Save
      </button>
      {checkpoint.name ? (
        <button type="button" className="btn-small" disabled={rename.isPending} onClick={() => rename.mutate({ teamId, checkpointId: checkpoint.id, name: null })}>
          Clear name
        </button>
      ) : null}
      <button type="button" className="btn-small" onClick={() => setOpen(false)}>
        Cancel
      </button>
      {problem ? <span className="field-error" role="alert">{problem}</span> : null}
      <ErrorNote error={rename.error} />
    </form>
  );
}
