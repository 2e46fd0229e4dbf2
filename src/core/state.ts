/**
 * The mutable state of one key under one rule, as the memory store keeps it and as the pure
 * algorithms read and update it. Three numbers, whatever the traffic, so that memory per key is
 * constant; how they read depends on the rule's shape (see `StateShape` in `algorithm.ts`):
 *
 * - token bucket: `value` is the theoretical arrival time (GCRA) in scaled units;
 * - fixed window, calendar quota: `value` is the count spent in the window that starts at
 *   `window` (ms since the Unix epoch);
 * - sliding window: the same, and `previous` is the count of the window before it.
 *
 * Unused fields are 0. A holder object rather than a bare number: updating a field in place costs
 * no allocation, where writing a new non-integer number into a Map would box it on every take.
 */
export interface BucketState {
  value: number;
  window: number;
  previous: number;
}
