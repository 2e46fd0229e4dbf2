import { MAX_COUNT } from '../../core/bounds.js';
import { SluiceError } from '../../core/errors.js';

/**
 * Checks what a take hands to the script: a non-empty string key, a whole cost in 0..MAX_COUNT and,
 * for a rule that takes one, a per-call limit in 1..MAX_COUNT or undefined. The limiter checks these already;
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
  // Interim: the scripts do not carry a token bucket's per-call tier yet.
  if (typeof limit === 'object' && limit !== null)
    throw new SluiceError(
      'SLUICE_CONFIG',
      'RedisStore: per-call token-bucket parameters are not supported yet',
    );
  // A rule without a per-call limit (a token bucket) ignores one, in the memory store as here.
  if (callLimit && limit !== undefined && !isCount(limit, 1)) {
    throw new SluiceError(
      'SLUICE_ARGUMENT',
      `RedisStore: a per-call limit must be a whole number from 1 to ${MAX_COUNT} (got ${typeOf(limit)})`,
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
