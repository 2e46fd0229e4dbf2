import type { Decision } from '../core/decision.js';
import { SluiceError, isSluiceError } from '../core/errors.js';
import type { ClientAddressOptions } from '../keys/client-address.js';
import type { DecisionEvent, DecisionEvents, DecisionOutcome } from '../limiter/events.js';
import type { Cascade, SyncCascade } from '../limiter/cascade.js';
import type { Limiter, SyncLimiter, TakeOptions } from '../limiter/limiter.js';
import type { Receipt } from '../limiter/receipts.js';
import type { Duration } from '../core/duration.js';
import { takeDelayed } from './delayed-take.js';
import type { ConcurrencyLimiter, Lease } from '../limiter/concurrency.js';
import { leaseOrRefund } from '../limiter/lease-cascade.js';
import { earlierCharge, rememberCharge } from './charged-once.js';
import { FailureReports } from './failure-reports.js';
import { headerToken, readGuardOptions, type CountOnly, type ErrorReportDetails } from './guard-options.js';
import type { HeaderStyle, HeaderValues } from './headers.js';
import {
  admittedHeaders,
  deniedResponse,
  errorResponse,
  limitedResponse,
  type HttpResponse,
  type ProblemOptions,
} from './problem.js';

/**
 * A key with what else the request's identity decided (see `resolveIdentity`): an API key's own
 * limit, and the mode sent as `X-Auth-Mode`.
 *
 * @example
 * const spec: KeySpec = { key: 'key:3f9a', limit: 10_000, authMode: 'key' };
 */
export interface KeySpec {
  /** The bucket key: build it with the key helpers (`ipKey`, `compositeKey`, `pseudonymousKey`). */
  key: string;
  /**
   * This request's limit instead of the rule's, e.g. an API key's daily limit: a count for rules
   * counted per window (calendar quotas, fixed and sliding windows), the rate for a token bucket.
   */
  limit?: number;
  /** This request's token-bucket period instead of the rule's, e.g. `"1m"` (a plan's tier). */
  period?: Duration;
  /** This request's token-bucket burst instead of the rule's (a plan's tier). */
  burst?: number;
  /** Sent as `X-Auth-Mode` on every response of this limit: `anon`, `session` or `key`. */
  authMode?: string;
}

/**
 * What a key function returns: one key for every limit, or one per limit in order.
 *
 * @example
 * const key = (req: IncomingMessage): KeyResult => [ipKey(clientAddress(req).address), `user:${userId(req)}`];
 */
export type KeyResult = string | KeySpec | readonly (string | KeySpec)[];

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
   * no store. Addresses and CIDR ranges, IPv4 and IPv6 (`"203.0.113.0/24"`, `"2001:db8::/32"`);
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

export type { CountOnly, ErrorReportDetails } from './guard-options.js';

/**
 * What a guard reads of a request itself: its method, its path, whether it is a CORS preflight.
 * An adapter computes them from its framework's request.
 *
 * @default `preflight` false
 * @example
 * const facts: RequestFacts = { method: req.method, path: pathOf(req.url), preflight: isPreflight(req.method, req.headers['access-control-request-method']) };
 */
export interface RequestFacts {
  method: string;
  /** The full path as received (no query needed; see `pathOf`); normalized for `exclude`. */
  path: string;
  /** True for an `OPTIONS` request with `Access-Control-Request-Method` (see `isPreflight`). @default false */
  preflight?: boolean;
  /**
   * True when the request carries an `Origin` header, as every request a browser sends from a
   * page on another origin does. An admitted response lists its rate-limit headers in
   * `Access-Control-Expose-Headers` only then: that page needs the list to read them, and no
   * other client reads it, so other requests are spared the bytes. A refusal lists them always.
   *
   * @default true (an adapter that does not tell keeps the list on every admitted response)
   */
  hasOrigin?: boolean;
  /**
   * Aborts when the client goes away: a guard in delay mode ({@link Guard.delays}) then gives
   * the request's reservations back. Adapters pass it only to such a guard.
   */
  signal?: AbortSignal;
}

/**
 * True for a CORS preflight: `OPTIONS` with an `Access-Control-Request-Method` header.
 *
 * @default false for a missing method
 * @example
 * isPreflight(req.method, req.headers['access-control-request-method'])
 */
