import type { BucketState } from './state.js';
import type { Decision } from './decision.js';
import type { TokenBucketRule } from './gcra.js';
import type { CalendarQuotaRule } from './quota.js';

/** A rule: what a limiter enforces. Build one with `tokenBucket()` or `calendarQuota()`. */
export type Rule = TokenBucketRule | CalendarQuotaRule;

/**
 * What every rule can do, purely: read a key's state at `now`, decide a take, and (when `commit`
 * is true) update the state. No I/O, no clock: `now` is passed in.
 */
export interface RuleAlgorithm {
  /**
   * The largest cost one take can ever be admitted with, under the per-call `limit` (quotas) or
   * the rule's own: a larger cost is refused for good, whatever the state, so a limiter answers
   * it without asking the store.
   */
  capacityFor(limit: number | undefined): number;
  /** The state of a key never seen before (a full bucket, an untouched quota) at `now`. */
  initialState(now: number, epoch: number): BucketState;
  /**
   * Decides a take of `cost` units (0 = peek: report whether a take of 1 would succeed, change
   * nothing). With `commit`, an admitted take is charged (and a refused one too when the rule
   * has `penalty`). `epoch` is a fixed origin the caller keeps per set of states, so that scaled
   * arithmetic stays exact (see `tokenBucket`).
   */
  decide(
    state: BucketState,
    now: number,
    epoch: number,
    name: string,
    cost: number,
    limit: number | undefined,
    commit: boolean,
  ): Decision;
}
