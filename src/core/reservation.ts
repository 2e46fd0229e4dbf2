import type { Rule } from './rules/rule.js';
import { SluiceError } from './errors.js';

/** A rule's `reserve`, for a caller that holds the rule (`reserve.call(rule, …)`). */
export type Reserver = NonNullable<Rule['reserve']>;

/**
 * The longest a reservation may wait for its slot: one hour. A wait is a timer in the process
 * that reserved, and a queue that long ahead of a bucket is a backlog, not smoothing; the bound
 * also keeps a token bucket's scaled arrival time exact (an hour at the highest rate is 3.6 × 10^12
 * scaled units).
 */
export const MAX_WAIT_MS = 3_600_000;

/**
 * The rule's `reserve`, when it can reserve a slot ahead: a token bucket without a lockout. A
 * window counts only its own window, so it has no slot in the next one to give; a lockout's
 * refusal starts a block, which a queue of waiters would only feed.
 * @throws SluiceError `SLUICE_CONFIG` naming the rule's kind
 */
export function reserverOf(rule: Rule): Reserver {
  const reserve = rule.reserve;
  if (typeof reserve === 'function' && rule.block === undefined) return reserve;
  const why =
    typeof reserve === 'function'
      ? 'a token bucket with a lockout (block) cannot'
      : `a ${rule.kind} rule cannot: it counts only its own window`;
  throw new SluiceError(
    'SLUICE_CONFIG',
    `waiting for a slot (takeOrWait, mode "delay") needs a token bucket without a lockout; ${why}`,
  );
}

/**
 * Checks what a store is asked to reserve: a cost from 1 and a wait from 0 to {@link MAX_WAIT_MS},
 * whole numbers (the limiter has checked them; a store still refuses what it cannot take).
 * @throws SluiceError `SLUICE_ARGUMENT`
 */
export function checkReservation(cost: number, maxWaitMs: number): void {
  if (!Number.isSafeInteger(cost) || cost < 1)
    throw new SluiceError('SLUICE_ARGUMENT', 'a reservation costs a whole number of at least 1');
  if (!Number.isSafeInteger(maxWaitMs) || maxWaitMs < 0 || maxWaitMs > MAX_WAIT_MS)
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      `a reservation waits a whole number of ms from 0 to ${MAX_WAIT_MS}`,
    );
}
