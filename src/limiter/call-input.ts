import { MAX_COUNT } from '../core/bounds.js';
import { TIER_BOUNDS, sameTier, tierFault } from '../core/call-limit.js';
import { parseDuration } from '../core/duration.js';
import { systemClock, type Clock } from '../core/clock.js';
import { SluiceError, describeValue } from '../core/errors.js';
import type { BucketTier, CallLimit, Rule } from '../core/rules/rule.js';

/**
 * Checks of what a caller passes per call (key, cost, per-call limit) and of the clock reading.
 * Everything here may come from a request, so no message repeats a value: it names the argument
 * and the type received. Every check runs before a store is asked.
 */

// `String.prototype.isWellFormed` is in Node 20 but not in the ES2023 library the types target.
interface WellFormedCheck {
  isWellFormed(): boolean;
}

/**
 * A key must be a non-empty, well-formed string. A missing key is the developer's bug (500:
 * never a 429, never a pass); a non-string is bad client input that slipped through (400). So
 * is a string with a lone surrogate: stores that encode keys as UTF-8 (Redis, PostgreSQL) would
 * turn every lone surrogate into the same replacement character, so two different keys would
 * share one bucket. The message never repeats the key: keys may carry personal data.
 */
export function checkKey(key: unknown): asserts key is string {
  if (typeof key === 'string') {
    if (key.length > 0 && (key as unknown as WellFormedCheck).isWellFormed()) return;
    if (key.length > 0) {
      throw new SluiceError(
        'SLUICE_KEY_INVALID',
        'rate-limit key is not well-formed UTF-16 (it holds a lone surrogate)',
      );
    }
    throw new SluiceError(
      'SLUICE_KEY_MISSING',
      'rate-limit key is an empty string: the key step produced no key',
    );
  }
  if (key === undefined || key === null) {
    throw new SluiceError(
      'SLUICE_KEY_MISSING',
      `rate-limit key is ${String(key)}: the key step produced no key`,
    );
  }
  throw new SluiceError(
    'SLUICE_KEY_INVALID',
    `rate-limit key must be a string; received ${describeType(key)}`,
  );
}

/** Checks a per-call cost: a whole number from 0 to {@link MAX_COUNT}; undefined means 1. */
export function costOf(cost: unknown): number {
  if (cost === undefined) return 1;
  if (typeof cost === 'number' && Number.isSafeInteger(cost) && cost >= 0 && cost <= MAX_COUNT) return cost;
  throw new SluiceError(
    'SLUICE_ARGUMENT',
    `cost must be a whole number from 0 to ${MAX_COUNT}; received ${describeNumber(cost)}`,
  );
}

/** Checks the real cost of a settlement: like a cost, but required. */
export function actualCostOf(cost: unknown): number {
  if (cost === undefined)
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      `settle needs the actual cost: a whole number from 0 to ${MAX_COUNT}`,
    );
  return costOf(cost);
}

/** What a call may carry instead of its rule's own parameters (see `TakeOptions`). */
export interface CallParams {
  readonly limit?: unknown;
  readonly period?: unknown;
  readonly burst?: unknown;
}

/**
 * Checks a call's own parameters against its rule: a count `limit` for rules counted per window
 * (a whole number from 1 to {@link MAX_COUNT}); `limit`, `period` and `burst` for a token bucket,
 * made into a {@link BucketTier} (what the call leaves out comes from the rule, except that a
 * call giving a `limit` and no `burst` gets a burst of its limit, as `tokenBucket` defaults it).
 * Undefined when the call carries none.
 */
export function callLimitOf(options: CallParams, rule: Rule): CallLimit | undefined {
  const { limit, period, burst } = options;
  if (period === undefined && burst === undefined) {
    if (limit === undefined) return undefined;
    if (rule.acceptsCallLimit) return countLimitOf(limit);
  }
  if (rule.acceptsCallTier !== true) {
    // Name what the rule cannot take: a period or burst, or a limit at all.
    const what = period !== undefined ? 'period' : burst !== undefined ? 'burst' : 'limit';
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      what === 'limit'
        ? `a per-call limit applies to token buckets and rules counted per window, not to a ${rule.kind} rule`
        : `a per-call ${what} applies to token buckets, not to a ${rule.kind} rule`,
    );
  }
  return tierOf(limit, period, burst, rule as Rule & BucketTier);
}

/** A count limit: a whole number from 1 to {@link MAX_COUNT}. */
function countLimitOf(limit: unknown): number {
  if (typeof limit === 'number' && Number.isSafeInteger(limit) && limit >= 1 && limit <= MAX_COUNT)
    return limit;
  throw new SluiceError(
    'SLUICE_ARGUMENT',
    `limit must be a whole number from 1 to ${MAX_COUNT}; received ${describeNumber(limit)}`,
  );
}

/** A token bucket's tier, its bounds those of `tokenBucket` (messages name the option, never a value). */
function tierOf(limit: unknown, period: unknown, burst: unknown, rule: BucketTier): BucketTier | undefined {
  let periodMs = rule.periodMs;
  if (period !== undefined) {
    try {
      periodMs = parseDuration(period, 'period');
    } catch {
      throw new SluiceError(
        'SLUICE_ARGUMENT',
        `a per-call period must be a duration string with a unit, like "1m" or "1h"; received ${describeType(period)}`,
      );
    }
  }
  const rate = limit === undefined ? rule.limit : limit;
  const size = burst === undefined ? (limit === undefined ? rule.burst : limit) : burst;
  // A parsed period is always in bounds: only the limit, the burst and their product can fault.
  const fault = tierFault(rate, periodMs, size);
  if (fault === 'size')
    throw new SluiceError('SLUICE_ARGUMENT', 'a per-call burst × period is too large to count exactly');
  if (fault !== undefined)
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      `a token bucket's per-call ${fault} must be ${TIER_BOUNDS[fault]}; received ${describeNumber(fault === 'limit' ? rate : fault === 'burst' ? size : periodMs)}`,
    );
  const tier = { limit: rate as number, periodMs, burst: size as number };
  // The rule's own parameters are no tier: the take runs exactly as one without them.
  return sameTier(tier, rule) ? undefined : tier;
}

/**
 * Reads and checks the clock: a NaN or infinite reading would silently admit or deny. The
 * clock is configuration, not request data, so its reading may appear in the message.
 */
export function readClock(clock: Clock): number {
  // The wall clock always returns whole, finite ms: skip the checks on the hot path.
  if (clock === systemClock) return Date.now();
  const now = clock();
  if (typeof now !== 'number' || !Number.isFinite(now)) {
    throw new SluiceError(
      'SLUICE_CLOCK',
      `the clock returned ${describeValue(now)}; a clock returns finite ms since the Unix epoch`,
    );
  }
  return Math.floor(now);
}

/** The type of a value from a request, for a message; never the value itself. */
function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'undefined') return 'undefined';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** What is wrong with a per-call number, by kind (out of range, fractional), never its value. */
function describeNumber(value: unknown): string {
  if (typeof value !== 'number') return describeType(value);
  if (!Number.isFinite(value)) return 'a non-finite number';
  return Number.isInteger(value) ? 'a number out of range' : 'a fractional number';
}
