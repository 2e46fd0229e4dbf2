/**
 * The mutable state of one key under one rule, as the memory store keeps it and as the pure
 * algorithms read and update it. Two numbers, whatever the traffic (A1: O(1) per key):
 *
 * - token bucket: `value` is the theoretical arrival time (GCRA) in scaled units, `window` unused;
 * - calendar quota: `value` is the count spent in the window that starts at `window` (ms).
 *
 * A holder object rather than a bare number: updating a field in place costs no allocation,
 * where writing a new non-integer number into a Map would box it on every take.
 */
export interface BucketState {
  value: number;
  window: number;
}
