// How many workers a cluster provider should start now (issue 22), and how long it waits after
// failed launches. Pure arithmetic over what the poll read, so the rules read on their own.
import type { SlurmSettings } from '../../sdk/provider-protocol';

export interface LaunchCounts {
  /** Devices asked for by queued jobs that wait for capacity this provider's workers would bring. */
  demandDevices: number;
  /** Launches that will add a worker but have not yet: not yet running, or running without a registered worker. */
  coming: number;
  /** Launches that hold or will hold a cluster job: every launch not yet over. */
  live: number;
  /** Launches the cluster has not started yet (submitted or pending in its queue). */
  pending: number;
}

/**
 * Workers to launch: enough for the waiting demand (each job fits one worker, so the demand's
 * devices over a worker's devices, rounded up, is how many it needs at most), less those coming,
 * within the provider's limit on workers and on pending launches (so no launch storm).
 */
export function launchesWanted(settings: Pick<SlurmSettings, 'devicesPerWorker' | 'maxWorkers' | 'maxPendingLaunches'>, c: LaunchCounts): number {
  const needed = Math.ceil(c.demandDevices / settings.devicesPerWorker);
  return Math.max(0, Math.min(needed - c.coming, settings.maxWorkers - c.live, settings.maxPendingLaunches - c.pending));
}

/** After `failures` failed launches in a row: 10 s, doubling, at most 10 minutes. */
export function backoffSeconds(failures: number): number {
  return failures <= 0 ? 0 : Math.min(600, 10 * 2 ** (failures - 1));
}
