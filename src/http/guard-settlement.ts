/**
 * What happens to an admitted request's charges once its response is done: its concurrency lease
 * is released and, under `countOnly`, the charges of a request that does not count are refunded.
 */
import { isSluiceError } from '../core/errors.js';
import type { Receipt } from '../limiter/receipts.js';
import type { GuardSettings } from './guard-options.js';
import type { RequestRateLimit } from './guard-outcome.js';
import { isSyncLimiter } from './maybe-sync.js';

/**
 * True when an admitted request has something to settle once its response is done: receipts
 * under `countOnly`, or a concurrency limit's lease. Adapters wait for the response's end only
 * then.
 *
 * @example
 * if (needsSettling(outcome)) settleOnClose(res, outcome, guard);
 */
export function needsSettling(outcome: RequestRateLimit): boolean {
  return outcome.receipts.length > 0 || outcome.lease !== undefined;
}

/**
 * A guard's settling: `settle` is the guard's own, `refund` gives one charge back (also to a
 * request whose lease was refused). Neither throws: a failure is reported, not raised.
 *
 * @example
 * const settlement = guardSettlement(settings, report);
 * settlement.settle(outcome, res.statusCode);
 */
export interface GuardSettlement {
  /** Gives back what a receipt charged, through the limiter that issued it. */
  readonly refund: (receipt: Receipt) => void;
  /** Settles an admitted request once its response ended (`status`) or its connection closed. */
  readonly settle: (outcome: RequestRateLimit, status: number | undefined) => void;
}

/**
 * The settling of the guard with these settings; failures go to `report`.
 *
 * @example
 * const { refund, settle } = guardSettlement(settings, report);
 */
export function guardSettlement(settings: GuardSettings, report: (error: unknown) => void): GuardSettlement {
  const { concurrency, countOnly } = settings;
  const limiterByName = new Map((settings.limiters ?? []).map((l) => [l.name, l]));

  /** A refund the store could not make; one the application made itself first is no failure. */
  const refundFailed = (error: unknown): void => {
    if (!isSluiceError(error, 'SLUICE_ARGUMENT')) report(error);
  };

  const refund = (receipt: Receipt): void => {
    const limiter = limiterByName.get(receipt.rule);
    if (limiter === undefined) return;
    if (isSyncLimiter(limiter)) {
      try {
        limiter.refundSync(receipt);
      } catch (error) {
        refundFailed(error);
      }
      return;
    }
    limiter.refund(receipt).catch(refundFailed);
  };

  const settle = (outcome: RequestRateLimit, status: number | undefined): void => {
    const lease = outcome.lease;
    if (lease !== undefined && concurrency !== undefined) concurrency.release(lease).catch(refundFailed);
    const receipts = outcome.receipts;
    if (countOnly === undefined || receipts.length === 0) return;
    const failedResponse = status === undefined || status >= 400;
    if (failedResponse === (countOnly === 'failed')) return;
    for (const receipt of receipts) refund(receipt);
  };

  return { refund, settle };
}
