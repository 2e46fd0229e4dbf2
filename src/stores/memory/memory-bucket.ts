import type { StateShape } from '../../core/algorithm.js';
import type { BucketState } from '../../core/state.js';

/**
 * A bucket as the memory store keeps it: the algorithm's numbers and a lockout's two, plus its id's two hashes
 * once they are known, so that folding it into the evicted-bucket summary when it leaves the
 * maps does not hash its id again. `first` is -1 until the id is hashed.
 */
export class MemoryBucket implements BucketState {
  value: number;
  window: number;
  previous: number;
  blockedUntil = 0;
  blockMs = 0;
  first: number;
  second: number;

  constructor(value: number, window: number, previous: number, first: number, second: number) {
    this.value = value;
    this.window = window;
    this.previous = previous;
    this.first = first;
    this.second = second;
  }
}

/**
 * The state a reset leaves behind when the summary still remembers the key: a full bucket at any
 * clock reading (a token bucket's arrival time, a window earlier than any clock, with no count in
 * it nor in the one before), which is never folded back while it stays that way.
 */
export function resetBucket(shape: StateShape): MemoryBucket {
  return shape === 'arrival-time'
    ? new MemoryBucket(-Infinity, 0, 0, -1, 1)
    : new MemoryBucket(0, -Infinity, 0, -1, 1);
}
