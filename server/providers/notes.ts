// What a job waiting for capacity is told about the cluster providers of its pools (issue 22):
// "waiting for Slurm (cluster): 2 workers pending (Resources)", or the cluster's refusal.
import type { Db } from '../db/client';

const LIVE = ['SUBMITTING', 'PENDING', 'RUNNING'] as const;

/** Per pool (a team's id, or null for the shared pool): one line about its providers' state, if it has any. */
export async function providerNotes(db: Db, now = new Date()): Promise<Map<string | null, string>> {
  const providers = await db.clusterProvider.findMany({
    orderBy: { createdAt: 'asc' },
    select: {
      teamId: true, name: true, lastError: true, backoffUntil: true, settings: true,
      launches: { where: { state: { in: [...LIVE] } }, select: { state: true, reason: true, workerToken: { select: { _count: { select: { workers: true } } } } } },
    },
  });
  const notes = new Map<string | null, string>();
  for (const p of providers) {
    const pending = p.launches.filter((l) => l.state !== 'RUNNING');
    const starting = p.launches.filter((l) => l.state === 'RUNNING' && l.workerToken._count.workers === 0);
    const maxWorkers = (p.settings as { maxWorkers?: number }).maxWorkers;
    let state: string;
    if (p.backoffUntil && p.backoffUntil > now && p.lastError) state = `launches stopped until ${p.backoffUntil.toISOString().slice(11, 19)} UTC: ${p.lastError}`;
    else if (pending.length > 0 || starting.length > 0) {
      // Both, when some have started and others wait in Slurm's queue: "2 workers starting, 1 worker pending (Resources)".
      const reasons = [...new Set(pending.map((l) => l.reason).filter((r): r is string => !!r && r !== 'None'))];
      const workers = (n: number) => `${n} worker${n === 1 ? '' : 's'}`;
      state = [
        starting.length > 0 ? `${workers(starting.length)} starting` : null,
        pending.length > 0 ? `${workers(pending.length)} pending${reasons.length > 0 ? ` (${reasons.join(', ')})` : ''}` : null,
      ]
        .filter(Boolean)
        .join(', ');
    }
    else if (maxWorkers !== undefined && p.launches.length >= maxWorkers) state = `at its limit of ${maxWorkers} workers`;
    else state = 'no launch under way';
    const note = `waiting for Slurm (${p.name}): ${state}`;
    notes.set(p.teamId, notes.has(p.teamId) ? `${notes.get(p.teamId)}; ${note}` : note);
  }
  return notes;
}
