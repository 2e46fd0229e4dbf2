import type { BucketState } from '../../core/state.js';

/**
 * What a rule's buckets remember about buckets that left the memory store's maps: a fixed-size,
 * conservative summary, so that a key flood cannot be used to get one's own bucket back full.
 *
 * Count-min style: `depth` rows of `width` cells. A bucket that leaves the maps is folded into
 * one cell per row (chosen by its id's seeded hash) by keeping the most restrictive state there:
 * the latest arrival time of a token bucket, the highest count of a window's latest window. A key
 * that is not in the maps reads the least restrictive of its `depth` cells. Every one of those
 * cells already holds a state at least as restrictive as the key's own, so the estimate can only
 * be stricter than the truth, never looser; it equals the truth whenever the key holds the
 * maximum of at least one of its cells.
 *
 * Cells hold `value`, and one `window` for the whole summary holds the latest window seen (a
 * token bucket's window is always 0). Counts of an earlier window are spent, so a later window
 * clears every cell. A sliding window (`'sliding-count'`) has a second set of cells for the
 * previous window's count, because both counts weigh on its decisions: each is kept at its own
 * maximum and read at its own minimum over the rows (every row bounds both of the key's counts),
 * and when the summary moves on by exactly one window, the current counts become the previous
 * ones instead of being cleared.
 *
 * A window that starts at each key's own time (an anchored window, `anchoredMs` its length)
 * shares no grid with other keys: a later window says nothing of an earlier key's. Its counts are
 * kept by the generation (a grid of the windows' length) their window started in, the current one
 * and the one before: a window that started earlier has ended before any window of the current
 * generation started. A key reads the larger of its two cells in each row (the least over the
 * rows), running until the latest window start folded plus one window: never shorter than its
 * own window, at most two windows longer.
 *
 * A rule with a lockout has two more sets of cells, for the end and the length of a key's last
 * block (see {@link foldBlock}), allocated the first time a bucket leaves while its block matters.
 *
 * Cells are allocated on the first fold (a rule that never rotates its maps never pays for them)
 * and never grow: `depth × width × 8` bytes, twice that for a sliding window, and twice more for
 * a lockout's cells.
 */
export class EvictedSummary {
  readonly depth: number;
  readonly width: number;
  private cells: Float64Array | undefined;
  /** Previous-window counts of a sliding window, previous-generation counts of an anchored one. */
  private previousCells: Float64Array | undefined;
  /** A lockout's block ends (`blockedUntil`), once a blocked bucket was folded. */
  private blockEndCells: Float64Array | undefined;
  /** A lockout's block lengths (`blockMs`), allocated with {@link blockEndCells}. */
  private blockLengthCells: Float64Array | undefined;
  /** The window the cells' values belong to. */
  private window = -Infinity;
  /** A sliding window's length in ms; 0 for the other shapes. */
  private readonly slidingMs: number;
  /** An anchored window's length in ms; 0 for the other shapes. */
  private readonly anchoredMs: number;
  /** The latest window start folded, for an anchored window. */
  private latestStart = -Infinity;

  /**
   * @param width a power of two, so that a cell index is a mask, not a division
   * @param slidingMs for a `'sliding-count'` rule, its window length; otherwise 0
   * @param anchoredMs for a `'window-count'` rule whose windows start at each key's own time, their
   *   length; otherwise 0
   */
  constructor(depth: number, width: number, slidingMs = 0, anchoredMs = 0) {
    this.depth = depth;
    this.width = width;
    this.slidingMs = slidingMs;
    this.anchoredMs = anchoredMs;
  }

  /** Bytes the cells take (0 until the first fold). */
  get byteLength(): number {
    let bytes = 0;
    for (const cells of [this.cells, this.previousCells, this.blockEndCells, this.blockLengthCells])
      if (cells !== undefined) bytes += cells.byteLength;
    return bytes;
  }

  /**
   * Folds the lockout of a bucket that leaves the maps while its block still matters (blocked,
   * or refused again soon enough to escalate): each of the key's cells keeps the latest block end
   * and the longest block length folded into it. They are absolute times, never cleared: an old
   * end reads as a block that is over.
   */
  foldBlock(first: number, second: number, state: BucketState): void {
    let ends = this.blockEndCells;
    let lengths = this.blockLengthCells;
    if (ends === undefined || lengths === undefined) {
      this.blockEndCells = ends = this.emptyCells();
      this.blockLengthCells = lengths = this.emptyCells();
    }
    this.raise(ends, first, second, state.blockedUntil);
    this.raise(lengths, first, second, state.blockMs);
  }

  /**
   * Writes into `target` the lockout a key that is not in the maps must start from (each field
   * the least of the key's cells: never earlier nor shorter than the key's own) and returns true;
   * returns false, leaving `target` alone, when no blocked bucket was folded into its cells.
   */
  estimateBlock(first: number, second: number, target: BucketState): boolean {
    const ends = this.blockEndCells;
    const lengths = this.blockLengthCells;
    if (ends === undefined || lengths === undefined) return false;
    const length = this.least(lengths, first, second);
    if (!(length > 0)) return false;
    target.blockedUntil = this.least(ends, first, second);
    target.blockMs = length;
    return true;
  }

