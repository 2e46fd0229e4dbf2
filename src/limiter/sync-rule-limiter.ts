import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';
import { isPending, type MaybePromise } from '../stores/contract/bucket-steps.js';
import type { SyncRuleBuckets, SyncStore } from '../stores/contract/store.js';
import type { SyncLimiter } from './limiter.js';
import type { TakeOptions } from './limiter-options.js';
import type { Receipt, ReceiptedDecision } from './receipts.js';
import { RuleLimiter } from './rule-limiter.js';

/**
 * A limiter on a synchronous store (the memory store): the synchronous face over the very steps
 * of {@link RuleLimiter}, which answer with values on such a store (no promise, no timer).
 */
export class SyncRuleLimiter extends RuleLimiter implements SyncLimiter {
  declare readonly store: SyncStore;
  declare readonly buckets: SyncRuleBuckets;

  takeSync(key: string, options?: TakeOptions): Decision {
    return valueOf(this.takeStep(key, options));
  }

  takeWithReceiptSync(key: string, options?: TakeOptions): ReceiptedDecision {
    return valueOf(this.takeWithReceiptStep(key, options));
  }

  refundSync(receipt: Receipt): void {
    valueOf(this.adjustStep(receipt, undefined));
  }

  settleSync(receipt: Receipt, actualCost: number): void {
    valueOf(this.adjustStep(receipt, actualCost));
  }

  peekSync(key: string, options?: Pick<TakeOptions, 'limit' | 'period' | 'burst'>): Decision {
    return valueOf(this.peekStep(key, options));
  }

  resetSync(key: string): void {
    valueOf(this.resetStep(key));
  }

  unblockSync(key: string): void {
    this.resetSync(key);
  }
}

/**
 * The value a step answered. A synchronous store whose `*Sync` methods hand back a promise broke
 * its contract: that is a configuration error, not a failure for the policy to answer.
 */
function valueOf<T>(answer: MaybePromise<T>): T {
  if (!isPending(answer)) return answer;
  // Its outcome can no longer reach anyone: a rejection must not surface as unhandled.
  answer.then(undefined, () => undefined);
  throw new SluiceError(
    'SLUICE_CONFIG',
    'a synchronous store answered with a promise: its *Sync methods must return values',
  );
}
