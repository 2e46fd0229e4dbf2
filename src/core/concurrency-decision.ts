import type { Decision } from './decision.js';

/**
 * The decisions a concurrency limit made (leases), told apart from a rate's without a field of
 * their own (every decision keeps one shape): header writers describe them with the IETF draft's
 * `qu="concurrent-requests"` quota unit and no window, and leave them out of the legacy
 * `X-RateLimit-*` set, which has no way to say "in flight".
 */
const concurrent = new WeakSet<Decision>();

/** Marks `decision` as a concurrency limit's and returns it. */
export function markConcurrent(decision: Decision): Decision {
  concurrent.add(decision);
  return decision;
}

/**
 * True for a decision of a concurrency limit.
 *
 * @example
 * if (isConcurrentDecision(decision)) console.log('requests in flight');
 */
export function isConcurrentDecision(decision: Decision): boolean {
  return concurrent.has(decision);
}
