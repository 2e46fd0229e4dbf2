import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';
import { isPending, type MaybePromise } from '../stores/contract/bucket-steps.js';
import type { SyncRuleBuckets, SyncStore } from '../stores/contract/store.js';
import { MemoryStore } from '../stores/memory/store.js';
import { readClock } from './call-input.js';
import { closedError, shadowOf } from './limiter-internals.js';
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

  /**
   * The buckets a plain take may ask directly: the memory store's, which answer with values by
   * construction, never fail (so the breaker stays closed) and keep no refusal cache, for a rule
   * whose capacity holds a take of 1 (so it is never refused for good).
   */
  private readonly plainBuckets: SyncRuleBuckets | undefined;

  constructor(...args: ConstructorParameters<typeof RuleLimiter>) {
    super(...args);
    const plain = this.store instanceof MemoryStore && this.rule.capacityFor(undefined) >= 1;
    this.plainBuckets = plain ? this.buckets : undefined;
  }

  takeSync(key: string, options?: TakeOptions): Decision {
    // The hottest call there is: a key alone, on the memory store, nobody listening. It is the
    // take step with the layers such a take cannot need left out (the refusal cache, the
    // capacity check, the breaker, the store's error path and two checks for a promise), which
    // cost a tenth of a decision in instructions (callgrind). Every other take is the step.
    const buckets = this.plainBuckets;
    if (options !== undefined || buckets === undefined || this.events.listening) {
      return valueOf(this.takeStep(key, options));
    }
    if (this.closed) throw closedError(this.name);
    this.checkKeyOnce(key);
    const decision = buckets.takeSync(key, 1, readClock(this.clock), undefined);
    return this.mode === 'shadow' ? shadowOf(decision) : decision;
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
