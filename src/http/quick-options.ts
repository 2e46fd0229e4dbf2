/**
 * The one-line form of a route limit, `rateLimit({ limit: 100, window: '15m' })`: a token bucket
 * of `limit` per `window` on a memory store of its own, keyed by the client address. It grows
 * into the full form: every other option of {@link RateLimitOptions} may be added to it, and
 * `key` replaces the client address.
 */
import type { Duration } from '../core/duration.js';
import { SluiceError, optionError } from '../core/errors.js';
import { tokenBucket } from '../core/rules/token-bucket.js';
import { ipKey } from '../keys/ip-prefix.js';
import { createLimiter } from '../limiter/limiter.js';
import { MemoryStore } from '../stores/memory/store.js';
import type { RateLimitOptions } from './rate-limit-options.js';

/**
 * The one-line form of a route limit: `limit` requests per `window` for each client address, in
 * this process's memory. A token bucket: a burst of up to `limit` at once, then `limit` per
 * `window` at a steady rate. Every other option of {@link RateLimitOptions} may be added, and
 * `key` replaces the client address (read as the adapter reads it, behind `proxies`).
 *
 * @default the key is `ipKey` of the client address (IPv6 by /64); the limit is named `"rate-limit"`
 * @example
 * app.use(rateLimit({ limit: 100, window: '15m' }));
 */
export interface QuickRateLimitOptions<Request> extends Omit<RateLimitOptions<Request>, 'limits' | 'key'> {
  /** Requests per `window` (and the largest burst), a whole number of at least 1. */
  limit: number;
  /** The window, a duration such as `'15m'` or `'1h'`. */
  window: Duration;
  /** The limit's name, in its `RateLimit-Policy` header and its events. @default "rate-limit" */
  name?: string;
  /** What a client is. @default `ipKey` of the client address */
  key?: RateLimitOptions<Request>['key'];
}

/**
 * What every adapter's `rateLimit` takes: the full options, or the one-line form.
 *
 * @example
 * const options: RateLimitInput<Request> = { limit: 100, window: '15m' };
 */
export type RateLimitInput<Request> = RateLimitOptions<Request> | QuickRateLimitOptions<Request>;

const own = (options: object, name: string) => Object.hasOwn(options, name);

/** True when `options` is the one-line form (it has `limit` or `window`). */
export function isQuick<Request>(
  options: RateLimitInput<Request>,
): options is QuickRateLimitOptions<Request> {
  return typeof options === 'object' && options !== null && (own(options, 'limit') || own(options, 'window'));
}

/**
 * The full options of a one-line form (the full form is returned as it is): its limiter, and
 * unless `key` is given, a key of the client address that `addressOf` reads. A form that mixes
 * both (`limit` with `limits`) or lacks half of itself is a `SLUICE_CONFIG` naming the option.
 */
export function expandQuick<Request>(
  options: RateLimitInput<Request>,
  addressOf: ((request: Request) => string | undefined) | undefined,
): RateLimitOptions<Request> {
  if (!isQuick(options)) return options;
  const { limit, window, name = 'rate-limit', key, ...rest } = options;
  if (own(options, 'limits'))
    throw new SluiceError(
      'SLUICE_CONFIG',
      'rateLimit limits must be left out with limit and window (they are the one-line form of one limit); give either limits or limit and window',
    );
  if (!own(options, 'limit')) throw optionError('rateLimit limit', 'a whole number beside window');
  if (!own(options, 'window'))
    throw optionError('rateLimit window', "a duration string beside limit, such as '15m'");
  if (typeof name !== 'string' || name === '') throw optionError('rateLimit name', 'a non-empty string');
  const address = key === undefined ? (rest.address ?? addressOf) : undefined;
  if (key === undefined && address === undefined)
    throw optionError('rateLimit key', 'a function here: this adapter cannot read the client address');
  const limits = createLimiter({
    name,
    rule: tokenBucket({ limit, period: window }),
    store: new MemoryStore(),
  });
  return { ...rest, limits, key: key ?? ((request: Request) => ipKey(address!(request))) };
}
