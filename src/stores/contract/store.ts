/**
 * The Store contract: where buckets live. Every store (memory, Redis, PostgreSQL) implements it
 * and passes one conformance suite (`storeConformance` of `sluice/testing`, which stores written
 * elsewhere run too).
 *
 * A store keeps buckets per bound rule: `bind(name, rule)` returns that rule's buckets, and two
 * rules never share a counter even when their keys are equal. Decisions are computed by the
 * store, atomically: a shared store computes them on its own side (a Lua script, one SQL
 * statement) from its own clock, so nodes with skewed clocks still enforce one limit.
 *
 * The caller (a limiter) has already validated the key and the cost: keys are non-empty,
 * well-formed UTF-16 strings; costs whole numbers from 0 to `MAX_COUNT` (10^12) and never more
 * than the rule can admit (a token bucket's burst, the quota's limit: larger costs are refused
 * without asking the store); `limit` (rules that accept one: `rule.acceptsCallLimit`) a whole number from 1 to `MAX_COUNT` or
 * undefined. Rules keep their own bounds (`MAX_COUNT`, `MAX_TOKEN_RATE`; see `core/bounds.ts`).
 * A store still rejects input it cannot take with `SLUICE_ARGUMENT`, never as its own failure.
 */
import type { Decision } from '../../core/decision.js';
import { SluiceError } from '../../core/errors.js';
import type { CallLimit, Rule, RuleAdjustment } from '../../core/rules/rule.js';
import type { BucketSteps } from './bucket-steps.js';

/**
 * A settlement of an admitted take of one key, for {@link RuleBuckets.adjust}: the rule's
 * {@link RuleAdjustment} but the epoch (the store keeps its own), and the key's generation, by
 * name, so that two of its numbers cannot be swapped unnoticed.
 */
export interface BucketAdjustment extends Omit<RuleAdjustment, 'epoch'> {
  /**
   * The key's {@link RuleBuckets.resetGeneration} read before the take; undefined when the store
   * keeps none.
   */
  readonly generation?: number;
}

/**
 * One rule's buckets in one store, every step answered with a promise: the promise form of
 * {@link BucketSteps}, which every store has.
 */
export interface RuleBuckets extends BucketSteps {
  /** The rule's name, unique within its store. */
  readonly name: string;
  /** The rule these buckets follow. */
  readonly rule: Rule;
  /**
   * Takes `cost` units from `key`'s bucket (cost 0: peek) and returns the decision.
   * `now` is the caller's clock in ms; a shared store may ignore it in favour of its own.
   * `limit` replaces the rule's parameters for this call: a count for rules with
   * `acceptsCallLimit` (calendar quotas, fixed and sliding windows), a `BucketTier` for rules with
   * `acceptsCallTier` (the token bucket, whose state is then migrated as the rule says).
   */
  take(key: string, cost: number, now: number, limit: CallLimit | undefined): Promise<Decision>;
  /**
   * Forgets `key`: its next take finds a full bucket. `now`: the caller's clock, which a shared
   * store deciding on the application's time remembers as the reset's time, so that a refund of a
   * take made at or before it gives nothing back (the reset already gave the key a new bucket).
   */
  reset(key: string, now?: number): Promise<void>;
  /**
   * Settles an admitted take of `key` after the fact, atomically and without deciding: `delta < 0`
   * gives back `-delta` units of the take made at `takenAt` (the caller's clock at the take) whose
   * units a token bucket had refilled by `until` (`takenAt` plus the decision's `resetMs`);
   * `delta > 0` charges `delta` more at `now`; all as the rule's `adjust` says (a refund gives
   * back only what still weighs; a lockout is never touched). The limiter checks that each take
   * is settled once and never for more than it charged. `limit` is the per-call limit the take
   * was made under (a token bucket settles in its tier's units). `generation`: the key's
   * {@link RuleBuckets.resetGeneration} read before the take; a store that keeps generations gives nothing
   * back (`delta < 0`) when the key was reset since, since the reset already gave it a new bucket.
   */
  adjust(key: string, adjustment: BucketAdjustment): Promise<void>;
  /**
   * Which reset of `key` its bucket belongs to: a number that changes whenever the key is reset.
   * Read (synchronously, before the take) for every receipt, and passed back to {@link RuleBuckets.adjust},
   * so that a refund of a charge made before the key's last reset gives nothing back. Optional:
   * a store without it cannot tell.
   */
  resetGeneration?(key: string): number;
  /**
   * Reserves the earliest slot for a take of `cost` (at least 1) on `key`, atomically and in one
   * round trip as a take: the rule's `reserve` (present only for rules that can reserve, the
   * token bucket without a lockout), charged at once when the slot is at most `maxWaitMs` away.
   * The store orders reservations: each one queues behind those it saw. Optional: a store
   * without it cannot serve `limiter.takeOrWait`. `limit` as for {@link take}.
   */
  reserve?(key: string, cost: number, now: number, maxWaitMs: number, limit?: CallLimit): Promise<Decision>;
}

