'use client';
import { useMemo } from 'react';
import { ALGORITHMS, describeOptions, type Algorithm, OPTION_GROUP_TITLES, type OptionGroup } from '../../../sdk/training-config';
import { formatBytes, formatDuration } from '../format';

/** The part of jobs.get this section reads. */
export interface ConfiguredJob {
  kind: string;
  config: unknown;
  priority: number;
  deviceCount: number;
  deviceKind: string | null;
  memoryBytes: bigint | number;
  timeLimitSeconds: number | null;
  maxAttempts: number;
}

interface Entry {
  name: string;
  value: unknown;
  description?: string;
  /** Differs from the documented default (set by the manifest or the job). */
  changed?: boolean;
}

const GROUP_TITLES: Record<OptionGroup | 'job' | 'resources' | 'other', string> = { job: 'Job', resources: 'Resources', ...OPTION_GROUP_TITLES, other: 'Other' };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function show(value: unknown): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/**
 * The job's resolved config, grouped as the training options are (sdk/training-config.ts: run,
 * model, optimiser, sampling, the algorithm's own), each option with its description on hover and
 * a mark where it differs from the default; then what the job asked of the scheduler.
 */
function groupConfig(job: ConfiguredJob): Array<{ id: string; title: string; entries: Entry[] }> {
  const config = isRecord(job.config) ? job.config : {};
  const groups = new Map<string, Entry[]>();
  const add = (group: string, entry: Entry) => groups.set(group, [...(groups.get(group) ?? []), entry]);

  for (const [name, value] of Object.entries(config)) if (name !== 'training') add('job', { name, value });
  const training = isRecord(config.training) ? config.training : null;
  const algorithm = training && ALGORITHMS.includes(training.algorithm as Algorithm) ? (training.algorithm as Algorithm) : null;
  if (training) {
    const docs = new Map(algorithm ? describeOptions(algorithm).map((d) => [d.name, d]) : []);
    const flat = Object.entries(training).flatMap(([k, v]) => (k === 'model' && isRecord(v) ? Object.entries(v).map(([m, mv]) => [`model.${m}`, mv] as const) : [[k, v] as const]));
    for (const [name, value] of flat) {
      if (name === 'algorithm') {
        add('job', { name: 'algorithm', value });
        continue;
      }
      const doc = docs.get(name);
      add(doc?.group ?? 'other', { name, value, description: doc?.description, changed: doc ? JSON.stringify(doc.default) !== JSON.stringify(value) : undefined });
    }
  }
  add('resources', { name: 'priority', value: job.priority });
  add('resources', { name: 'devices', value: `${job.deviceCount}${job.deviceKind ? ` ${job.deviceKind}` : ''}` });
  if (Number(job.memoryBytes) > 0) add('resources', { name: 'memory', value: formatBytes(job.memoryBytes) });
  add('resources', { name: 'time limit', value: job.timeLimitSeconds ? formatDuration(job.timeLimitSeconds) : 'none' });
  add('resources', { name: 'max attempts', value: job.maxAttempts });

  const order = ['job', 'resources', 'run', 'model', 'optimiser', 'sampling', 'grpo', 'ppo', 'multi-agent', 'other'];
  return order.filter((id) => groups.has(id)).map((id) => ({ id, title: GROUP_TITLES[id as keyof typeof GROUP_TITLES], entries: groups.get(id)! }));
}

export function RunConfig({ job }: { job: ConfiguredJob }) {
  const groups = useMemo(() => groupConfig(job), [job]);
  const changed = groups.some((g) => g.entries.some((e) => e.changed));
  return (
    <>
      {changed ? <p className="muted small">Options in bold differ from their documented default (set by the environment’s manifest or the job).</p> : null}
      <div className="config-groups">
        {groups.map((g) => (
          <section key={g.id} className="panel" aria-labelledby={`config-${g.id}`}>
            <h2 id={`config-${g.id}`}>{g.title}</h2>
            <table className="config-table">
              <tbody>
                {g.entries.map((e) => (
                  <tr key={e.name} className={e.changed ? 'changed' : undefined} title={e.description}>
                    <th scope="row">{e.name}</th>
                    <td>
                      {show(e.value)}
                      {e.changed ? <span className="sr-only"> (not the default)</span> : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        ))}
      </div>
    </>
  );
}
