import { makeDecision, type Decision } from './decision.js';
import { parseDuration, type Duration } from './duration.js';
import { MAX_COUNT, MAX_TOKEN_RATE } from './bounds.js';
import { SluiceError, configError } from './errors.js';
import type { Rule } from './algorithm.js';
import type { BucketState } from './state.js';
import { checkOptionKeys } from './options.js';
import {
  blockHorizonMs,
  decideWithBlock,
  readBlockOptions,
  type BlockOptions,
  type BlockPolicy,
} from './block.js';

/** Options of {@link tokenBucket}. */
export interface TokenBucketOptions {
  /**
   * Tokens added per `period`: the sustained rate. A positive whole number, at most
   * {@link MAX_TOKEN_RATE} (10^6); a higher rate is the same rate over a shorter period.
   */
  limit: number;
  /** The period over which `limit` tokens refill, e.g. `"1h"` or `60_000`. */
  period: Duration;
  /**
   * Capacity: the most that can be taken at once from a full bucket. A positive whole number,
   * at most {@link MAX_COUNT} (10^12).
   * @default limit — "5 per hour" admits 5 at once, then one every 12 minutes.
   */
  burst?: number;
  /**
   * When true, a refused take is charged too (debt, capped at one extra full refill), so that
   * a client that keeps hammering keeps itself waiting. Off by default: a refusal consumes
   * nothing, and a legitimate user who retried too early is not punished for it.
   * @default false
   */
  penalty?: boolean;
  /** A lockout: a refusal blocks the key for a while, longer when it is refused again soon. */
  block?: BlockOptions;
}

const tokenBucketKeys = ['limit', 'period', 'burst', 'penalty', 'block'] as const;

/**
 * A token bucket in GCRA form: the state of a key is one number, its theoretical arrival time.
 *
 * Arithmetic is exact. Time is scaled by `limit` (one millisecond = `limit` units), so that one
 * token costs exactly `periodMs` units and every quantity is a whole number: no rounding drift,
 * whatever `period / limit` is. Integers stay exact in a double while `|now − epoch| × limit`
 * stays below 2^53, i.e. for about 285 years at `limit` 1,000 and 104 days at `limit` 1,000,000
 * from the epoch the store keeps; beyond that results are off by fractions of a millisecond.
 */
export class TokenBucketRule implements Rule {
  readonly kind = 'token-bucket' as const;
  readonly shape = 'arrival-time' as const;
  /** A token bucket takes no per-call limit: its capacity is its burst. */
  readonly acceptsCallLimit = false;
  /** Tokens per period. */
  readonly limit: number;
  /** The period in milliseconds. */
  readonly periodMs: number;
  /** Capacity in tokens. */
  readonly burst: number;
  /** Whether refusals are charged. */
  readonly penalty: boolean;
  /** The lockout, if any. */
  readonly block: BlockPolicy | undefined;
  /** Scaled units one token costs (= periodMs). */
  private readonly unit: number;
  /** Scaled burst tolerance: how far ahead of `now` the arrival time may run (= burst × periodMs). */
  private readonly tolerance: number;

