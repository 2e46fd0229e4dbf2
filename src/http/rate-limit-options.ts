import type { Duration } from '../core/duration.js';
import type { ClientAddressOptions } from '../keys/client-address.js';
import type { Cascade } from '../limiter/cascade.js';
import type { ConcurrencyLimiter } from '../limiter/concurrency.js';
import type { DecisionEvents } from '../limiter/events.js';
import type { Limiter } from '../limiter/limiter.js';
import type { KeyResult } from './guard-keys.js';
import type { CountOnly, ErrorReportDetails } from './guard-options.js';
import type { HeaderStyle } from './headers.js';
import type { ProblemOptions } from './problem.js';

/**
 * Options of a route limit: `createGuard` and every adapter's `rateLimit` take these as they are.
 * Each option is checked at setup (`SLUICE_CONFIG` naming it); unknown options are refused.
 *
 * @default every method, cost 1, draft headers, `Cache-Control: no-store`, `onError` = console.error
 * @example
 * const options: RateLimitOptions<Request> = { limits: writes, key: () => 'client-1', methods: ['POST'] };
 */
export interface RateLimitOptions<Request> {
  /**
   * The limit(s) to apply, wide to narrow. An array is a first-refusal cascade: the first refusal
   * stops and later limits are not charged. Pass a `createCascade(...)` for all-or-nothing.
   *
   * A concurrency limit (`concurrencyLimit`) may end the array, or be the only limit: once every
   * rate limit admitted, the request acquires a lease, released when its response finishes or
   * its connection closes; a refused lease refunds the rate takes (the request never ran).
   */
  limits: Limiter | ConcurrencyLimiter | readonly (Limiter | ConcurrencyLimiter)[] | Cascade;
  /**
   * The key step. Throw a `SluiceError` (`SLUICE_KEY_INVALID`, `SLUICE_UNAUTHORIZED`) to answer
   * 400/401; returning nothing is a developer error (500), never a pass.
   */
  key: (request: Request) => KeyResult | undefined | Promise<KeyResult | undefined>;
  /** Units this request costs. @default 1 */
  cost?: number | ((request: Request) => number);
  /**
   * Only requests with these methods are limited; others pass untouched and uncharged (so that
   * reads are not charged to a write budget). `GET` brings `HEAD`, which frameworks answer with the GET
   * handler. @default every method
   */
  methods?: readonly string[];
  /**
   * Routes that have their own rule and are left out of this one, e.g. `["POST /api/messages"]`
   * for a catch-all write budget. `"METHOD /path"` is that path in any spelling a
   * framework routes alike (case, trailing or repeated slashes, dot segments, percent-encoded
   * letters); `"METHOD /path/*"` is that path and everything below it. Paths are the full
   * request path, also under an Express mount point. A `GET` route covers `HEAD` too.
   */
  exclude?: readonly string[];
  /**
   * Whether CORS preflights (`OPTIONS` with `Access-Control-Request-Method`) are charged. A
   * browser sends one before a cross-origin request on its own; charging it would bill one
   * action twice. @default false
   */
  chargePreflight?: boolean;
  /** Rate-limit headers: one of `HEADER_STYLES`. @default "draft" */
  headers?: HeaderStyle;
  /** Problem body wording of the 429. */
  problem?: ProblemOptions;
  /**
   * `Cache-Control` of the responses this limit sends (429, 400, 401, 500, 503). It must
   * contain `no-store`; an API that also forbids shared caches answers `private, no-store`.
   * @default "no-store"
   */
  cacheControl?: string;
  /**
   * Called with errors that become a 500 (developer errors, a throwing key function), so you can
   * log them: at most once a minute per limit (by the limits' clock), with the number of failures
   * since the last call, so an outage cannot flood the logs. Store failures are logged by the
   * limiter. An `onError` that throws changes nothing about the response.
   * @default console.error
   */
  onError?: (error: unknown, details: ErrorReportDetails) => void;
  /**
   * Clients answered 403 (`code: "denied"`) before anything else runs: no skip, no key function,
   * no store. Addresses and CIDR ranges, IPv4 and IPv6 (`"203.0.113.0/24"`, `"2001:db8::/32"`),
   * or the named ranges `"loopback"`, `"linklocal"` and `"uniquelocal"`;
   * an IPv4-mapped IPv6 client matches its IPv4 range. Deny is decided first, so an address on
   * both lists is denied. It applies to every request that reaches this limit, whatever its
   * method or route (`methods` and `exclude` only say what is charged).
   */
  deny?: readonly string[];
  /**
   * Clients that bypass every limit of this guard: health checkers, internal networks. Their
   * requests go on untouched: no key function, no store call, no rate-limit headers. Same form
   * as `deny`.
   */
  allow?: readonly string[];
  /**
   * A request for which this returns `true` goes on untouched (after the lists, before the key).
   * It may be async. One that throws or rejects counts as `false` (the request is limited) and
   * is reported through `onError` at most once a minute.
   */
  skip?: (request: Request) => boolean | Promise<boolean>;
  /**
   * The client address `allow` and `deny` are matched against, as text (`clientAddress(…).address`).
   * An address that is missing or not an IP address is on neither list. Decided here, from the
   * request itself: never looked up over the network.
   * @default node, Express and Fastify: `clientAddress` of the request with `proxies`; fetch: the
   * same from the peer address its server handed over; elsewhere (Hono, `createGuard`) there is
   * no socket to read, so it is required with a list
   */
  address?: (request: Request) => string | undefined;
  /**
   * Node, Express, Fastify and fetch adapters only: the `clientAddress` options (`trustedProxies`,
   * `header`, `hops`, `trustUnixSocket`) with which the default `address` reads the client
   * address behind your proxies. Without it only a proxy on the same machine is trusted.
   * @default `{ trustedProxies: LOOPBACK, header: 'x-forwarded-for' }`
   */
  proxies?: ClientAddressOptions;
  /**
   * A channel for the guard's own outcomes: `denied`, `allowed-by-list` and `skipped`, with no
   * rule, store or key (none was asked). The limits report their outcomes to their own channel.
   */
  events?: DecisionEvents;
  /**
   * Counts only the requests whose response failed, or only those that succeeded. Every request
   * is charged when it arrives, as usual, so a burst of concurrent requests is still limited;
   * once its response is ended, the charge of a request that does not count is refunded.
   * `"failed"`: a response with status 400 or above counts, and so does a request whose
   * connection closed before its response was ended; anything else is refunded. `"succeeded"`:
   * an ended response with status below 400 counts; anything else is refunded. A request the
   * limit answered itself (429, 403, 400, 401, 500, 503) is never refunded. A refund that fails is
   * reported through `onError` like other failures. Only with a limiter or an array of limiters
   * (not a cascade object). See docs/accounting.md.
   * @default every admitted request counts
   */
  countOnly?: CountOnly;
  /**
   * `"delay"` holds a request over the limit until its slot instead of answering 429 (nginx's
   * `delay=`, express-slow-down): every limit reserves the earliest slot it gives (see
   * `limiter.takeOrWait`) and the request goes on when the latest arrives, as long as that is
   * within `maxWait`; a request whose slot is further away is answered 429 at once, charged
   * nothing. A client that disconnects while waiting gives its reservations back. Only with
   * token buckets without a lockout, enforced (`SLUICE_CONFIG` otherwise), given as a limiter or
   * an array of limiters. See docs/accounting.md.
   * @default "refuse"
   */
  mode?: 'refuse' | 'delay';
  /** With `mode: "delay"` (required then): the longest a request waits, from `"1ms"` to `"1h"`. */
  maxWait?: Duration;
}
