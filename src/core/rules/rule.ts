import type { BlockPolicy } from './lockout.js';
import type { Decision } from '../decision.js';
import type { BucketState } from '../state.js';

/**
 * How an algorithm's state reads, for code that keeps states without knowing the algorithm (the
 * memory store's summary of forgotten buckets, tools that inspect a store):
 *
 * - `'arrival-time'`: `value` is a time in scaled units (a token bucket's theoretical arrival
 *   time); larger is more restrictive. `window` and `previous` are 0 when the state is kept in
 *   the rule's own parameters; a state charged under a per-call {@link BucketTier} keeps there
 *   the rate its `value` is scaled by and its tolerance (see `tokenBucket`), and only the rule
 *   (its `normalize`) can bring it back to the rule's own scale.
 * - `'window-count'`: `value` is the count spent in the window that starts at `window` (ms since
 *   the Unix epoch); a later window starts from zero; `previous` is unused (0). Windows are on a
 *   grid every key shares unless the rule has `periodMs` (then each key's start is its own).
 * - `'sliding-count'`: as `'window-count'`, and `previous` is the count of the window just
 *   before `window` (which still weighs on decisions while the current window runs).
 *
 * A new algorithm whose state fits none of these adds a shape, and the memory store learns it.
 */
export type StateShape = 'arrival-time' | 'window-count' | 'sliding-count';

/**
 * A token bucket's parameters for one call instead of the rule's (a plan's tier from data):
 * tokens per period, the period in ms, the capacity. Checked by the limiter before a store sees
 * it (`limit` from 1 to 10^6, `burst` from 1 to 10^12, `2 × burst × periodMs` a safe integer).
 */
export interface BucketTier {
  readonly limit: number;
  readonly periodMs: number;
  readonly burst: number;
}

/**
 * What a take may carry instead of its rule's own limit: a count for rules counted per window
 * (`acceptsCallLimit`), a {@link BucketTier} for a token bucket (`acceptsCallTier`).
 */
export type CallLimit = number | BucketTier;

/**
 * A settlement of an admitted take, for {@link Rule.adjust}: its numbers by name, so that two of
 * them cannot be swapped unnoticed.
 */
export interface RuleAdjustment {
  /** The caller's clock at the settlement, in ms. */
  readonly now: number;
  /** The fixed origin the caller keeps for this state (see {@link RuleTake}). */
  readonly epoch: number;
  /** Units to give back (negative) or to charge more (positive); 0 changes nothing. */
  readonly delta: number;
  /** The caller's clock when the take being settled was made, in ms. */
  readonly takenAt: number;
  /**
   * When a token bucket had refilled the take's units, in ms: `takenAt` plus the take's
   * decision's `resetMs`.
   */
  readonly until: number;
  /** The per-call limit the take was made under; undefined: the rule's own. */
  readonly limit?: CallLimit;
}

/**
 * A reservation of the earliest slot for a take, for {@link Rule.reserve}: its numbers by name,
 * so that two of them cannot be swapped unnoticed.
 */
export interface RuleReservation {
  /** The caller's clock, in ms. */
  readonly now: number;
  /** The fixed origin the caller keeps for this state (see {@link RuleTake}). */
  readonly epoch: number;
  /** The name of the limit, for the decision. Never holds the key. */
  readonly name: string;
  /** Units the take asks for (at least 1). */
  readonly cost: number;
  /** The furthest in the future, in ms from `now`, that a slot may be and still be reserved. */
  readonly maxWaitMs: number;
  /** The per-call limit, as for {@link RuleTake}; undefined: the rule's own. */
  readonly limit?: CallLimit;
}

/**
 * A take for {@link Rule.decide}: its numbers by name, so that two of them cannot be swapped
 * unnoticed. A caller that decides on every request (the memory store) keeps one and fills its
 * fields before each call rather than allocating one per take: a rule reads it during the call
 * and never keeps it.
 */
export interface RuleTake {
  /** The caller's clock, in ms. */
  readonly now: number;
  /**
   * A fixed origin the caller keeps per set of states, so that scaled arithmetic stays exact
   * (see `tokenBucket`).
   */
  readonly epoch: number;
  /** The name of the limit, for the decision. Never holds the key. */
  readonly name: string;
  /** Units the take asks for; 0 is a peek (whether a take of 1 would succeed, changing nothing). */
  readonly cost: number;
  /** The per-call limit; undefined: the rule's own. */
  readonly limit?: CallLimit;
  /** Whether an admitted take is charged (and a refused one too when the rule has `penalty`). */
  readonly commit: boolean;
}

/**
 * The algorithm contract: what every rule is. A rule is a value that decides, purely: it reads a
 * key's state at `now`, decides a take and (when `commit` is true) updates the state in place. No
 * I/O, no clock (`now` is passed in), no knowledge of stores.
 *
 * Stores keep the state. The memory store runs {@link decide} itself; a shared store (Redis,
 * PostgreSQL) runs its own translation of it next to the data, in one module per algorithm that
 * it finds by {@link kind}, and rejects a rule whose kind it has no module for when it is bound.
 * Those translations are held to this one by differential property tests.
 *
 * Built-in rules: `tokenBucket()`, `fixedWindow()`, `slidingWindow()`, `calendarQuota()`,
 * `anchoredWindow()`.
 */
