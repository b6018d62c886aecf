import type { Db } from './db/client';
import { readMigrations } from './db/migrate';
import { WORKER_ONLINE_WINDOW_MS } from './scheduler/timing';
import { version } from './version';

export interface HealthReport {
  status: 'ok' | 'degraded';
  version: string;
  database: { reachable: boolean; latencyMs: number | null; embedded: boolean };
  migrations: { applied: number; pending: number; latest: string | null };
  workers: { online: number };
  uptimeSeconds: number;
}

export function createHealthCheck(db: Db, opts: { embedded: boolean; startedAt: number }): () => Promise<HealthReport> {
  const onDisk = readMigrations().map((m) => m.name); // read once: the files do not change under a running server
  return async () => {
    const started = performance.now();
    let reachable = true;
    let latencyMs: number | null = null;
    let appliedNames: string[] = [];
    let online = 0;
    try {
      const rows = await db.$queryRaw<Array<{ migration_name: string }>>`
        SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`;
      latencyMs = Math.round((performance.now() - started) * 10) / 10;
      appliedNames = rows.map((r) => r.migration_name);
      online = await db.worker.count({
        where: { state: { in: ['ONLINE', 'DRAINING'] }, lastHeartbeatAt: { gt: new Date(Date.now() - WORKER_ONLINE_WINDOW_MS) } },
      });
    } catch {
      reachable = false;
    }
    const applied = onDisk.filter((n) => appliedNames.includes(n));
    const pending = onDisk.length - applied.length;
    return {
      status: reachable && pending === 0 ? 'ok' : 'degraded',
      version,
      database: { reachable, latencyMs, embedded: opts.embedded },
      migrations: { applied: applied.length, pending, latest: applied.at(-1) ?? null },
      workers: { online },
      uptimeSeconds: Math.round((Date.now() - opts.startedAt) / 1000),
    };
  };
}