export function isPreflight(method: string | undefined, requestMethodHeader: unknown): boolean {
  return method === 'OPTIONS' && requestMethodHeader !== undefined && requestMethodHeader !== null;
}

/**
 * What to do with a request: continue with these headers (set them on the response that follows),
 * or answer with this response and go no further. `decisions` are the limits' own, for logging
 * or metrics.
 *
 * @example
 * if (outcome.action === 'respond') return send(outcome.response);
 * for (const [name, value] of Object.entries(outcome.headers)) res.setHeader(name, value);
 */
export type GuardOutcome =
  | ({ readonly action: 'continue'; readonly headers: HeaderValues } & RequestRateLimit)
  | ({ readonly action: 'respond'; readonly response: HttpResponse } & RequestRateLimit);

/**
 * What the limit decided for an admitted request, as the adapters put it on the request:
 * Express `req.rateLimit`, Fastify `request.rateLimit`, Hono `c.get('rateLimit')`, node
 * `rateLimitOf(req)`. It is the guard's outcome itself, so other fields may be present.
 *
 * @example
 * const remaining = Math.min(...req.rateLimit.decisions.map((d) => d.remaining));
 */
export interface RequestRateLimit {
  /** The decisions of the limits asked, in order (none for a request the limit left alone). */
  readonly decisions: readonly Decision[];
  /**
   * With `countOnly`, what each limit charged this request, settled by the adapter once the
   * response is ended; empty otherwise, and on responses the limit sent itself. A receipt
   * holds the key: never log it.
   */
  readonly receipts: readonly Receipt[];
  /**
   * The lease of a concurrency limit ending the limits, held while the request runs: the adapter
   * releases it when the response finishes or the connection closes (through `settle`).
   */
  readonly lease?: Lease;
}

/**
 * True when an admitted request has something to settle once its response is done: receipts
 * under `countOnly`, or a concurrency limit's lease. Adapters wait for the response's end only
 * then.
 *
 * @example
 * if (needsSettling(outcome)) settleOnClose(res, outcome, guard);
 */
export function needsSettling(outcome: RequestRateLimit): boolean {
  return outcome.receipts.length > 0 || outcome.lease !== undefined;
}

/**
 * A route limit, framework-free: adapters call `check` and copy the outcome. Made by
 * {@link createGuard}.
 *
 * @example
 * const outcome = await guard.check(ctx, { method: ctx.method, path: ctx.path });
 */
export interface Guard<Request> {
  /**
   * Decides for a request; never rejects (a failure becomes a problem response). `request` must
   * be the framework's object of this one request: a bucket is charged once per request object.
   */
  check(request: Request, facts: RequestFacts): Promise<GuardOutcome>;
  /**
   * The same decision as {@link Guard.check}, returned as it is when nothing had to be waited
   * for (limits on a synchronous store such as memory, a key function and a `skip` that return
   * plain values, no delay mode), otherwise as a native `Promise` (whatever thenable the key or
   * `skip` returned) that never rejects. An adapter on a hot path uses it to spare every request
   * a promise and a turn of the event loop's microtask queue.
   */
  decide(request: Request, facts: RequestFacts): GuardOutcome | Promise<GuardOutcome>;
  /**
   * Reports an error that happened while an adapter wrote the outcome, through `onError` (at most
   * once a minute, like the guard's own). Never throws.
   */
  report(error: unknown): void;
  /**
   * Settles an admitted request once its response is ended or its connection closed: releases
   * its lease, and under `countOnly` refunds the charges of a request that does not count.
   * `status` is the response's status, or undefined when the connection closed before the
   * response was ended. Adapters call it once per outcome that {@link needsSettling}; it does
   * nothing for another. Never throws: a refund or release that fails is reported through
   * `onError`; a receipt the application settled itself is left alone.
   */
  settle(outcome: RequestRateLimit, status: number | undefined): void;
  /**
   * True for a guard in delay mode: its `check` may wait, and reads `facts.signal` to learn that
   * the client went away (an adapter makes one only then).
   */
  readonly delays: boolean;
}

const noReceipts: readonly Receipt[] = Object.freeze([]);
const untouched: GuardOutcome = Object.freeze({
  action: 'continue',
  headers: Object.freeze({}),
  decisions: Object.freeze([]),
  receipts: noReceipts,
});
const untouchedPromise = Promise.resolve(untouched);
/**
 * The answer to a request whose client went away while it waited for a slot: nginx's 499, which
 * no client reads; nothing was charged.
 */
