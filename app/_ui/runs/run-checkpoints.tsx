'use client';
import Link from 'next/link';
import { useQuery } from '@tanstack/react-query';
import { useTRPC } from '../../trpc';
import { NameCheckpoint } from '../bases';
import { ExportCheckpoint } from '../models/export-checkpoint';
import { ErrorNote, Loading } from '../components';
import { formatBytes, formatDateTime } from '../format';
import { formatMetric } from './run-parts';
import { LIVE_REFETCH_MS } from './run-state';
import { atLeast } from '../roles';
import { useTeam } from '../team-context';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The metrics a checkpoint recorded, the reward first, as "reward/mean 0.52 · loss/total 1.3". */
function metricsLine(metrics: unknown): string {
  if (!isRecord(metrics)) return '';
  const entries = Object.entries(metrics).filter((e): e is [string, number] => typeof e[1] === 'number');
  entries.sort(([a], [b]) => Number(b.startsWith('reward/')) - Number(a.startsWith('reward/')));
  return entries
    .slice(0, 4)
    .map(([k, v]) => `${k} ${formatMetric(v)}`)
    .join(' · ');
}

/**
 * The run's checkpoints: training ones (weights and optimiser state, to resume) and sampler ones
 * (weights, for the playground and evaluations), with the metrics at their step, and whose policy
 * each is where the run's learners learn independently. A run from an imported model exports its
 * sampler checkpoints as Hugging Face folders.
 */
export function RunCheckpoints({ teamId, jobId, active, fromModel }: { teamId: string; jobId: string; active: boolean; /** The run started from an imported model: its sampler checkpoints export as Hugging Face folders. */ fromModel: boolean }) {
  const trpc = useTRPC();
  const checkpoints = useQuery({ ...trpc.runs.checkpoints.queryOptions({ teamId, jobId, limit: 500 }), refetchInterval: active ? LIVE_REFETCH_MS : false });
  // Naming a base is a write on the team's runs: members and up, as the server checks.
  const mayName = atLeast(useTeam().role, 'MEMBER');
  if (checkpoints.isPending) return <Loading label="Loading checkpoints…" />;
  if (checkpoints.isLoadingError) return <ErrorNote error={checkpoints.error} />;
  if (checkpoints.data.length === 0) {
    return <p className="muted">{active ? 'No checkpoint yet: the run writes one every “checkpointEvery” steps and at its end.' : 'This run wrote no checkpoint.'}</p>;
  }
  return (
    <div className="table-wrap">
      <table className="table" aria-label="Checkpoints of this run">
        <thead>
          <tr>
            <th scope="col">Checkpoint</th>
            <th scope="col">Kind</th>
            <th scope="col" className="num">
              Step
            </th>
            <th scope="col" className="num">
              Size
            </th>
            <th scope="col">Metrics at its step</th>
            <th scope="col">Created</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {checkpoints.data.map((c) => (
            <tr key={c.id}>
              <th scope="row">
                <span className="id-link">{c.id}</span>
                {c.name ? <span className="cell-sub mono">base {c.name}</span> : null}
              </th>
              <td>
                {c.kind.toLowerCase()}
                {c.isAdapter ? <span className="badge badge-soft">LoRA</span> : null}
                {/* A run of independent learners writes one per learner. */}
                {c.agent ? <span className="cell-sub">{c.agent}’s policy</span> : null}
              </td>
              <td className="num">{c.step}</td>
              <td className="num">{formatBytes(c.bytes)}</td>
              <td className="small tabular">{metricsLine(c.metrics) || <span className="muted">—</span>}</td>
              <td className="nowrap muted small">{formatDateTime(c.createdAt)}</td>
              <td className="row-actions">
                <span className="inline-actions">
                  {c.kind === 'SAMPLER' ? (
                    <Link href={`/teams/${teamId}/playground/${c.id}`} className="btn btn-small" aria-label={`Open step ${c.step} in the playground`}>
                      Playground
                    </Link>
                  ) : null}
                  {mayName ? <NameCheckpoint teamId={teamId} checkpoint={c} /> : null}
                  {mayName && fromModel && c.kind === 'SAMPLER' ? <ExportCheckpoint teamId={teamId} checkpoint={c} /> : null}
                </span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
