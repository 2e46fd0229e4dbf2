/** One of the heaviest ids seen: its estimated count and the most that estimate may be over. */
export interface HeavyHitter {
  readonly id: string;
  /** Never below the id's true count. */
  readonly count: number;
  /** The estimate is at most this much above the true count (0 when the id was never evicted). */
  readonly error: number;
}

interface Entry {
  id: string;
  count: number;
  error: number;
}

/**
 * The Space-Saving summary (Metwally, Agrawal and El Abbadi): the heaviest ids of a stream in a
 * fixed number of counters, whatever the number of distinct ids. An id not tracked takes the
 * place of the smallest counter, inheriting its count as its possible error, so every id whose
 * true count exceeds total/capacity is always held. The counters form a min-heap, so an offer
 * costs O(log capacity) and no memory beyond the capacity is ever allocated for new ids. The
 * dashboard's offenders and Envoy's detailed_metric values are both counted in it.
 */
export class SpaceSaving {
  private readonly heap: Entry[] = [];
  private readonly index = new Map<string, number>();
  private seen = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('SpaceSaving capacity must be a whole number of at least 1');
  }

  /** Counts `weight` occurrences of `id` (a positive number; one by default). */
  offer(id: string, weight = 1): void {
    this.seen += weight;
    const at = this.index.get(id);
    if (at !== undefined) {
      this.heap[at]!.count += weight;
      this.down(at);
      return;
    }
    if (this.heap.length < this.capacity) {
      this.heap.push({ id, count: weight, error: 0 });
      this.index.set(id, this.heap.length - 1);
      this.up(this.heap.length - 1);
      return;
    }
    // The entry is reused, not replaced: a stream of new ids allocates nothing but their strings.
    const smallest = this.heap[0]!;
    this.index.delete(smallest.id);
    smallest.error = smallest.count;
    smallest.count += weight;
    smallest.id = id;
    this.index.set(id, 0);
    this.down(0);
  }

  /** Occurrences offered so far (the sum of the weights). */
  get total(): number {
    return this.seen;
  }

  /** The `n` heaviest, heaviest first (ties by the smaller error). */
  top(n = this.capacity): HeavyHitter[] {
    return this.heap
      .map(({ id, count, error }) => ({ id, count, error }))
      .sort((a, b) => b.count - a.count || a.error - b.error || (a.id < b.id ? -1 : 1))
      .slice(0, n);
  }

  private up(i: number): void {
    const { heap } = this;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.count <= heap[i]!.count) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    const { heap } = this;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < heap.length && heap[left]!.count < heap[least]!.count) least = left;
      if (right < heap.length && heap[right]!.count < heap[least]!.count) least = right;
      if (least === i) return;
      this.swap(i, least);
      i = least;
    }
  }

  private swap(a: number, b: number): void {
    const { heap, index } = this;
    const first = heap[a]!;
    heap[a] = heap[b]!;
    heap[b] = first;
    index.set(heap[a]!.id, a);
    index.set(first.id, b);
  }
}