const clientGone: GuardOutcome = Object.freeze({
  action: 'respond',
  response: Object.freeze({ status: 499, headers: Object.freeze({ 'Cache-Control': 'no-store' }), body: '' }),
  decisions: Object.freeze([]),
  receipts: noReceipts,
});

/** An outcome of the guard itself: decided before any rule, so nothing else is known. */
function guardEvent(outcome: DecisionOutcome): DecisionEvent {
  return Object.freeze({
    rule: undefined,
    outcome,
    store: undefined,
    cost: 0,
    remaining: 0,
    retryAfterMs: 0,
    storeLatencyMs: 0,
    keyHash: undefined,
  });
}
// The same three values every time: reporting them allocates nothing.
const deniedEvent = guardEvent('denied');
const allowedEvent = guardEvent('allowed-by-list');
const skippedEvent = guardEvent('skipped');

/**
 * Builds a framework-free route limit. Adapters (`sluice/node`, `sluice/express`,
 * `sluice/fastify`, `sluice/hono`) wrap it; use it directly for another framework. Its `check`
 * never rejects: whatever fails between the key step and the response becomes a problem response.
 *
 * @default see {@link RateLimitOptions} for each option's default
 * @example
 * const guard = createGuard({ limits: general, key: (req) => sessionUserKey(req), methods: ['POST', 'PUT', 'PATCH', 'DELETE'] });
 * const outcome = await guard.check(req, { method: req.method, path: url.pathname });
 */
