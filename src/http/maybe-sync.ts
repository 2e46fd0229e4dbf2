/**
 * Telling an answer given at once from one still to come: the guard goes on synchronously while
 * every step (skip, key, take) answers without a promise, so a memory store spares a request
 * every promise and every turn of the microtask queue.
 */
import type { Limiter, SyncLimiter } from '../limiter/limiter.js';

/**
 * True for a promise or any other thenable a user's function may return.
 *
 * @example
 * if (isThenable(answer)) return answer.then(goOn);
 */
export function isThenable(value: unknown): value is Promise<unknown> {
  return (
    typeof value === 'object' && value !== null && typeof (value as Promise<unknown>).then === 'function'
  );
}

/**
 * True for a limiter on a synchronous store (memory), which takes and refunds without a promise.
 *
 * @example
 * if (isSyncLimiter(limiter)) limiter.refundSync(receipt);
 */
export function isSyncLimiter(limiter: Limiter): limiter is SyncLimiter {
  return typeof (limiter as SyncLimiter).takeSync === 'function';
}
