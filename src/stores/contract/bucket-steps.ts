/**
 * The one contract a limiter drives a rule's buckets through, whatever the store: each step
 * answers with a value when the store decided in this process (the memory store), or with a
 * promise when it asked a server. The limiter writes each step once, continues at once on a
 * value and awaits only a promise, so that the memory store's decisions stay synchronous and
 * allocate no promise. (unstorage's drivers answer the same way.)
 */
import type { Decision } from '../../core/decision.js';
import type { CallLimit, Rule } from '../../core/rules/rule.js';
import type { BucketAdjustment, RuleBuckets, SyncRuleBuckets } from './store.js';

/** A value, or a promise of it. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * One rule's buckets as steps that may answer without a promise. {@link RuleBuckets} is its
 * promise form (every store has it); a synchronous store's buckets answer with values through
 * `stepsOf`. The arguments and their meaning are those of {@link RuleBuckets}.
 */
export interface BucketSteps {
  /** The rule's name, unique within its store. */
  readonly name: string;
  /** The rule these buckets follow. */
  readonly rule: Rule;
  /** {@link RuleBuckets.take}, answered with a value or a promise. */
  take(key: string, cost: number, now: number, limit: CallLimit | undefined): MaybePromise<Decision>;
  /** {@link RuleBuckets.reset}, answered with a value or a promise. */
  reset(key: string, now?: number): MaybePromise<void>;
  /** {@link RuleBuckets.adjust}, answered with a value or a promise. */
  adjust(key: string, adjustment: BucketAdjustment): MaybePromise<void>;
  /** {@link RuleBuckets.reserve}, answered with a value or a promise; absent when the store cannot reserve. */
  reserve?(
    key: string,
    cost: number,
    now: number,
    maxWaitMs: number,
    limit?: CallLimit,
  ): MaybePromise<Decision>;
}

/**
 * True when `answer` is still to come (a promise, or any thenable), false for a value at hand.
 * A decision and `undefined` are never thenables.
 */
export function isPending<T>(answer: MaybePromise<T>): answer is Promise<T> {
  return (
    typeof answer === 'object' && answer !== null && typeof (answer as { then?: unknown }).then === 'function'
  );
}

/**
 * `step` called on `self` with `a` and `b`, as a promise: a value resolved, a promise as it is,
 * a throw rejected (a function that returns a promise never throws). The promise face of every
 * step written once over {@link MaybePromise}; fixed arguments so that a call allocates nothing
 * but the promise.
 *
 * @example take(key, options) { return promised(this, this.takeStep, key, options); }
 */
export function promised<S, A, B, T>(
  self: S,
  step: (this: S, a: A, b: B) => MaybePromise<T>,
  a: A,
  b: B,
): Promise<T> {
  try {
    const answer = step.call(self, a, b);
    return isPending(answer) ? answer : Promise.resolve(answer);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The steps of `buckets`: a synchronous store's answer with values (its `*Sync` methods, and its
 * `reserve` when it cannot reserve synchronously), any other store's are its buckets as they are.
 * Made once per limiter: a step then costs one call, no allocation.
 */
export function stepsOf(buckets: RuleBuckets): BucketSteps {
  return isSyncRuleBuckets(buckets) ? new SyncSteps(buckets) : buckets;
}

function isSyncRuleBuckets(buckets: RuleBuckets): buckets is SyncRuleBuckets {
  const sync = buckets as Partial<SyncRuleBuckets>;
  return (
    typeof sync.takeSync === 'function' &&
    typeof sync.resetSync === 'function' &&
    typeof sync.adjustSync === 'function'
  );
}

/** The value-answering steps of a synchronous store's buckets. */
class SyncSteps implements BucketSteps {
  readonly name: string;
  readonly rule: Rule;
  readonly reserve?: BucketSteps['reserve'];

  constructor(private readonly buckets: SyncRuleBuckets) {
    this.name = buckets.name;
    this.rule = buckets.rule;
    // A synchronous store written elsewhere may reserve only asynchronously, or not at all.
    // Bound once here: a reservation then costs the store's own call, as through a method.
    if (buckets.reserveSync !== undefined) this.reserve = buckets.reserveSync.bind(buckets);
    else if (buckets.reserve !== undefined) this.reserve = buckets.reserve.bind(buckets);
  }

  take(key: string, cost: number, now: number, limit: CallLimit | undefined): Decision {
    return this.buckets.takeSync(key, cost, now, limit);
  }

  reset(key: string): void {
    this.buckets.resetSync(key);
  }

  adjust(key: string, adjustment: BucketAdjustment): void {
    this.buckets.adjustSync(key, adjustment);
  }
}