export function createGuard<Request>(options: RateLimitOptions<Request>): Guard<Request> {
  const settings = readGuardOptions(options);
  const { limiters, cascade, cost, methods, excluded, chargePreflight, headers, problem, cacheControl } =
    settings;
  const concurrency = settings.concurrency;
  const key = options.key;
  const count =
    (limiters?.length ?? (cascade as Cascade).limiters.length) + (concurrency === undefined ? 0 : 1);
  const reports = new FailureReports(settings.clock);
  // A limit in shadow mode is invisible to clients: its decisions (all admitted) send no headers.
  const shadowNames = new Set(
    (limiters ?? (cascade as Cascade).limiters).filter((l) => l.mode === 'shadow').map((l) => l.name),
  );
  const enforcing = (decisions: Decision[]): Decision[] =>
    shadowNames.size === 0 ? decisions : decisions.filter((d) => !shadowNames.has(d.name));

  // Limits on synchronous stores (memory) decide without a promise per take: the hot path.
  const syncLimiters =
    limiters !== undefined && concurrency === undefined && limiters.every(isSyncLimiter)
      ? (limiters as readonly SyncLimiter[])
      : undefined;
  const syncCascade =
    cascade !== undefined && typeof (cascade as SyncCascade).takeSync === 'function'
      ? (cascade as SyncCascade)
      : undefined;
  const { maxWait } = settings;
  const sync = maxWait === undefined && (syncLimiters !== undefined || syncCascade !== undefined);
  const unitsOf = (request: Request): number =>
    typeof cost === 'function' ? (cost as (request: Request) => number)(request) : cost;
  const { countOnly } = settings;
  const limiterByName = new Map((limiters ?? []).map((l) => [l.name, l]));

  /** Reports a 500 at most once a minute; a reporter that throws is not the request's problem. */
  const report = (error: unknown): void => {
    try {
      const failures = reports.count();
      if (failures !== undefined) settings.onError(error, { failures });
    } catch {
      // Logging must not turn one failure into another: the response is already decided.
    }
  };

  const failed = (error: unknown, extra: HeaderValues | undefined, decisions: Decision[]): GuardOutcome => {
    const response = errorResponse(error, extra, cacheControl);
    if (response.status === 500) report(error);
    return { action: 'respond', response, decisions, receipts: noReceipts };
  };

  /** A refund the store could not make; one the application made itself first is no failure. */
  const refundFailed = (error: unknown): void => {
    if (!isSluiceError(error, 'SLUICE_ARGUMENT')) report(error);
  };

  const refund = (receipt: Receipt): void => {
    const limiter = limiterByName.get(receipt.rule);
    if (limiter === undefined) return;
    if (isSyncLimiter(limiter)) {
      try {
        (limiter as SyncLimiter).refundSync(receipt);
      } catch (error) {
        refundFailed(error);
      }
      return;
    }
    limiter.refund(receipt).catch(refundFailed);
  };

  const settle = (outcome: RequestRateLimit, status: number | undefined): void => {
    const lease = outcome.lease;
    if (lease !== undefined && concurrency !== undefined) concurrency.release(lease).catch(refundFailed);
    const receipts = outcome.receipts;
    if (countOnly === undefined || receipts.length === 0) return;
    const failedResponse = status === undefined || status >= 400;
    if (failedResponse === (countOnly === 'failed')) return;
    for (const receipt of receipts) refund(receipt);
  };

  const concluded = (
    decisions: Decision[],
    extra: HeaderValues | undefined,
    receipts: readonly Receipt[] | undefined,
    exposed: boolean,
    lease?: Lease,
  ): GuardOutcome => {
    for (const decision of decisions) {
      if (!decision.allowed) {
        return {
          action: 'respond',
          response: limitedResponse(enforcing(decisions), {
            headers,
            problem,
            extraHeaders: extra,
            cacheControl,
          }),
          decisions,
          // Nothing to settle: a refusal charged nothing, and the refused request does not go on.
          receipts: noReceipts,
        };
      }
    }
    const admitted: GuardOutcome = {
      action: 'continue',
      headers: admittedHeaders(enforcing(decisions), headers, extra, exposed),
      decisions,
      receipts: receipts ?? noReceipts,
    };
    return lease === undefined ? admitted : { ...admitted, lease };
  };

  /** Takes from limits on synchronous stores; a bucket this request was charged by already is not charged again. */
  const decideSync = (request: Request, result: KeyResult | undefined, exposed: boolean): GuardOutcome => {
    const decisions: Decision[] = [];
    const receipts: Receipt[] | undefined = countOnly === undefined ? undefined : [];
    let extra: HeaderValues | undefined;
    try {
      const specs = keySpecs(result, count);
      extra = authModeHeader(specs[0]!);
      const units = unitsOf(request);
      if (syncCascade !== undefined) {
        const keys = keysOf(specs);
        const id = cascadeId(keys);
        let decided = earlierCharge(request, syncCascade, id) as readonly Decision[] | undefined;
        if (decided === undefined) {
          decided = syncCascade.takeSync(keys, { cost: units }).decisions;
          rememberCharge(request, syncCascade, id, decided);
        }
        decisions.push(...decided);
      } else {
        for (let i = 0; i < syncLimiters!.length; i++) {
          const limiter = syncLimiters![i]!;
          const spec = specs[i]!;
          let decision = earlierCharge(request, limiter, spec.key) as Decision | undefined;
          if (decision === undefined) {
            if (receipts === undefined) decision = limiter.takeSync(spec.key, takeOptions(units, spec));
            else {
              const taken = limiter.takeWithReceiptSync(spec.key, takeOptions(units, spec));
              decision = taken.decision;
              if (taken.receipt !== undefined) receipts.push(taken.receipt);
            }
            rememberCharge(request, limiter, spec.key, decision);
          }
          decisions.push(decision);
          if (!decision.allowed) break;
        }
      }
      return concluded(decisions, extra, receipts, exposed);
    } catch (error) {
      return failed(error, extra, decisions);
    }
  };

  /** Takes from limits on any store, one awaited take at a time (first refusal stops). */
  const decideAsync = async (
    request: Request,
    result: KeyResult | undefined | Promise<KeyResult | undefined>,
    exposed: boolean,
  ): Promise<GuardOutcome> => {
    const decisions: Decision[] = [];
    const receipts: Receipt[] | undefined = countOnly === undefined ? undefined : [];
    // With a concurrency limit every rate take keeps its receipt, to be refunded if the lease is refused.
    const taken: Receipt[] | undefined = concurrency === undefined ? receipts : (receipts ?? []);
    let lease: Lease | undefined;
    let extra: HeaderValues | undefined;
    try {
      const specs = keySpecs(await result, count);
      extra = authModeHeader(specs[0]!);
      const units = unitsOf(request);
      if (cascade !== undefined) {
        const keys = keysOf(specs);
        const id = cascadeId(keys);
        let decided = earlierCharge(request, cascade, id) as readonly Decision[] | undefined;
        if (decided === undefined) {
          decided = (await cascade.take(keys, { cost: units })).decisions;
          rememberCharge(request, cascade, id, decided);
        }
        decisions.push(...decided);
      } else {
        for (let i = 0; i < limiters!.length; i++) {
          const limiter = limiters![i]!;
          const spec = specs[i]!;
          let decision = earlierCharge(request, limiter, spec.key) as Decision | undefined;
          if (decision === undefined) {
            if (taken === undefined) decision = await limiter.take(spec.key, takeOptions(units, spec));
            else {
              const answer = await limiter.takeWithReceipt(spec.key, takeOptions(units, spec));
              decision = answer.decision;
              if (answer.receipt !== undefined) taken.push(answer.receipt);
            }
            rememberCharge(request, limiter, spec.key, decision);
          }
          decisions.push(decision);
          if (!decision.allowed) break;
        }
        if (concurrency !== undefined && !decisions.some((d) => !d.allowed)) {
          const answer = await leaseOrRefund(concurrency, specs[count - 1]!.key, taken!, refund);
          decisions.push(answer.decision);
          lease = answer.lease;
        }
      }
      return concluded(decisions, extra, receipts, exposed, lease);
    } catch (error) {
      return failed(error, extra, decisions);
    }
  };

  /**
   * Delay mode: every limit reserves its slot, the request waits for the latest (see
   * delayed-take.ts); a client that left is answered 499, which nobody reads.
   */
  const decideDelayed = async (
    request: Request,
    result: KeyResult | undefined | Promise<KeyResult | undefined>,
    signal: AbortSignal | undefined,
    exposed: boolean,
  ): Promise<GuardOutcome> => {
    let extra: HeaderValues | undefined;
    try {
      const specs = keySpecs(await result, count);
      extra = authModeHeader(specs[0]!);
      const units = unitsOf(request);
      if (units === 0) return decideAsync(request, specs, exposed);
      const calls = limiters!.map((limiter, i) => {
        const spec = specs[i]!;
        const key = spec.key;
        return {
          limiter,
          key,
          options: takeOptions(units, spec),
          earlier: earlierCharge(request, limiter, key) as Decision | undefined,
        };
      });
      const taken = await takeDelayed(calls, units, maxWait!, signal);
      if (taken.gone) return clientGone;
      calls.forEach((call, i) => {
        const decision = taken.decisions[i];
        if (decision?.allowed === true && call.earlier === undefined)
          rememberCharge(request, call.limiter, call.key, decision);
      });
      return concluded(taken.decisions, extra, countOnly === undefined ? undefined : taken.receipts, exposed);
    } catch (error) {
      return failed(error, extra, []);
    }
  };

  /** False for requests this limit leaves alone: other methods, excluded routes, preflights. */
  const applies = (facts: RequestFacts): boolean => {
    if (facts.preflight === true && !chargePreflight) return false;
    if (methods === undefined && excluded === undefined) return true;
    const method = typeof facts.method === 'string' ? facts.method.toUpperCase() : '';
    if (methods !== undefined && !methods.has(method)) return false;
    return excluded === undefined || !excluded.matches(method, facts.path);
  };

  const { deny, allow, skip, events } = settings;
  const address = settings.address as ((request: Request) => unknown) | undefined;
  const denied: GuardOutcome = {
    action: 'respond',
    response: deniedResponse(cacheControl),
    decisions: [],
    receipts: noReceipts,
  };
  const deniedPromise = Promise.resolve(denied);

  const emit = (event: DecisionEvent): void => {
    if (events !== undefined && events.listening) events.emit(event);
  };

  /** The request after the lists and skip: methods, exclude and preflight, then the key. */
  const limit = (request: Request, facts: RequestFacts): GuardOutcome | Promise<GuardOutcome> => {
    try {
      if (!applies(facts)) return untouched;
      const result = key(request);
      const exposed = facts.hasOrigin !== false;
      if (maxWait !== undefined) return decideDelayed(request, result, facts.signal, exposed);
      return sync && !isThenable(result)
        ? decideSync(request, result, exposed)
        : decideAsync(request, result, exposed);
    } catch (error) {
      return failed(error, undefined, []);
    }
  };

  /** A skip that throws or rejects is no skip: the request is limited, and the error reported. */
  const skipFailed = (
    request: Request,
    facts: RequestFacts,
    error: unknown,
  ): GuardOutcome | Promise<GuardOutcome> => {
    report(error);
    return limit(request, facts);
  };

  const skipped = (): GuardOutcome => {
    emit(skippedEvent);
    return untouched;
  };

  const decide = (request: Request, facts: RequestFacts): GuardOutcome | Promise<GuardOutcome> => {
    if (address !== undefined && (deny !== undefined || allow !== undefined)) {
      let client: unknown;
      try {
        client = address(request);
        if (typeof client === 'object' && client !== null) {
          throw new SluiceError(
            'SLUICE_CONFIG',
            'rateLimit address must return the address as text (it returned an object, maybe a promise)',
          );
        }
      } catch (error) {
        return failed(error, undefined, []);
      }
      // Deny first: an address on both lists is denied.
      if (deny !== undefined && deny.has(client as string | undefined)) {
        emit(deniedEvent);
        return denied;
      }
      if (allow !== undefined && allow.has(client as string | undefined)) {
        emit(allowedEvent);
        return untouched;
      }
    }
    if (skip !== undefined) {
      let answer: unknown;
      try {
        answer = (skip as (request: Request) => unknown)(request);
      } catch (error) {
        return skipFailed(request, facts, error);
      }
      if (isThenable(answer)) {
        // Adopted into a native promise: adapters tell a waiting outcome by `instanceof Promise`.
        return Promise.resolve(answer).then(
          (value) => (value === true ? skipped() : limit(request, facts)),
          (error: unknown) => skipFailed(request, facts, error),
        );
      }
      if (answer === true) return skipped();
    }
    return limit(request, facts);
  };

  return {
    check(request, facts) {
      const outcome = decide(request, facts);
      if (isThenable(outcome)) return outcome;
      // The outcomes that are always the same have their promise made once.
      if (outcome === untouched) return untouchedPromise;
      return outcome === denied ? deniedPromise : Promise.resolve(outcome);
    },
    decide,
    report,
    settle,
    delays: maxWait !== undefined,
  };
}

