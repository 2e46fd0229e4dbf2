/**
 * The most frequent items of a stream in bounded memory (the Space-Saving algorithm): at most
 * `capacity` counters; an item not tracked takes over the smallest counter, inheriting its count
 * as an upper bound of its error. Any item whose true count exceeds total / capacity is tracked.
 */
export class TopK {
  private readonly counts = new Map<string, number>();

  constructor(private readonly capacity: number) {}

  add(item: string, weight = 1): void {
    const count = this.counts.get(item);
    if (count !== undefined) {
      this.counts.set(item, count + weight);
      return;
    }
    if (this.counts.size < this.capacity) {
      this.counts.set(item, weight);
      return;
    }
    let smallest: string | undefined;
    let least = Infinity;
    for (const [candidate, c] of this.counts)
      if (c < least) {
        least = c;
        smallest = candidate;
      }
    this.counts.delete(smallest!);
    this.counts.set(item, least + weight);
  }

  /** The `k` largest counters, largest first. */
  top(k: number): [string, number][] {
    return [...this.counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, k);
  }

  get size(): number {
    return this.counts.size;
  }
}
