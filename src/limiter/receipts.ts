import type { Decision } from '../core/decision.js';
import type { CallLimit } from '../core/rules/rule.js';
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
  /**
   * The take's own parameters, when it carried some (`limit`, or a token bucket's tier): a
   * refund or settlement counts in the units the take was charged in.
   */
  readonly limit: CallLimit | undefined;
  /**
   * The key's reset generation when the take was made (stores that keep one; see
   * `RuleBuckets.resetGeneration`): a refund after the key was reset again gives nothing back.
   */
  readonly generation: number | undefined;
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
 * A receipt as issued: its fields frozen, and the book it is open in (none once settled) in a
 * private field, which nothing outside this class can read, set or copy: a receipt made by hand
 * or copied (spread, structuredClone) has no such field and is refused.
 */
class IssuedReceipt implements Receipt {
  #openIn: ReceiptBook | undefined;

  constructor(
    book: ReceiptBook,
    readonly rule: string,
    readonly key: string,
    readonly cost: number,
    readonly at: number,
    readonly until: number,
    readonly limit: CallLimit | undefined,
    readonly generation: number | undefined,
  ) {
    this.#openIn = book;
    Object.freeze(this);
  }

  /** Closes `receipt` in `book`; false when it is not a receipt open there. */
  static close(receipt: unknown, book: ReceiptBook): boolean {
    if (typeof receipt !== 'object' || receipt === null || !(#openIn in receipt)) return false;
    if (receipt.#openIn !== book) return false;
    receipt.#openIn = undefined;
    return true;
  }

  static reopen(receipt: Receipt, book: ReceiptBook): void {
    if (receipt instanceof IssuedReceipt) receipt.#openIn = book;
  }
}

/**
 * The receipts one limiter issued and has not settled yet. Each receipt says itself which book it
 * is open in (see IssuedReceipt), so the book holds nothing: a receipt nobody settles is garbage
 * once its holder lets go of it, the book never grows with traffic, and issuing one costs no
 * WeakSet entry (those are costly for the garbage collector on a hot path). A receipt not open in
 * the book (settled already, issued by another limiter, or made by hand) is refused.
 */
export class ReceiptBook {
  /** The receipt of `decision`, when it charged the store. */
  issue(
    name: string,
    key: string,
    decision: Decision,
    at: number,
    limit: CallLimit | undefined,
    generation: number | undefined,
  ): Receipt | undefined {
    if (!decision.allowed || decision.cost === 0 || decision.source !== 'store') return undefined;
    return new IssuedReceipt(this, name, key, decision.cost, at, at + decision.resetMs, limit, generation);
  }

  /**
   * Takes `receipt` out of the book.
   * @throws SluiceError `SLUICE_ARGUMENT` when it is not an open receipt of this limiter
   */
  close(receipt: Receipt, name: string): void {
    if (!IssuedReceipt.close(receipt, this)) {
      throw new SluiceError(
        'SLUICE_ARGUMENT',
        `limiter ${JSON.stringify(name)} has no open receipt like this: it was settled already, or issued by another limiter`,
      );
    }
  }

  /** Puts back a receipt whose settlement failed in the store, so that it may be tried again. */
  reopen(receipt: Receipt): void {
    IssuedReceipt.reopen(receipt, this);
  }
}
