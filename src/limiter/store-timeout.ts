import { MAX_TIMER_MS } from '../core/bounds.js';
import { parseTimerDuration } from '../core/duration.js';
import { SluiceError, configError } from '../core/errors.js';
import type { Store } from '../store.js';

/** A limiter's store timeout when neither it nor its store sets one. */
export const DEFAULT_TIMEOUT_MS = 100;

/**
 * One timeout per limiter, agreeing with its store's own bound: a store that bounds every call
 * itself (`store.timeoutMs`, e.g. `new RedisStore({ timeout: '5s' })`) gives the limiter its
 * default, so that a store set to wait 5 s is not cut at 100 ms by a limiter nobody configured.
 * A limiter may tighten that bound, never loosen it: the store's own timer would fire first, so
 * a longer limiter timeout is a configuration error that says which option to set.
 *
 * @returns the timeout in ms
 */
export function resolveTimeout(limitName: string, timeout: unknown, store: Store): number {
  const storeBound = storeTimeoutOf(store);
  if (timeout === undefined) return storeBound ?? DEFAULT_TIMEOUT_MS;
  const option = `limiter ${JSON.stringify(limitName)} timeout`;
  const ms = parseTimerDuration(timeout, option);
  if (storeBound !== undefined && ms > storeBound) {
    throw new SluiceError(
      'SLUICE_CONFIG',
      `${option} (${ms} ms) is longer than the ${store.kind} store's own timeout (${storeBound} ms), which would cut every call first: set the store's timeout instead, or leave the limiter's unset to use the store's`,
    );
  }
  return ms;
}

function storeTimeoutOf(store: Store): number | undefined {
  const bound: unknown = store.timeoutMs;
  if (bound === undefined) return undefined;
  if (typeof bound === 'number' && Number.isSafeInteger(bound) && bound > 0 && bound <= MAX_TIMER_MS) {
    return bound;
  }
  throw configError(`${store.kind} store timeoutMs`, `a whole number of ms from 1 to ${MAX_TIMER_MS}`, bound);
}
