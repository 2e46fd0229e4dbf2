import type { BucketTier, CallLimit } from './rules/rule.js';
import { MAX_COUNT, MAX_TOKEN_RATE } from './bounds.js';

/**
 * Which number of a token bucket's tier is out of the bounds `tokenBucket` keeps (so that its
 * arithmetic stays exact), or undefined when none is: `limit` (a whole number from 1 to
 * {@link MAX_TOKEN_RATE}), `periodMs` (a whole number of at least 1), `burst` (a whole number
 * from 1 to {@link MAX_COUNT}), and `size` when `2 × burst × periodMs` is not a safe integer.
 * Every boundary that takes a tier (the limiter, each shared store) checks it with this and words
 * its own message from {@link TIER_BOUNDS}, naming the field, never the value.
 */
export function tierFault(
  limit: unknown,
  periodMs: unknown,
  burst: unknown,
): 'limit' | 'periodMs' | 'burst' | 'size' | undefined {
  if (!(Number.isSafeInteger(limit) && (limit as number) >= 1 && (limit as number) <= MAX_TOKEN_RATE))
    return 'limit';
  if (!(Number.isSafeInteger(periodMs) && (periodMs as number) >= 1)) return 'periodMs';
  if (!(Number.isSafeInteger(burst) && (burst as number) >= 1 && (burst as number) <= MAX_COUNT))
    return 'burst';
  if (!Number.isSafeInteger(2 * (burst as number) * (periodMs as number))) return 'size';
  return undefined;
}

/** What each number of a tier must be, for messages (see {@link tierFault}). */
export const TIER_BOUNDS = {
  limit: `a whole number from 1 to ${MAX_TOKEN_RATE}`,
  periodMs: 'a whole number of at least 1',
  burst: `a whole number from 1 to ${MAX_COUNT}`,
} as const;

/** Whether two per-call limits are the same: equal counts, or tiers of equal rate, period and burst. */
export function sameCallLimit(a: CallLimit | undefined, b: CallLimit | undefined): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object') return false;
  return sameTier(a, b);
}

/** Whether two tiers have the same rate, period and burst. */
export function sameTier(a: BucketTier, b: BucketTier): boolean {
  return a.limit === b.limit && a.periodMs === b.periodMs && a.burst === b.burst;
}
