/**
 * The planner's binary heap (plan.ts's indexes): a min-heap by `less`; `onMove` (optional) learns
 * each item's position, for `update` (an item whose key changed moves in place), and `retain`
 * drops stale entries in one pass.
 */
export class Heap<T> {
  readonly items: T[] = [];
  constructor(
    private readonly less: (a: T, b: T) => boolean,
    private readonly onMove?: (item: T, at: number) => void,
  ) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    this.items.push(item);
    this.place(item, this.items.length - 1);
    this.up(this.items.length - 1);
  }

  pop(): T | undefined {
    const top = this.items[0];
    const last = this.items.pop();
    if (this.items.length > 0 && last !== undefined) {
      this.place(last, 0);
      this.down(0);
    }
    return top;
  }

  /** The item at `at` changed its key. */
  update(at: number): void {
    this.down(this.up(at));
  }

  /** Drops the items `keep` refuses (stale entries), in O(n). */
  retain(keep: (item: T) => boolean): void {
    let n = 0;
    for (const item of this.items) if (keep(item)) this.items[n++] = item;
    this.items.length = n;
    for (let at = 0; at < n; at += 1) this.onMove?.(this.items[at], at);
    for (let at = (n >> 1) - 1; at >= 0; at -= 1) this.down(at);
  }

  private place(item: T, at: number): void {
    this.items[at] = item;
    this.onMove?.(item, at);
  }

  private up(at: number): number {
    const item = this.items[at];
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!this.less(item, this.items[parent])) break;
      this.place(this.items[parent], at);
      at = parent;
    }
    this.place(item, at);
    return at;
  }

  private down(at: number): void {
    const item = this.items[at];
    const n = this.items.length;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.less(this.items[right], this.items[left]) ? right : left;
      if (!this.less(this.items[child], item)) break;
      this.place(this.items[child], at);
      at = child;
    }
    this.place(item, at);
  }
}