export interface Rule {
  /**
   * The algorithm's name, e.g. `"token-bucket"`: stable and lower-case; what a shared store
   * looks its module for the rule up by.
   */
  readonly kind: string;
  /** How {@link BucketState}'s numbers read for this rule. */
  readonly shape: StateShape;
  /**
   * The length of every window in ms, for rules whose windows are all equal and aligned to the
   * Unix epoch (fixed and sliding windows); absent otherwise. A `'sliding-count'` rule must have
   * it: the window "just before" `window` starts at `window − windowMs`, and code that keeps
   * states without knowing the algorithm (the memory store's summary) ages them by it.
   */
  readonly windowMs?: number;
  /**
   * The length of the rule's period in ms, where it has one of a single length: a token bucket's
   * refill period; for a `'window-count'` rule, present exactly when its windows start at each
   * key's own time rather than on a grid every key shares (the anchored window), each lasting
   * this long. Code that keeps states of many keys without knowing the algorithm (the memory
   * store's summary) cannot then tell from one key's later window that another's is over, and
   * ages counts by this length instead.
   */
  readonly periodMs?: number;
  /** The rule's own limit: units per period or window (what headers call the limit). */
  readonly limit: number;
  /** When true, a refused take is charged too; off by default (a refusal consumes nothing). */
  readonly penalty: boolean;
  /**
   * The rule's lockout (its `block` option), or undefined. Algorithm-independent: `decide`
   * applies it (see `decideWithBlock` in `lockout.ts`), its state is `blockedUntil` and `blockMs`
   * of {@link BucketState}, and a shared store applies it next to the data in the same step as
   * the bucket.
   */
  readonly block: BlockPolicy | undefined;
  /** Whether a take may pass its own count limit for this call (a per-key limit from data). */
  readonly acceptsCallLimit: boolean;
  /**
   * Whether a take may pass its own {@link BucketTier} for this call (a token bucket's rate,
   * period and burst from data). A state kept under one tier and taken under another is migrated
   * by the rule (the token bucket keeps both the fraction of its capacity in use and its time
   * until full: a switch never adds tokens).
   */
  readonly acceptsCallTier?: boolean;
  /**
   * The limit a decision reports under the per-call `limit` (undefined: the rule's own): the
   * token bucket's rate, a window's count.
   */
  limitFor(limit: CallLimit | undefined): number;
  /**
   * The largest cost one take can ever be admitted with, under the per-call `limit` or the
   * rule's own: a larger cost is refused for good, whatever the state, so a limiter answers it
   * without asking the store.
   */
  capacityFor(limit: CallLimit | undefined): number;
  /**
   * Brings a state kept under per-call parameters back to the rule's own scale, in place, for the
   * memory store's summary of forgotten buckets, whose cells hold one scale: never looser for any
   * parameters the key is read with later (see `tokenBucket`). Absent for rules whose states have
   * one scale.
   */
  normalize?(state: BucketState, now: number, epoch: number): void;
  /** The state of a key never seen before (a full bucket, an untouched window) at `now`. */
  initialState(now: number, epoch: number): BucketState;
  /**
   * The value at or below which `state.value` is as good as new at `now` (for `'arrival-time'`:
   * `now` in scaled units; for counts: 0). A state at or below it needs no remembering.
   */
  floorValue(now: number, epoch: number): number;
  /**
   * Milliseconds after `now` from which forgetting `state` changes no decision: a bucket's time
   * to full, a window's time to its end (for a sliding window, the end of the window after it).
   * Shared stores expire keys and prune rows by it; 0 when the state is as good as new already.
   * With a lockout, at least until `forgetAfter` after the key's last block ends.
   */
  horizonMs(state: BucketState, now: number, epoch: number): number;
  /**
   * Settles an admitted take after the fact, without deciding (refunds and settlements: see
   * `limiter.refund` and `limiter.settle`). Updates `state` in place and returns whether it
   * changed.
   *
   * - `delta < 0` gives back `-delta` units of a take made at `takenAt`, only as much of them as
   *   still weighs: nothing once the take's window is over (a count), and for a token bucket only
   *   what has not refilled by `now`, the take's units being refilled by `until` (the take's time
   *   plus its decision's `resetMs`: the bucket was full again then, had nothing else been
   *   taken). So a refund never gives back what time already gave back, a bucket never ends
   *   fuller than full and a count never below 0.
   * - `delta > 0` charges `delta` more units at `now`, whatever the state (the work is done): a
   *   token bucket's debt and a count stop at the bounds a penalty stops at.
   *
   * A lockout is never touched: a refund does not lift a block. `limit` is the per-call limit
   * the take was made under (a token bucket settles in its tier's units).
   */
  adjust(state: BucketState, adjustment: RuleAdjustment): boolean;
  /**
   * Reserves the earliest slot the rule gives a take of `cost` (at least 1), charging it at once
   * even when the slot is up to `maxWaitMs` in the future (see `limiter.takeOrWait`): an admitted
   * decision whose `retryAfterMs` is the ms until the slot (0: now). A slot further away is a
   * refusal that charges nothing. Only rules whose state is a schedule have it (the token
   * bucket): a window counts its own window and cannot hold a place in the next one. `limit`
   * as for {@link decide}.
   */
  reserve?(state: BucketState, reservation: RuleReservation): Decision;
  /**
   * Decides a take of `take.cost` units (0 = peek: report whether a take of 1 would succeed,
   * change nothing). With `take.commit`, an admitted take is charged (and a refused one too when
   * the rule has `penalty`), in `state`, in place. A rule with a lockout refuses a blocked key
   * and starts a block on a committed refusal.
   */
  decide(state: BucketState, take: RuleTake): Decision;
}