function isThenable(value: unknown): value is Promise<unknown> {
  return (
    typeof value === 'object' && value !== null && typeof (value as Promise<unknown>).then === 'function'
  );
}

function isSyncLimiter(limiter: Limiter): boolean {
  return typeof (limiter as SyncLimiter).takeSync === 'function';
}

function keysOf(specs: readonly KeySpec[]): string[] {
  return specs.map((s) => s.key);
}

/** One string for a cascade's list of keys, unambiguous whatever the keys hold. */
function cascadeId(keys: readonly string[]): string {
  return JSON.stringify(keys);
}

/** `X-Auth-Mode` for a key spec that names one; a value that is not a token is a developer error. */
function authModeHeader(spec: KeySpec): HeaderValues | undefined {
  const mode = spec.authMode;
  if (mode === undefined) return undefined;
  if (typeof mode !== 'string' || !headerToken.test(mode)) {
    // The type only: the value came from the key step and may carry request data.
    throw new SluiceError(
      'SLUICE_CONFIG',
      `the key function returned an authMode that is not a header token (a ${typeof mode}); use "anon", "session" or "key"`,
    );
  }
  return { 'X-Auth-Mode': mode };
}

/** The take options of one key; none for the default cost of 1, to spare an object per request. */
function takeOptions(units: number, spec: KeySpec): TakeOptions | undefined {
  const { limit, period, burst } = spec;
  if (period !== undefined || burst !== undefined) return { cost: units, limit, period, burst };
  if (limit !== undefined) return { cost: units, limit };
  return units === 1 ? undefined : { cost: units };
}

function keySpecs(result: KeyResult | undefined, count: number): KeySpec[] {
  if (Array.isArray(result)) {
    if (result.length !== count) {
      throw new SluiceError(
        'SLUICE_ARGUMENT',
        `the key function returned ${result.length} keys for ${count} limits`,
      );
    }
    return result.map(toSpec);
  }
  const spec = toSpec(result);
  return count === 1 ? [spec] : Array.from({ length: count }, () => spec);
}

function toSpec(value: unknown): KeySpec {
  if (typeof value === 'string') return { key: value };
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'key' in value)
    return value as KeySpec;
  if (value === undefined || value === null) {
    throw new SluiceError(
      'SLUICE_KEY_MISSING',
      'the key function returned no key: a developer error, never a pass',
    );
  }
  throw new SluiceError('SLUICE_KEY_INVALID', 'the key function returned something that is not a key');
}
