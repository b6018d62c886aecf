/**
 * A seeded pseudo-random generator (mulberry32). Environments must draw every random choice
 * from `ctx.rng` so that an episode replays exactly from its seed.
 */
export class Rng {
  private s: number;

  constructor(seed: number) {
    // Mix the seed once so that nearby seeds (0, 1, 2, …) start far apart.
    this.s = hash32(Math.floor(seed) >>> 0);
  }

  /** A float in [0, 1). */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) | 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max) — max is exclusive. */
  int(min: number, max: number): number {
    if (!(max > min)) throw new RangeError(`rng.int(${min}, ${max}): max must be greater than min`);
    return min + Math.floor(this.next() * (max - min));
  }

  /** True with probability p. */
  bool(p = 0.5): boolean {
    return this.next() < p;
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('rng.pick: empty array');
    return items[this.int(0, items.length)];
  }

  /** A shuffled copy (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i + 1);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  /** An independent generator derived from this one (for a sub-task that must not shift this stream). */
  fork(): Rng {
    return new Rng(this.int(0, 0x7fffffff));
  }
}

/** A 32-bit integer hash (from splitmix32's finaliser). */
export function hash32(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}
