import type { CallLimit, Rule } from '../../core/rules/rule.js';
import { TIER_BOUNDS, tierFault } from '../../core/call-limit.js';
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
  const fault = tierFault(rate, periodMs, burst);
  if (fault === 'size')
    throw argumentError(
      method,
      'limit.burst',
      'small enough that 2 × burst × periodMs counts exactly',
      burst,
    );
  if (fault !== undefined) throw argumentError(method, `limit.${fault}`, TIER_BOUNDS[fault], limit[fault]);
  const own = rule as { readonly periodMs?: unknown; readonly burst?: unknown };
  if (rate === rule.limit && periodMs === own.periodMs && burst === own.burst) return undefined;
  return limit;
}
