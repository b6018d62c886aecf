/**
 * A small seeded random number generator (sfc32) whose whole state is four 32-bit words, so it
 * can be saved in a checkpoint and restored to continue the exact same stream.
 */
export type RngState = [number, number, number, number];

export class Rng {
  private s: Uint32Array;

  constructor(seed: number | RngState = 0) {
    this.s = new Uint32Array(4);
    if (Array.isArray(seed)) {
      this.s.set(seed);
    } else {
      // splitmix32 spreads a small integer seed over the four words.
      let x = seed >>> 0;
      for (let i = 0; i < 4; i++) {
        x = (x + 0x9e3779b9) >>> 0;
        let z = x;
        z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
        z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
        this.s[i] = (z ^ (z >>> 16)) >>> 0;
      }
      for (let i = 0; i < 12; i++) this.nextUint32();
    }
  }

  nextUint32(): number {
    const s = this.s;
    const t = (((s[0] + s[1]) >>> 0) + s[3]) >>> 0;
    s[3] = (s[3] + 1) >>> 0;
    s[0] = s[1] ^ (s[1] >>> 9);
    s[1] = (s[2] + (s[2] << 3)) >>> 0;
    s[2] = ((s[2] << 21) | (s[2] >>> 11)) >>> 0;
    s[2] = (s[2] + t) >>> 0;
    return t;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Standard normal (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** In-place Fisher-Yates shuffle. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }

  getState(): RngState {
    return [this.s[0], this.s[1], this.s[2], this.s[3]];
  }

  setState(state: RngState): void {
    this.s.set(state);
  }
}