  /**
   * Folds a bucket that leaves the maps. `first`/`second` are its id's hashes; `floor` is the
   * value at or below which a bucket is as good as new (a token bucket's scaled now; 0 for a
   * count), so full buckets are not folded and take no cell.
   */
  fold(first: number, second: number, state: BucketState, floor: number): void {
    if (this.slidingMs > 0) {
      this.foldSliding(first, second, state);
      return;
    }
    if (this.anchoredMs > 0) {
      this.foldAnchored(first, second, state);
      return;
    }
    const value = state.value;
    if (!(value > floor) || state.window < this.window) return;
    let cells = this.cells;
    if (cells === undefined) this.cells = cells = this.emptyCells();
    if (state.window > this.window) {
      cells.fill(-Infinity);
      this.window = state.window;
    }
    this.raise(cells, first, second, value);
  }

  /**
   * Writes into `target` the state a key that is not in the maps must start from, and returns
   * true; returns false (leaving `target` alone) when the summary knows nothing against the key,
   * i.e. it starts as a full bucket. `floor` as in {@link fold}.
   */
  estimate(first: number, second: number, floor: number, target: BucketState): boolean {
    const cells = this.cells;
    if (cells === undefined) return false;
    if (this.anchoredMs > 0) return this.estimateAnchored(first, second, floor, target);
    const value = this.least(cells, first, second);
    const previousCells = this.previousCells;
    if (previousCells === undefined) {
      if (!(value > floor)) return false;
      target.value = value;
      target.window = this.window;
      return true;
    }
    const previous = this.least(previousCells, first, second);
    if (!(value > floor) && !(previous > floor)) return false;
    target.value = value > 0 ? value : 0;
    target.previous = previous > 0 ? previous : 0;
    target.window = this.window;
    return true;
  }

  /**
   * A sliding window's state read as of the summary's window: a state one window older counts
   * only as the previous count; an older one has nothing left that weighs.
   */
  private foldSliding(first: number, second: number, state: BucketState): void {
    if (!(state.value > 0) && !(state.previous > 0)) return;
    const w = this.slidingMs;
    const [cells, previousCells] = this.pairedCells();
    if (state.window > this.window) {
      if (state.window === this.window + w) previousCells.set(cells);
      else previousCells.fill(-Infinity);
      cells.fill(-Infinity);
      this.window = state.window;
    }
    if (state.window === this.window) {
      this.raise(cells, first, second, state.value);
      this.raise(previousCells, first, second, state.previous);
    } else if (state.window === this.window - w) {
      this.raise(previousCells, first, second, state.value);
    }
  }

  /**
   * An anchored window's count, in the cells of the generation its window started in: a
   * generation later than the summary's moves the current cells to the previous ones (or clears
   * both when it is further on); a window of a generation older than the previous one is over.
   */
  private foldAnchored(first: number, second: number, state: BucketState): void {
    if (!(state.value > 0)) return;
    const length = this.anchoredMs;
    const generation = Math.floor(state.window / length) * length;
    const [cells, previousCells] = this.pairedCells();
    if (generation > this.window) {
      if (generation === this.window + length) previousCells.set(cells);
      else previousCells.fill(-Infinity);
      cells.fill(-Infinity);
      this.window = generation;
    }
    if (generation === this.window) this.raise(cells, first, second, state.value);
    else if (generation === this.window - length) this.raise(previousCells, first, second, state.value);
    else return;
    if (state.window > this.latestStart) this.latestStart = state.window;
  }

  /** An anchored window's estimate: see the class comment. */
  private estimateAnchored(first: number, second: number, floor: number, target: BucketState): boolean {
    const [cells, previousCells] = this.pairedCells();
    const mask = this.width - 1;
    let value = Infinity;
    for (let row = 0, offset = 0; row < this.depth; row++, offset += this.width) {
      const index = offset + ((first + row * second) & mask);
      const current = cells[index] as number;
      const previous = previousCells[index] as number;
      const larger = current > previous ? current : previous;
      if (larger < value) value = larger;
    }
    if (!(value > floor)) return false;
    target.value = value;
    target.window = this.latestStart;
    return true;
  }

  /** The current and previous cells, allocated on first use. */
  private pairedCells(): [Float64Array, Float64Array] {
    let cells = this.cells;
    let previousCells = this.previousCells;
    if (cells === undefined || previousCells === undefined) {
      this.cells = cells = this.emptyCells();
      this.previousCells = previousCells = this.emptyCells();
    }
    return [cells, previousCells];
  }

  /** A set of cells holding nothing yet. */
  private emptyCells(): Float64Array {
    return new Float64Array(this.depth * this.width).fill(-Infinity);
  }

  /** True once something was folded: before that, no key needs hashing to be looked up. */
  get isEmpty(): boolean {
    return this.cells === undefined && this.blockEndCells === undefined;
  }

  /** Keeps in each of a key's cells the larger of the cell and `value`. */
  private raise(cells: Float64Array, first: number, second: number, value: number): void {
    const { depth, width } = this;
    const mask = width - 1;
    for (let row = 0, offset = 0; row < depth; row++, offset += width) {
      const index = offset + ((first + row * second) & mask);
      if ((cells[index] as number) < value) cells[index] = value;
    }
  }

  /** The smallest of a key's cells. */
  private least(cells: Float64Array, first: number, second: number): number {
    const { depth, width } = this;
    const mask = width - 1;
    let smallest = Infinity;
    for (let row = 0, offset = 0; row < depth; row++, offset += width) {
      const value = cells[offset + ((first + row * second) & mask)] as number;
      if (value < smallest) smallest = value;
    }
    return smallest;
  }
}
