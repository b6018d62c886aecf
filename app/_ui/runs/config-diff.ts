/**
 * What differs between runs' configs: each config flattened to dotted paths (`training.lr`),
 * and the paths whose values are not all the same (a path one run lacks counts as differing).
 */
type Flat = Map<string, string>;

function flatten(value: unknown, prefix = '', out: Flat = new Map()): Flat {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0 && prefix) out.set(prefix, '{}');
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) {
    out.set(prefix, JSON.stringify(value));
  }
  return out;
}

export interface DiffRow {
  path: string;
  /** One per run, in order; undefined where the run's config has no such path. */
  values: Array<string | undefined>;
}

export function configDiff(configs: readonly unknown[]): DiffRow[] {
  const flats = configs.map((c) => flatten(c));
  const paths = [...new Set(flats.flatMap((f) => [...f.keys()]))].sort();
  return paths
    .map((path) => ({ path, values: flats.map((f) => f.get(path)) }))
    .filter((row) => row.values.some((v) => v !== row.values[0]));
}