  constructor(options: TokenBucketOptions) {
    checkOptionKeys('tokenBucket', options, tokenBucketKeys);
    const { limit, burst = limit, penalty = false } = options;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_TOKEN_RATE) {
      throw configError(
        'tokenBucket limit',
        `a whole number from 1 to ${MAX_TOKEN_RATE} (for a higher rate, use a shorter period)`,
        limit,
      );
    }
    const periodMs = parseDuration(options.period, 'tokenBucket period');
    if (!Number.isSafeInteger(burst) || burst < 1 || burst > MAX_COUNT)
      throw configError('tokenBucket burst', `a whole number from 1 to ${MAX_COUNT}`, burst);
    if (typeof penalty !== 'boolean') throw configError('tokenBucket penalty', 'a boolean', penalty);
    if (!Number.isSafeInteger(burst * periodMs * 2)) {
      throw new SluiceError('SLUICE_CONFIG', 'tokenBucket burst × period is too large to count exactly');
    }
    this.limit = limit;
    this.periodMs = periodMs;
    this.burst = burst;
    this.penalty = penalty;
    this.block = readBlockOptions('tokenBucket', options.block);
    this.unit = periodMs;
    this.tolerance = burst * periodMs;
  }

  /** The rate, whatever the per-call limit (token buckets take none). */
  limitFor(_limit: number | undefined): number {
    return this.limit;
  }

  /** The most one take can ever get: the burst, whatever the per-call limit (token buckets take none). */
  capacityFor(_limit: number | undefined): number {
    return this.burst;
  }

  /** A full bucket: the arrival time is now. */
  initialState(now: number, epoch: number): BucketState {
    return { value: (now - epoch) * this.limit, window: 0, previous: 0, blockedUntil: 0, blockMs: 0 };
  }

  /** An arrival time not ahead of now is a full bucket. */
  floorValue(now: number, epoch: number): number {
    return (now - epoch) * this.limit;
  }

  /**
   * Time until the bucket is full again: until its arrival time (whole ms, rounded up); with a
   * lockout, at least until the key's last block is forgotten.
   */
  horizonMs(state: BucketState, now: number, epoch: number): number {
    const queued = state.value - (now - epoch) * this.limit;
    const full = queued > 0 ? Math.ceil(queued / this.limit) : 0;
    if (this.block === undefined) return full;
    const blocked = blockHorizonMs(this.block, state, now);
    return blocked > full ? blocked : full;
  }

  /**
   * A refund moves the arrival time back by the take's units that have not refilled yet (those
   * left between now and `until`, at most `-delta` tokens), never before now; a charge moves it
   * forward, the debt capped as a penalty's.
   */
  adjust(
    state: BucketState,
    now: number,
    epoch: number,
    delta: number,
    _takenAt: number,
    until: number,
  ): boolean {
    const scaledNow = (now - epoch) * this.limit;
    if (delta < 0) {
      const left = (until - now) * this.limit;
      if (!(state.value > scaledNow) || !(left > 0)) return false;
      const asked = -delta * this.unit;
      const back = state.value - (asked < left ? asked : left);
      state.value = back > scaledNow ? back : scaledNow;
      return true;
    }
    if (delta === 0) return false;
    const queued = state.value > scaledNow ? state.value - scaledNow : 0;
    const charged = queued + delta * this.unit;
    state.value = scaledNow + (charged < 2 * this.tolerance ? charged : 2 * this.tolerance);
    return true;
  }

  /**
   * A reservation (`limiter.takeOrWait`): the take is admitted with its arrival time up to
   * `maxWaitMs` past the burst tolerance, so it holds the earliest slot the bucket gives and
   * later reservations queue behind it. The admitted decision carries in `retryAfterMs` the ms
   * until that slot (0: now). A slot further than `maxWaitMs` is a refusal that charges nothing,
   * penalty or not. Not for a rule with a lockout (the limiter refuses it before).
   */
  reserve(
    state: BucketState,
    now: number,
    epoch: number,
    name: string,
    cost: number,
    maxWaitMs: number,
  ): Decision {
    const rate = this.limit;
    const unit = this.unit;
    const tolerance = this.tolerance;
    const scaledNow = (now - epoch) * rate;
    const queued = state.value > scaledNow ? state.value - scaledNow : 0;
    const after = queued + cost * unit;
    if (cost < 1 || cost > this.burst || after > tolerance + maxWaitMs * rate)
      return this.decideBucket(state, now, epoch, name, cost, undefined, false);
    state.value = scaledNow + after;
    const wait = after > tolerance ? Math.ceil((after - tolerance) / rate) : 0;
    const remaining = after < tolerance ? Math.floor((tolerance - after) / unit) : 0;
    return makeDecision(
      true,
      name,
      rate,
      this.burst,
      remaining,
      cost,
      wait,
      Math.ceil(after / rate),
      this.periodMs,
    );
  }

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

  /** The token bucket's own decision, before any lockout. */
  decideBucket(
    state: BucketState,
    now: number,
    epoch: number,
    name: string,
    cost: number,
    _limit: number | undefined,
    commit: boolean,
  ): Decision {
    const rate = this.limit;
    const unit = this.unit;
    const tolerance = this.tolerance;
    const scaledNow = (now - epoch) * rate;
    const tat = state.value > scaledNow ? state.value : scaledNow;
    // Scaled time already queued ahead of now: 0 for a full bucket, up to `tolerance` for an empty one.
    const queued = tat - scaledNow;
    const asked = cost === 0 ? 1 : cost;
    const after = queued + asked * unit;

    if (after <= tolerance && asked <= this.burst) {
      // Admitted. A peek (cost 0) reports the bucket as it is and changes nothing.
      const used = cost === 0 ? queued : after;
      if (commit && cost !== 0) state.value = scaledNow + after;
      return makeDecision(
        true,
        name,
        rate,
        this.burst,
        Math.floor((tolerance - used) / unit),
        cost,
        0,
        Math.ceil(used / rate),
        this.periodMs,
      );
    }
    const remaining = queued >= tolerance ? 0 : Math.floor((tolerance - queued) / unit);
    const resetMs = Math.ceil(queued / rate);
    if (asked > this.burst) {
      // More than the bucket can ever hold: refuse without waiting advice that would never come true.
      return makeDecision(false, name, rate, this.burst, remaining, cost, Infinity, resetMs, this.periodMs);
    }
    if (commit && this.penalty && cost > 0) {
      // Debt is capped at one extra full refill, so a penalty can never lock a key out for good.
      const charged = after < 2 * tolerance ? after : 2 * tolerance;
      state.value = scaledNow + charged;
    }
    const retryAfterMs = Math.ceil((after - tolerance) / rate);
    return makeDecision(false, name, rate, this.burst, remaining, cost, retryAfterMs, resetMs, this.periodMs);
  }
}

/**
 * A token bucket: `limit` tokens per `period`, holding at most `burst`.
 *
 * @example
 * const registration = tokenBucket({ limit: 5, period: '1h' });            // burst 5
 * const messages = tokenBucket({ limit: 30, period: '1m', burst: 10 });
 */
export function tokenBucket(options: TokenBucketOptions): TokenBucketRule {
  return new TokenBucketRule(options);
}
