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
 * True when an admitted request has something to finish once its response is done: receipts
 * under `countOnly`, or a concurrency limit's lease. Adapters wait for the response's end only
 * then.
 *
 * @example
 * if (needsFinishing(outcome)) finishOnClose(res, outcome, guard);
 */
export function needsFinishing(outcome: RequestRateLimit): boolean {
  return outcome.receipts.length > 0 || outcome.lease !== undefined;
}

/** @deprecated use {@link needsFinishing}, the same function under its new name */
export const needsSettling: (outcome: RequestRateLimit) => boolean = needsFinishing;

/**
 * A guard's finishing: `finish` is the guard's own, `refund` gives one charge back (also to a
 * request whose lease was refused). Neither throws: a failure is reported, not raised.
 *
 * @example
 * const finishing = guardFinishing(settings, report);
 * finishing.finish(outcome, res.statusCode);
 */
export interface GuardFinishing {
  /** Gives back what a receipt charged, through the limiter that issued it. */
  readonly refund: (receipt: Receipt) => void;
  /** Finishes an admitted request once its response ended (`status`) or its connection closed. */
  readonly finish: (outcome: RequestRateLimit, status: number | undefined) => void;
}

/**
 * The finishing of the guard with these settings; failures go to `report`.
 *
 * @example
 * const { refund, finish } = guardFinishing(settings, report);
 */
export function guardFinishing(settings: GuardSettings, report: (error: unknown) => void): GuardFinishing {
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

  const finish = (outcome: RequestRateLimit, status: number | undefined): void => {
    const lease = outcome.lease;
    if (lease !== undefined && concurrency !== undefined) concurrency.release(lease).catch(refundFailed);
    const receipts = outcome.receipts;
    if (countOnly === undefined || receipts.length === 0) return;
    const failedResponse = status === undefined || status >= 400;
    if (failedResponse === (countOnly === 'failed')) return;
    for (const receipt of receipts) refund(receipt);
  };

  return { refund, finish };
}
