import type { CallLimit, Rule } from '../../core/algorithm.js';
import { MAX_COUNT, MAX_TOKEN_RATE } from '../../core/bounds.js';
import { SluiceError } from '../../core/errors.js';
import { typeName } from './account-id.js';

/** SLUICE_ARGUMENT naming the method, the field and the type received: never the value. */
function argumentError(method: string, field: string, expected: string, received: unknown): SluiceError {
  return new SluiceError(
    'SLUICE_ARGUMENT',
    `${method} ${field} must be ${expected}; received ${typeName(received)}`,
  );
}

/**
 * A per-call limit as the statements take it. A count passes as it is (the limiter checked it);
 * a token bucket's tier ({@link BucketTier}) is checked here too, since the statements store its
 * numbers in the bucket's row and a value out of range would count inexactly or overflow, and is
 * `undefined` when it equals the rule's own parameters (as the core's `tierOf` reads it), so that
 * such a take goes the rule's own way and shares a statement with plain takes.
 *
 * @throws SluiceError `SLUICE_ARGUMENT` naming the field (never its value): a tier for a rule
 * that takes none, or a tier field that is not a whole number in range
 */
export function checkedCallLimit(
  rule: Rule,
  limit: CallLimit | undefined,
  method: string,
): CallLimit | undefined {
  if (typeof limit !== 'object') return limit;
  if (limit === null || rule.acceptsCallTier !== true)
    throw argumentError(method, 'limit', 'a count (a per-call tier only for token buckets)', limit);
  const { limit: rate, periodMs, burst } = limit;
  if (!Number.isSafeInteger(rate) || rate < 1 || rate > MAX_TOKEN_RATE)
    throw argumentError(method, 'limit.limit', `a whole number from 1 to ${MAX_TOKEN_RATE}`, rate);
  if (!Number.isSafeInteger(periodMs) || periodMs < 1)
    throw argumentError(method, 'limit.periodMs', 'a positive whole number of ms', periodMs);
  if (!Number.isSafeInteger(burst) || burst < 1 || burst > MAX_COUNT)
    throw argumentError(method, 'limit.burst', `a whole number from 1 to ${MAX_COUNT}`, burst);
  if (!Number.isSafeInteger(2 * burst * periodMs))
    throw argumentError(
      method,
      'limit.burst',
      'small enough that 2 × burst × periodMs counts exactly',
      burst,
    );
  const own = rule as { readonly periodMs?: unknown; readonly burst?: unknown };
  if (rate === rule.limit && periodMs === own.periodMs && burst === own.burst) return undefined;
  return limit;
}

/** Whether two checked per-call limits are the same (a tier by its numbers): takes that may share a row. */
export function sameCallLimit(a: CallLimit | undefined, b: CallLimit | undefined): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object') return false;
  return a.limit === b.limit && a.periodMs === b.periodMs && a.burst === b.burst;
}
