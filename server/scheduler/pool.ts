// Rule 5's arithmetic (plan.ts): when a pool of interchangeable units (a worker's matching
// devices, or a team's quota) frees enough for a job, and whether taking some of it would make a
// waiting job start later. Functions of the pool and the time only, not of the planner's state,
// so that the rule reads on its own.

/** A release time that is not known: a job without a time limit is taken to run on. */
export const NEVER = Number.POSITIVE_INFINITY;

/** A pool of interchangeable units (a worker's matching devices, or a team's quota). */
export interface Pool {
  capacity: number;
  /** Units held, by holder; stopping holders count as released now. */
  held: { units: number; release: number }[];
}

/**
 * Rule 5: would taking `add.units` of the pool until `add.release` make a job needing `need`
 * start later? Jobs without a time limit may end at any moment, so the answer must hold whenever
 * they end. Taking is safe when it ends before the earliest start the waiting job could possibly
 * have (every open-ended job ending now), or when, however the open-ended jobs end, the units it
 * takes are spare at that start: the most the others can still hold then (the largest sum of
 * holdings that could outlive the earliest start and still leave room for the job) plus the
 * units taken plus the need fit in the pool. With only declared limits this is exact: the start
 * computed from the limits does not move.
 */
export function delays(now: number, pool: Pool, need: number, add: { units: number; release: number }): boolean {
  if (add.units === 0) return false;
  const earliest = earliestStart(now, pool, need);
  if (add.release <= earliest) return false;
  const outliving = pool.held.filter((h) => h.release > earliest).map((h) => h.units);
  return largestSubsetSum(outliving, pool.capacity - need) + add.units + need > pool.capacity;
}

/** The earliest start possible: every holder without a time limit ending now. */
export function earliestStart(now: number, pool: Pool, need: number): number {
  const held = pool.held.map((h) => ({ units: h.units, release: h.release === NEVER ? now : h.release }));
  return startOf(now, { capacity: pool.capacity, held }, need);
}

/**
 * The first time `need` units of the pool are free, by the holders' releases: now, or the
 * earliest release after which the holders still holding fit beside the need. One sort and one
 * sweep (a team's quota pool has hundreds of holders, and every placement asks).
 */
export function startOf(now: number, pool: Pool, need: number): number {
  let holding = 0;
  const later: { units: number; release: number }[] = [];
  for (const h of pool.held) {
    if (h.release <= now) continue;
    holding += h.units;
    if (h.release < NEVER) later.push(h);
  }
  if (holding + need <= pool.capacity) return now;
  later.sort((a, b) => a.release - b.release);
  for (let k = 0; k < later.length; ) {
    const t = later[k].release;
    for (; k < later.length && later[k].release === t; k += 1) holding -= later[k].units;
    if (holding + need <= pool.capacity) return t;
  }
  return NEVER;
}

/** The largest sum of some of `items` (small whole numbers: device counts) that is at most `limit`. */
export function largestSubsetSum(items: number[], limit: number): number {
  if (limit <= 0) return 0;
  let total = 0;
  for (const item of items) total += item;
  if (total <= limit) return total;
  // Subset sums over a bitset, with equal items taken in binary bundles (1, 2, 4, … of them):
  // a few distinct gang sizes repeated hundreds of times cost a few passes each, not hundreds.
  const counts = new Map<number, number>();
  for (const item of items) if (item > 0 && item <= limit) counts.set(item, (counts.get(item) ?? 0) + 1);
  const reachable = new Uint8Array(limit + 1);
  reachable[0] = 1;
  for (const [item, count] of counts) {
    for (let left = count, bundle = 1; left > 0; bundle *= 2) {
      const take = Math.min(bundle, left);
      left -= take;
      const size = item * take;
      for (let v = limit; v >= size; v -= 1) if (reachable[v - size]) reachable[v] = 1;
    }
  }
  let best = limit;
  while (best > 0 && !reachable[best]) best -= 1;
  return best;
}
