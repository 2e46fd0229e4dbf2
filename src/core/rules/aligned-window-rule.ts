import type { Decision } from '../decision.js';
import type { Rule, RuleAdjustment, StateShape } from './rule.js';
import type { BucketState } from '../state.js';
import { readWindowOptions } from './window-options.js';
import { blockHorizonMs, decideWithBlock, type BlockPolicy } from './lockout.js';

/**
 * What the fixed and the sliding window share: a count per window of `windowMs`, windows aligned
 * to the Unix epoch (so every node and store agrees where one starts), a per-call limit that
 * replaces the rule's, and an untouched state that is as good as new. Each subclass brings its
 * kind, its shape, its horizon and its decision.
 *
 * @example
 * fixedWindow({ limit: 5, window: '1m' }) instanceof AlignedWindowRule; // true
 */
export abstract class AlignedWindowRule implements Rule {
  abstract readonly kind: string;
  abstract readonly shape: StateShape;
  /** A take may pass its own limit (a per-key limit from data). */
  readonly acceptsCallLimit = true;
  /** The default units per window (a take may pass its own). */
  readonly limit: number;
  /** The window's length in ms. */
  readonly windowMs: number;
  /** Whether refusals are counted. */
  readonly penalty: boolean;
  /** The lockout, if any. */
  readonly block: BlockPolicy | undefined;

  /** @param owner the rule's factory name, for error messages (`fixedWindow window`) */
  constructor(owner: string, options: unknown) {
    const settings = readWindowOptions(owner, options);
    this.limit = settings.limit;
    this.windowMs = settings.windowMs;
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

  /** An untouched window: no count in it (nor in the one before). */
  initialState(now: number): BucketState {
    const window = Math.floor(now / this.windowMs) * this.windowMs;
    return { value: 0, window, previous: 0, blockedUntil: 0, blockMs: 0 };
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
  decide(
    state: BucketState,
    now: number,
    epoch: number,
    name: string,
    cost: number,
    limit: number | undefined,
    commit: boolean,
  ): Decision {
    const block = this.block;
    if (block !== undefined)
      return decideWithBlock(this, block, state, now, epoch, name, cost, limit, commit);
    return this.decideBucket(state, now, epoch, name, cost, limit, commit);
  }

  abstract adjust(state: BucketState, adjustment: RuleAdjustment): boolean;

  /** Milliseconds after `now` from which forgetting the counts changes no decision. */
  abstract bucketHorizonMs(state: BucketState, now: number): number;

  /** The window's own decision, before any lockout. */
  abstract decideBucket(
    state: BucketState,
    now: number,
    epoch: number,
    name: string,
    cost: number,
    limit: number | undefined,
    commit: boolean,
  ): Decision;
}
