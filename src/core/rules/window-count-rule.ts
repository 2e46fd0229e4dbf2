import type { Decision } from '../decision.js';
import type { BucketState } from '../state.js';
import type { Rule, RuleAdjustment, RuleTake, StateShape } from './rule.js';
import { decideWindowCount } from './window-count.js';
import {
  blockHorizonMs,
  decideWithBlock,
  type BlockOptions,
  type BlockPolicy,
  type BucketTake,
} from './lockout.js';

/** The options every rule counted per window takes beside its window (see {@link WindowCountRule}). */
export interface WindowCountOptions {
  /**
   * Units per window. A whole number from 1 to {@link MAX_COUNT} (10^12). A take may pass its
   * own limit instead (a per-key limit from data).
   */
  limit: number;
  /**
   * When true, refused takes are counted too (a count saturates at 2 × {@link MAX_COUNT}), so a
   * client that keeps hammering stays refused until its window ends. Off by default: a refusal
   * consumes nothing.
   * @default false
   */
  penalty?: boolean;
  /** A lockout: a refusal blocks the key for a while, longer when it is refused again soon. */
  block?: BlockOptions;
}

/** A take on a rule counted per window, whose per-call limit is a count. */
export interface WindowRuleTake extends RuleTake {
  readonly limit?: number;
}

/** A take as a window's own decision reads it (see `BucketTake`). */
export interface WindowBucketTake extends BucketTake {
  readonly limit?: number;
}

/** What a rule counted per window reads from its options, checked. */
export interface WindowCountSettings {
  readonly limit: number;
  readonly penalty: boolean;
  readonly block: BlockPolicy | undefined;
}

/**
 * What every rule that counts per window shares (the fixed and the sliding window, the calendar
 * quota, the anchored window): a count limit that a take may replace with its own, refusals
 * counted under `penalty`, a lockout applied around the window's own decision and horizon, and
 * an untouched count that is as good as new. Each subclass brings its kind, its shape, where its
 * windows start and end, and its refunds.
 *
 * @example
 * calendarQuota({ limit: 10 }) instanceof WindowCountRule; // true
 */
export abstract class WindowCountRule implements Rule {
  abstract readonly kind: string;
  abstract readonly shape: StateShape;
  /** A take may pass its own limit (a per-key limit from data). */
  readonly acceptsCallLimit = true;
  /** The default units per window (a take may pass its own). */
  readonly limit: number;
  /** Whether refusals are counted. */
  readonly penalty: boolean;
  /** The lockout, if any. */
  readonly block: BlockPolicy | undefined;

  constructor(settings: WindowCountSettings) {
    this.limit = settings.limit;
    this.penalty = settings.penalty;
    this.block = settings.block;
  }

  /** The per-call limit, or the rule's. */
  limitFor(limit: number | undefined): number {
    return limit === undefined ? this.limit : limit;
  }

  /** The most one take can ever get: the per-call limit, or the rule's. */
  capacityFor(limit: number | undefined): number {
    return limit === undefined ? this.limit : limit;
  }

  /** Counts of 0 have nothing to remember. */
  floorValue(): number {
    return 0;
  }

  /** The window's horizon, and with a lockout at least until the key's last block is forgotten. */
  horizonMs(state: BucketState, now: number): number {
    const counted = this.bucketHorizonMs(state, now);
    if (this.block === undefined) return counted;
    const blocked = blockHorizonMs(this.block, state, now);
    return blocked > counted ? blocked : counted;
  }

  /** The decision, under the lockout when the rule has one. */
  decide(state: BucketState, take: WindowRuleTake): Decision {
    const block = this.block;
    if (block !== undefined) return decideWithBlock(this, block, state, take);
    return this.decideBucket(state, take, take.commit);
  }

  abstract initialState(now: number, epoch: number): BucketState;

  abstract adjust(state: BucketState, adjustment: RuleAdjustment): boolean;

  /** Milliseconds after `now` from which forgetting the counts changes no decision. */
  abstract bucketHorizonMs(state: BucketState, now: number): number;

  /** The window's own decision, before any lockout. */
  abstract decideBucket(state: BucketState, take: WindowBucketTake, commit: boolean): Decision;

  /**
   * A take at `now` counted in the window from `start` to `end` (see `decideWindowCount`), under
   * the per-call `limit` or the rule's, refusals counted under the rule's `penalty`.
   */
  protected countIn(
    state: BucketState,
    start: number,
    end: number,
    { now, name, cost, limit }: WindowBucketTake,
    commit: boolean,
  ): Decision {
    const quota = limit === undefined ? this.limit : limit;
    const counted = {
      start,
      resetMs: end - now,
      windowMs: end - start,
      name,
      cost,
      quota,
      commit,
      penalty: this.penalty,
    };
    return decideWindowCount(state, counted);
  }
}
