import type { StateShape } from '../../core/rules/rule.js';
import type { BucketState } from '../../core/state.js';

/**
 * A bucket as the memory store keeps it: the algorithm's numbers, plus its id's two hashes once
 * they are known, so that folding it into the evicted-bucket summary when it leaves the maps
 * does not hash its id again. `first` is -1 (and `second` 1) until the id is hashed, and the
 * hashes are written once known.
 *
 * A lockout's two numbers (`blockedUntil`, `blockMs`) are read from the prototype as 0: a rule
 * without a lockout never writes them, and its buckets do not pay 16 bytes each for them (a
 * flood fills 8,192 buckets per rule). A rule with one keeps {@link BlockingMemoryBucket}s.
 */
export class MemoryBucket implements BucketState {
  value: number;
  window: number;
  previous: number;
  first: number;
  second: number;
  declare blockedUntil: number;
  declare blockMs: number;

  constructor(value: number, window: number, previous: number) {
    this.value = value;
    this.window = window;
    this.previous = previous;
    this.first = -1;
    this.second = 1;
  }
}
// Shared by every bucket of a rule without a lockout, never written to.
Object.defineProperties(MemoryBucket.prototype, {
  blockedUntil: { value: 0, writable: true },
  blockMs: { value: 0, writable: true },
});

/** A bucket of a rule with a lockout: the lockout's numbers are its own. */
export class BlockingMemoryBucket extends MemoryBucket {
  constructor(value: number, window: number, previous: number) {
    super(value, window, previous);
    this.blockedUntil = 0;
    this.blockMs = 0;
  }
}

/** A bucket of a rule with (`blocking`) or without a lockout. */
export function newBucket(blocking: boolean, value: number, window: number, previous: number): MemoryBucket {
  return blocking
    ? new BlockingMemoryBucket(value, window, previous)
    : new MemoryBucket(value, window, previous);
}

/**
 * The state a reset leaves behind when the summary still remembers the key: a full bucket at any
 * clock reading (a token bucket's arrival time, a window earlier than any clock, with no count in
 * it nor in the one before), which is never folded back while it stays that way.
 */
export function resetBucket(shape: StateShape, blocking: boolean): MemoryBucket {
  return shape === 'arrival-time'
    ? newBucket(blocking, -Infinity, 0, 0)
    : newBucket(blocking, 0, -Infinity, 0);
}
