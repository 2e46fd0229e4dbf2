import { readRandom } from './options.js';

/** What {@link retryDelay} needs to know; the resolved options provide it. */
export interface DelayPolicy {
  baseDelayMs: number;
  maxDelayMs: number;
  jitterMs: number;
  random: () => number;
}

/**
 * The wait before retry number `retry` (1 for the first retry), in whole ms.
 *
 * - With a Retry-After lower bound `R` > 0: `R + random() * jitter`, capped at `maxDelay` but
 *   never below `R`. The jitter spreads clients that all got the same Retry-After, so they do
 *   not all come back in the same millisecond; it never makes a wait shorter than the server asked.
 * - Without one (absent, ignored, 0, or a date in the past): exponential backoff with full
 *   jitter, `random() * min(maxDelay, baseDelay * 2^(retry-1))`, which spreads retries best.
 *
 * The caller gives up instead when `R` > `maxDelay`, so the cap never undercuts the server.
 *
 * @example retryDelay(1, 2000, { baseDelayMs: 500, maxDelayMs: 30000, jitterMs: 1000, random: () => 0.5 }) // 2500
 */
export function retryDelay(retry: number, retryAfterMs: number | undefined, policy: DelayPolicy): number {
  const r = readRandom(policy.random);
  if (retryAfterMs !== undefined && retryAfterMs > 0) {
    const jittered = retryAfterMs + Math.floor(r * policy.jitterMs);
    return Math.max(retryAfterMs, Math.min(jittered, policy.maxDelayMs));
  }
  // 2 ** large is Infinity, which Math.min turns back into the cap: no overflow at any retry.
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return Math.floor(r * ceiling);
}
