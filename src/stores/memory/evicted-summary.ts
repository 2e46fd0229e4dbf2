import type { BucketState } from '../../core/state.js';

/**
 * What a rule's buckets remember about buckets that left the memory store's maps: a fixed-size,
 * conservative summary, so that a key flood cannot be used to get one's own bucket back full.
 *
 * Count-min style: `depth` rows of `width` cells. A bucket that leaves the maps is folded into
 * one cell per row (chosen by its id's seeded hash) by keeping the most restrictive state there:
 * the latest arrival time of a token bucket, the highest count of a quota's latest window. A key
 * that is not in the maps reads the least restrictive of its `depth` cells. Every one of those
 * cells already holds a state at least as restrictive as the key's own, so the estimate can only
 * be stricter than the truth, never looser; it equals the truth whenever the key holds the
 * maximum of at least one of its cells.
 *
 * Both algorithms fit one shape, the two-number {@link BucketState}: cells hold `value`, and one
 * `window` for the whole summary holds the latest quota window seen (a token bucket's window is
 * always 0). Counts of an earlier window are spent, so a later window clears every cell.
 *
 * Cells are allocated on the first fold (a rule that never rotates its maps never pays for them)
 * and never grow: `depth × width × 8` bytes.
 */
export class EvictedSummary {
  readonly depth: number;
  readonly width: number;
  private cells: Float64Array | undefined;
  /** The window the cells' values belong to. */
  private window = -Infinity;

  /** @param width a power of two, so that a cell index is a mask, not a division */
  constructor(depth: number, width: number) {
    this.depth = depth;
    this.width = width;
  }

  /** Bytes the cells take (0 until the first fold). */
  get byteLength(): number {
    return this.cells === undefined ? 0 : this.cells.byteLength;
  }

  /**
   * Folds a bucket that leaves the maps. `first`/`second` are its id's hashes; `floor` is the
   * value at or below which a bucket is as good as new (a token bucket's scaled now; 0 for a
   * quota), so full buckets are not folded and take no cell.
   */
  fold(first: number, second: number, state: BucketState, floor: number): void {
    const value = state.value;
    if (!(value > floor) || state.window < this.window) return;
    let cells = this.cells;
    if (cells === undefined) {
      cells = new Float64Array(this.depth * this.width).fill(-Infinity);
      this.cells = cells;
    }
    if (state.window > this.window) {
      cells.fill(-Infinity);
      this.window = state.window;
    }
    const mask = this.width - 1;
    for (let row = 0, offset = 0; row < this.depth; row++, offset += this.width) {
      const index = offset + ((first + row * second) & mask);
      if ((cells[index] as number) < value) cells[index] = value;
    }
  }

  /**
   * Writes into `target` the state a key that is not in the maps must start from, and returns
   * true; returns false (leaving `target` alone) when the summary knows nothing against the key,
   * i.e. it starts as a full bucket. `floor` as in {@link fold}.
   */
  estimate(first: number, second: number, floor: number, target: BucketState): boolean {
    const cells = this.cells;
    if (cells === undefined) return false;
    const mask = this.width - 1;
    let least = Infinity;
    for (let row = 0, offset = 0; row < this.depth; row++, offset += this.width) {
      const value = cells[offset + ((first + row * second) & mask)] as number;
      if (value < least) {
        if (!(value > floor)) return false;
        least = value;
      }
    }
    target.value = least;
    target.window = this.window;
    return true;
  }

  /** True once something was folded: before that, no key needs hashing to be looked up. */
  get isEmpty(): boolean {
    return this.cells === undefined;
  }
}