/**
 * Buckets that can also answer synchronously (the memory store): a limiter drives them through
 * these value forms (see `stepsOf`), without a promise per decision.
 */
export interface SyncRuleBuckets extends RuleBuckets {
  /** Synchronous {@link RuleBuckets.take}. */
  takeSync(key: string, cost: number, now: number, limit: CallLimit | undefined): Decision;
  /** Synchronous {@link RuleBuckets.reset}. */
  resetSync(key: string): void;
  /** Synchronous {@link RuleBuckets.adjust}. */
  adjustSync(key: string, adjustment: BucketAdjustment): void;
  /** Synchronous {@link RuleBuckets.reserve}. */
  reserveSync?(key: string, cost: number, now: number, maxWaitMs: number, limit?: CallLimit): Decision;
}

/** One entry of an all-or-nothing take: a key of one bound rule and its cost. */
export interface TakeEntry {
  readonly buckets: RuleBuckets;
  readonly key: string;
  readonly cost: number;
  readonly limit: CallLimit | undefined;
}

/** A store of buckets. */
export interface Store {
  /** A short name for logs and errors: `"memory"`, `"redis"`, `"postgres"`. */
  readonly kind: string;
  /**
   * Binds a rule under a name that is unique in this store, and returns its buckets.
   * @throws SluiceError `SLUICE_CONFIG` when the name is already bound.
   */
  bind(name: string, rule: Rule): RuleBuckets;
  /**
   * Frees a bound rule: its name may be bound again, and a store that keeps buckets in this
   * process (memory) drops them. A shared store keeps what other processes share: the buckets
   * in Redis or PostgreSQL stay and expire as usual. Unbinding a name that is not bound does
   * nothing. Later calls on the freed buckets are rejected with `SLUICE_CONFIG`.
   */
  unbind(name: string): void;
  /**
   * All or nothing, atomically: every entry is charged if every entry admits, otherwise none is.
   * Returns one decision per entry, in order. When some entry refuses, the decisions of the
   * others say what they would have done; nothing was charged.
   *
   * The same bucket (one rule's buckets and one key) may appear only once: a list that names it
   * twice is rejected with `SLUICE_ARGUMENT` before anything is charged (see
   * {@link assertDistinctEntries}).
   */
  takeAll(entries: readonly TakeEntry[], now: number): Promise<Decision[]>;
  /**
   * Set by a store that bounds every call itself (rejecting with `SLUICE_STORE_TIMEOUT`), in ms.
   * A limiter on this store takes it as its `timeout` and adds no timer of its own; a limiter
   * `timeout` that differs from it is `SLUICE_CONFIG` at setup. A store that sets this promises
   * that a call it answered with `SLUICE_STORE_TIMEOUT` is never charged afterwards.
   */
  readonly timeoutMs?: number;
  /**
   * How many replies the store has read from its server so far, those that came after their
   * call's timeout included. A limiter's breaker reads it on a failure: a store that keeps
   * replying, however late, is busy, not failing. Optional (a store without it never says so).
   */
  readonly replies?: number;
  /**
   * Prepares the store for its first decisions, charging nothing: opens its connections and
   * prepares the statements of the rules bound so far, so that the first decisions under load do
   * not pay for them (and time out). A server calls it once its rules are bound, before it
   * listens. Optional: a store without anything to warm leaves it out.
   */
  warm?(): Promise<void>;
  /** Releases connections or other resources the store owns (never the client you passed in). */
  close?(): Promise<void>;
}

/**
 * Rejects an all-or-nothing list that names one bucket twice (same rule, same key): charging it
 * "once" or "twice" would each surprise someone, so neither is done. Every store calls this first,
 * stores written outside sluice too (it is exported for them).
 * @throws SluiceError `SLUICE_ARGUMENT` (the message never repeats the key)
 * @example
 * async takeAll(entries, now) { assertDistinctEntries(entries); … }
 */
export function assertDistinctEntries(entries: readonly TakeEntry[]): void {
  if (entries.length < 2) return;
  for (let i = 1; i < entries.length; i++) {
    const a = entries[i] as TakeEntry;
    for (let j = 0; j < i; j++) {
      const b = entries[j] as TakeEntry;
      if (a.buckets === b.buckets && a.key === b.key) {
        throw new SluiceError(
          'SLUICE_ARGUMENT',
          `an all-or-nothing take names the same bucket twice (rule ${JSON.stringify(a.buckets.name)}, entries ${j} and ${i}); each bucket may appear once`,
        );
      }
    }
  }
}

/** A store that can also decide synchronously (the memory store). */
export interface SyncStore extends Store {
  bind(name: string, rule: Rule): SyncRuleBuckets;
  /** Synchronous {@link Store.takeAll}. */
  takeAllSync(entries: readonly TakeEntry[], now: number): Decision[];
}

/**
 * True when `store` can decide synchronously.
 *
 * @example
 * if (isSyncStore(store)) store.takeAllSync(entries, Date.now());
 */
export function isSyncStore(store: Store): store is SyncStore {
  return typeof (store as Partial<SyncStore>).takeAllSync === 'function';
}
