import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';

/**
 * What an admitted take charged, for settling it after the response: `limiter.refund(receipt)`
 * gives the cost back, `limiter.settle(receipt, actualCost)` charges the real cost instead of the
 * estimate. Each receipt settles once, on the limiter that issued it.
 *
 * A receipt holds the key: keep it in the request's scope, never in logs.
 */
export interface Receipt {
  /** The limit that charged (the limiter's name). */
  readonly rule: string;
  /** The key charged. */
  readonly key: string;
  /** The units charged. */
  readonly cost: number;
  /** The limiter's clock when the take was decided, ms since the Unix epoch. */
  readonly at: number;
  /**
   * `at` plus the decision's `resetMs`: by then a token bucket had refilled what the take charged
   * (a refund later gives back only what has not refilled yet).
   */
  readonly until: number;
}

/** A take's decision and, when it charged the limit's store, its receipt. */
export interface ReceiptedDecision {
  readonly decision: Decision;
  /**
   * Present when the take was admitted and charged the store: not for a refusal, a peek (cost
   * 0), a fail-open admission (nothing was charged) or an insurance decision (charged in this
   * process's insurance limiter, not in the store).
   */
  readonly receipt: Receipt | undefined;
}

/**
 * The receipts one limiter issued and has not settled yet. A WeakSet: a receipt nobody settles is
 * garbage once its holder lets go of it, so the book never grows with traffic; a receipt not in
 * the book (settled already, issued by another limiter, or made by hand) is refused.
 */
export class ReceiptBook {
  private readonly open = new WeakSet<Receipt>();

  /** The receipt of `decision`, when it charged the store. */
  issue(name: string, key: string, decision: Decision, at: number): Receipt | undefined {
    if (!decision.allowed || decision.cost === 0 || decision.source !== 'store') return undefined;
    const receipt: Receipt = Object.freeze({
      rule: name,
      key,
      cost: decision.cost,
      at,
      until: at + decision.resetMs,
    });
    this.open.add(receipt);
    return receipt;
  }

  /**
   * Takes `receipt` out of the book.
   * @throws SluiceError `SLUICE_ARGUMENT` when it is not an open receipt of this limiter
   */
  close(receipt: Receipt, name: string): void {
    if (typeof receipt !== 'object' || receipt === null || !this.open.delete(receipt)) {
      throw new SluiceError(
        'SLUICE_ARGUMENT',
        `limiter ${JSON.stringify(name)} has no open receipt like this: it was settled already, or issued by another limiter`,
      );
    }
  }

  /** Puts back a receipt whose settlement failed in the store, so that it may be tried again. */
  reopen(receipt: Receipt): void {
    this.open.add(receipt);
  }
}
