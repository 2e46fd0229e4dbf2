import { MAX_TIMER_MS } from '../core/bounds.js';
import { parseTimerDuration } from '../core/duration.js';
import { SluiceError, configError } from '../core/errors.js';
import type { Store } from '../stores/contract/store.js';

/** A limiter's store timeout when neither it nor its store sets one. */
export const DEFAULT_TIMEOUT_MS = 100;

/**
 * One timeout per limiter, set in one place. A store that bounds every call itself
 * (`store.timeoutMs`, e.g. `new RedisStore({ timeout: '5s' })`) owns the timeout: the limiter
 * takes the store's, so a store set to wait 5 s is not cut at 100 ms by a limiter nobody
 * configured. A limiter `timeout` that differs from such a store's is a configuration error:
 * a longer one would be cut by the store's timer first, and a shorter one would answer a
 * decision (with the failure policy) that the store could still charge afterwards, since the
 * store only refuses to write past its own deadline. A store without its own bound (the memory
 * store never hangs; a custom store may) takes the limiter's timeout, 100 ms by default.
 *
 * @returns the timeout in ms
 */
export function resolveTimeout(limitName: string, timeout: unknown, store: Store): number {
  const storeBound = storeTimeoutOf(store);
  if (timeout === undefined) return storeBound ?? DEFAULT_TIMEOUT_MS;
  const option = `limiter ${JSON.stringify(limitName)} timeout`;
  const ms = parseTimerDuration(timeout, option);
  if (storeBound !== undefined && ms !== storeBound) {
    throw new SluiceError(
      'SLUICE_CONFIG',
      `${option} (${ms} ms) differs from the ${store.kind} store's own timeout (${storeBound} ms), which bounds every call and is the one that counts: set the timeout on the store (a second store on the same client can carry another), or leave the limiter's unset`,
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
