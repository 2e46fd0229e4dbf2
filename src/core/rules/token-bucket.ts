import { makeDecision, type Decision } from '../decision.js';
import { parseDuration, type Duration } from '../duration.js';
import { MAX_COUNT, MAX_TOKEN_RATE } from '../bounds.js';
import { SluiceError, configError } from '../errors.js';
import type { CallLimit, Rule, RuleAdjustment, RuleReservation, RuleTake } from './rule.js';
import { sameTier } from '../call-limit.js';
import type { BucketState } from '../state.js';
import { checkOptionKeys } from '../options.js';
import {
  blockHorizonMs,
  decideWithBlock,
  readBlockOptions,
  type BlockOptions,
  type BlockPolicy,
  type BucketTake,
} from './lockout.js';

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
 *
 * Per-call parameters (`BucketTier`: a plan's tier from data) decide a take under their
 * own rate, period and burst. A state is scaled by the rate it was charged under; one charged
 * under a tier whose rate or tolerance (burst × period) differs from the rule's keeps both in
 * its `window` and `previous` fields (0 and 0: the rule's own). When a take comes under other
 * parameters than the state's, the state is migrated so that a switch never adds tokens: it keeps
 * both the fraction of the capacity in use and the time until full, whichever leaves more queued
 * (a bucket 30% spent stays at least 30% spent, and one full again in an hour under a slow tier
 * is not full sooner under a fast one). A fraction alone let a key drain a large slow tier, move
 * the debt to a small fast one that refilled it in a minute, and come back to the large one full.
 * With both kept, a key is never admitted more over any interval than the largest burst of its
 * tiers plus what the fastest of them refills in that time (the state holds no history, so a
 * bucket refilled under a fast tier moves to a slow one as refilled). The scaled time queued ahead of now is multiplied by the new tolerance
 * and divided by the old, and multiplied by the new rate and divided by the old, in double
 * arithmetic, in that order, each rounded up to the next scaled unit, the larger kept (up to
 * `MAX_MIGRATED_QUEUE`): a deterministic computation that every store
 * (Lua, SQL) repeats with the same operations, so they agree to the unit.
 */
export class TokenBucketRule implements Rule {
  readonly kind = 'token-bucket' as const;
  readonly shape = 'arrival-time' as const;
  /** A token bucket takes no per-call count: its per-call parameters are a `BucketTier`. */
  readonly acceptsCallLimit = false;
  /** A take may carry its own rate, period and burst. */
  readonly acceptsCallTier = true;
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
  /** The rule's own scale: what a take without a tier runs under. */
  private readonly own: Scale;

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
    this.own = scaleOf(limit, periodMs, burst);
  }

  /** The rate: the per-call tier's, or the rule's. */
  limitFor(limit: CallLimit | undefined): number {
    return typeof limit === 'object' ? limit.limit : this.limit;
  }

  /** The most one take can ever get: the burst of the per-call tier, or the rule's. */
  capacityFor(limit: CallLimit | undefined): number {
    return typeof limit === 'object' ? limit.burst : this.burst;
  }

  /**
   * The scale a take runs under: the rule's own (also for a tier equal to it), or the tier's. Only
   * a tier allocates; the common path reads the rule's.
   */
  private scaleFor(limit: CallLimit | undefined): Scale {
    if (typeof limit !== 'object' || sameTier(limit, this)) return this.own;
    return scaleOf(limit.limit, limit.periodMs, limit.burst);
  }

  /**
   * The scaled time queued ahead of `now` (0: a full bucket) in `scale`, read from `state`
   * whatever it was charged under: when that differs, migrated proportionally (see the class).
   * Never changes `state`.
   */
  private queuedUnder(state: BucketState, now: number, epoch: number, scale: Scale): number {
    const keptRate = state.window === 0 ? this.limit : state.window;
    const scaledNow = (now - epoch) * keptRate;
    const queued = state.value > scaledNow ? state.value - scaledNow : 0;
    const keptTolerance = state.previous === 0 ? this.own.tolerance : state.previous;
    const { rate, tolerance } = scale;
    if (keptRate === rate && keptTolerance === tolerance) return queued;
    if (queued === 0) return 0;
    // Both the fraction of the capacity in use and the time until full are kept (the larger
    // queue wins), so that neither the new burst nor the new rate can hand back tokens the old
    // tier had not refilled yet. No debt cap here: a queue cut to the new tier's cap would let a
    // fast tier refill in minutes what a slow one charged for a day.
    const byFraction = Math.ceil((queued * tolerance) / keptTolerance);
    const byTime = Math.ceil((queued * rate) / keptRate);
    const moved = byFraction > byTime ? byFraction : byTime;
    return moved < MAX_MIGRATED_QUEUE ? moved : MAX_MIGRATED_QUEUE;
  }

  /**
   * Writes a state charged at `now` with `queued` scaled time ahead, in `scale`: tagged with its
   * rate and tolerance unless those are the rule's own.
   */
  private charge(state: BucketState, now: number, epoch: number, queued: number, scale: Scale): void {
    const own = scale.rate === this.limit && scale.tolerance === this.own.tolerance;
    state.value = (now - epoch) * scale.rate + queued;
    state.window = own ? 0 : scale.rate;
    state.previous = own ? 0 : scale.tolerance;
  }

  /**
   * Brings a state kept under a tier back to the rule's own scale, for the memory store's summary
   * of forgotten buckets, so that the key comes back no looser under any parameters it is read
   * with later. The fraction in use is kept, or more when the tier refills more slowly than the
   * rule: then the time until full is kept, since a fraction kept would drain at the rule's faster
   * pace and hand the key back fuller than it would have been. No debt cap: the summary must not
   * shorten a wait the key still has.
   */
  normalize(state: BucketState, now: number, epoch: number): void {
    if (state.window === 0 && state.previous === 0) return;
    const rate = state.window === 0 ? this.limit : state.window;
    const tolerance = state.previous === 0 ? this.own.tolerance : state.previous;
    const scaledNow = (now - epoch) * rate;
    const queued = state.value > scaledNow ? state.value - scaledNow : 0;
    const byFraction = (queued * this.own.tolerance) / tolerance;
    const byTime = (queued * this.limit) / rate;
    this.charge(state, now, epoch, Math.ceil(byFraction > byTime ? byFraction : byTime), this.own);
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
    const rate = state.window === 0 ? this.limit : state.window;
    const queued = state.value - (now - epoch) * rate;
    const full = queued > 0 ? Math.ceil(queued / rate) : 0;
    if (this.block === undefined) return full;
    const blocked = blockHorizonMs(this.block, state, now);
    return blocked > full ? blocked : full;
  }

  /**
   * A refund moves the arrival time back by the take's units that have not refilled yet (those
   * left between now and `until`, at most `-delta` tokens), never before now; a charge moves it
   * forward, the debt capped as a penalty's. Both in the units of the tier the take was made
   * under (`limit`), the state migrated to it first when it was kept under another.
   */
  adjust(state: BucketState, { now, epoch, delta, until, limit }: RuleAdjustment): boolean {
    const scale = this.scaleFor(limit);
    const { rate, unit, tolerance } = scale;
    const queued = this.queuedUnder(state, now, epoch, scale);
    if (delta < 0) {
      const left = (until - now) * rate;
      if (!(queued > 0) || !(left > 0)) return false;
      const asked = -delta * unit;
      const back = queued - (asked < left ? asked : left);
      this.charge(state, now, epoch, back > 0 ? back : 0, scale);
      return true;
    }
    if (delta === 0) return false;
    const charged = queued + delta * unit;
    this.charge(state, now, epoch, cappedDebt(charged, queued, tolerance), scale);
    return true;
  }

  /**
   * A reservation (`limiter.takeOrWait`): the take is admitted with its arrival time up to
   * `maxWaitMs` past the burst tolerance, so it holds the earliest slot the bucket gives and
   * later reservations queue behind it. The admitted decision carries in `retryAfterMs` the ms
   * until that slot (0: now). A slot further than `maxWaitMs` is a refusal that charges nothing,
   * penalty or not. Not for a rule with a lockout (the limiter refuses it before).
   */
  reserve(state: BucketState, reservation: RuleReservation): Decision {
    const { now, epoch, name, cost, maxWaitMs, limit } = reservation;
    const scale = this.scaleFor(limit);
    const { rate, unit, burst, tolerance } = scale;
    const queued = this.queuedUnder(state, now, epoch, scale);
    const after = queued + cost * unit;
    if (cost < 1 || cost > burst || after > tolerance + maxWaitMs * rate)
      return this.decideBucket(state, reservation, false);
    this.charge(state, now, epoch, after, scale);
    const wait = after > tolerance ? Math.ceil((after - tolerance) / rate) : 0;
    const remaining = after < tolerance ? Math.floor((tolerance - after) / unit) : 0;
    return makeDecision({
      allowed: true,
      name,
      limit: rate,
      capacity: burst,
      remaining,
      cost,
      retryAfterMs: wait,
      resetMs: Math.ceil(after / rate),
      windowMs: unit,
    });
  }

  decide(state: BucketState, take: RuleTake): Decision {
    const block = this.block;
    if (block !== undefined) return decideWithBlock(this, block, state, take);
    return this.decideBucket(state, take, take.commit);
  }

  /** The token bucket's own decision, before any lockout. */
  decideBucket(state: BucketState, { now, epoch, name, cost, limit }: BucketTake, commit: boolean): Decision {
    const scale = this.scaleFor(limit);
    const { rate, unit, burst, tolerance } = scale;
    // Scaled time already queued ahead of now: 0 for a full bucket, up to `tolerance` for an empty one.
    // The common path: the rule's own parameters on a state kept in them (only `value` changes).
    const plain = scale === this.own && state.window === 0 && state.previous === 0;
    const queued = plain ? this.queuedOwn(state, now, epoch) : this.queuedUnder(state, now, epoch, scale);
    const asked = cost === 0 ? 1 : cost;
    const after = queued + asked * unit;

    if (after <= tolerance && asked <= burst) {
      // Admitted. A peek (cost 0) reports the bucket as it is and changes nothing.
      const used = cost === 0 ? queued : after;
      if (commit && cost !== 0) {
        if (plain) state.value = (now - epoch) * rate + after;
        else this.charge(state, now, epoch, after, scale);
      }
      return makeDecision({
        allowed: true,
        name,
        limit: rate,
        capacity: burst,
        remaining: Math.floor((tolerance - used) / unit),
        cost,
        retryAfterMs: 0,
        resetMs: Math.ceil(used / rate),
        windowMs: unit,
      });
    }
    const remaining = queued >= tolerance ? 0 : Math.floor((tolerance - queued) / unit);
    const resetMs = Math.ceil(queued / rate);
    // More than the bucket can ever hold: refuse without waiting advice that would never come true.
    let retryAfterMs = Infinity;
    if (asked <= burst) {
      if (commit && this.penalty && cost > 0) {
        // Debt is capped at one extra full refill, so a penalty can never lock a key out for good.
        this.charge(state, now, epoch, cappedDebt(after, queued, tolerance), scale);
      }
      retryAfterMs = Math.ceil((after - tolerance) / rate);
    }
    return makeDecision({
      allowed: false,
      name,
      limit: rate,
      capacity: burst,
      remaining,
      cost,
      retryAfterMs,
      resetMs,
      windowMs: unit,
    });
  }

  /** The hot path's {@link queuedUnder}: a state in the rule's own scale, read under it. */
  private queuedOwn(state: BucketState, now: number, epoch: number): number {
    const scaledNow = (now - epoch) * this.limit;
    return state.value > scaledNow ? state.value - scaledNow : 0;
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

/**
 * The numbers a token bucket decides with: time is scaled by `rate` (tokens per period), a token
 * costs `unit` (the period in ms) scaled units, and the arrival time may run `tolerance`
 * (burst × period) ahead of now.
 */
interface Scale {
  readonly rate: number;
  readonly unit: number;
  readonly burst: number;
  readonly tolerance: number;
}

/**
 * The longest queue a migration between tiers carries (2^52 scaled units: at least 52 days at the
 * highest rate, centuries at common ones), so that the arrival time stays a whole number every
 * store holds exactly (a double, Lua's number, a bigint); a longer wait is cut to it.
 */
export const MAX_MIGRATED_QUEUE = 2 ** 52;

/**
 * A charge `after` on a queue `queued`, its debt capped at one extra full refill (twice the
 * tolerance), but never below the queue already there: a queue migrated from a slower tier may
 * run past the cap, and a charge must not shorten the wait it carries.
 */
function cappedDebt(after: number, queued: number, tolerance: number): number {
  const cap = queued > 2 * tolerance ? queued : 2 * tolerance;
  return after < cap ? after : cap;
}

function scaleOf(limit: number, periodMs: number, burst: number): Scale {
  return { rate: limit, unit: periodMs, burst, tolerance: burst * periodMs };
}
