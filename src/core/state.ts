/**
 * The mutable state of one key under one rule, as the memory store keeps it and as the pure
 * algorithms read and update it. A few numbers, whatever the traffic, so that memory per key is
 * constant; how they read depends on the rule's shape (see `StateShape` in `rules/rule.ts`):
 *
 * - token bucket: `value` is the theoretical arrival time (GCRA) in scaled units;
 * - fixed window, calendar quota: `value` is the count spent in the window that starts at
 *   `window` (ms since the Unix epoch);
 * - sliding window: the same, and `previous` is the count of the window before it.
 *
 * Two more numbers hold a lockout (a rule's `block` option), the same for every algorithm.
 * Unused fields are 0. A holder object rather than a bare number: updating a field in place costs
 * no allocation, where writing a new non-integer number into a Map would box it on every take.
 */
export interface BucketState {
  value: number;
  window: number;
  previous: number;
  /**
   * A rule with a lockout (`block`): the end of the key's last block, ms since the Unix epoch
   * (0 when never blocked). The key is refused until then.
   */
  blockedUntil: number;
  /** The length of the key's last block in ms (0 when never blocked): the next one escalates from it. */
  blockMs: number;
}
