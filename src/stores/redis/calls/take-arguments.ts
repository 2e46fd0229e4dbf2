import { MAX_COUNT } from '../../../core/bounds.js';
import { SluiceError } from '../../../core/errors.js';
import { TIER_BOUNDS, tierFault } from '../../../core/call-limit.js';

/**
 * Checks what a take hands to the script: a non-empty string key, a whole cost in 0..MAX_COUNT and,
 * for a rule that takes one, a per-call limit in 1..MAX_COUNT or undefined; for a token bucket, a
 * per-call tier as {@link checkTier} says (a count it ignores). The limiter checks these already;
 * the store checks them again because its buckets can be called directly, and a value the script
 * cannot count with (NaN, 1e21, a fraction) must be the caller's error (SLUICE_ARGUMENT), never a
 * Redis error reported as a store failure. Messages name the argument and its type, never its
 * value: keys, costs and limits can come from a request.
 * @throws SluiceError `SLUICE_ARGUMENT`
 */
export function checkTakeArguments(key: unknown, cost: unknown, limit: unknown, callLimit: boolean): void {
  if (typeof key !== 'string' || key.length === 0) {
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      `RedisStore: a key must be a non-empty string (got ${typeOf(key)})`,
    );
  }
  if (!isCount(cost, 0)) {
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      `RedisStore: a cost must be a whole number from 0 to ${MAX_COUNT} (got ${typeOf(cost)})`,
    );
  }
  if (callLimit) {
    if (limit !== undefined && !isCount(limit, 1)) {
      throw new SluiceError(
        'SLUICE_ARGUMENT',
        `RedisStore: a per-call limit must be a whole number from 1 to ${MAX_COUNT} (got ${typeOf(limit)})`,
      );
    }
    // A rule without a per-call limit (a token bucket) ignores a count, in the memory store as here.
  } else if (limit !== undefined && typeof limit !== 'number') checkTier(limit);
}

/**
 * Checks a token bucket's per-call tier (`BucketTier`) against the bounds of `tokenBucket`: whole
 * numbers, `limit` from 1 to MAX_TOKEN_RATE, `periodMs` at least 1, `burst` from 1 to MAX_COUNT,
 * and `2 × burst × periodMs` a safe integer, so that the script counts exactly. Messages name the
 * field, never its value (a plan's parameters come from data).
 * @throws SluiceError `SLUICE_ARGUMENT`
 */
export function checkTier(tier: unknown): void {
  if (typeof tier !== 'object' || tier === null) {
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      `RedisStore: a per-call tier must be an object with limit, periodMs and burst (got ${typeOf(tier)})`,
    );
  }
  const { limit, periodMs, burst } = tier as Record<string, unknown>;
  const fault = tierFault(limit, periodMs, burst);
  if (fault === 'size')
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      "RedisStore: a per-call tier's burst × periodMs is too large to count exactly",
    );
  if (fault !== undefined) {
    const received = fault === 'limit' ? limit : fault === 'periodMs' ? periodMs : burst;
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      `RedisStore: a per-call tier's ${fault} must be ${TIER_BOUNDS[fault]} (got ${typeOf(received)})`,
    );
  }
}

/**
 * Checks what an adjustment hands to the script, as {@link checkTakeArguments} does for a take: a
 * non-empty string key, a whole `delta` from -MAX_COUNT to MAX_COUNT, and times that are finite
 * numbers.
 * @throws SluiceError `SLUICE_ARGUMENT`
 */
export function checkAdjustArguments(
  key: unknown,
  delta: unknown,
  now: unknown,
  takenAt: unknown,
  until: unknown,
): void {
  checkTakeArguments(key, 0, undefined, false);
  if (!(typeof delta === 'number' && Number.isSafeInteger(delta) && Math.abs(delta) <= MAX_COUNT)) {
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      `RedisStore: an adjustment must be a whole number from -${MAX_COUNT} to ${MAX_COUNT} (got ${typeOf(delta)})`,
    );
  }
  for (const [name, time] of [
    ['now', now],
    ['takenAt', takenAt],
    ['until', until],
  ] as const) {
    if (typeof time !== 'number' || !Number.isFinite(time)) {
      throw new SluiceError(
        'SLUICE_ARGUMENT',
        `RedisStore: an adjustment's ${name} must be a finite number of ms (got ${typeof time === 'number' ? 'a number that is not finite' : typeOf(time)})`,
      );
    }
  }
}

function isCount(value: unknown, min: number): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= MAX_COUNT;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'number')
    return Number.isInteger(value) ? 'a number out of range' : 'a number that is not whole';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
