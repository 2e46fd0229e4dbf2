/**
 * `sluice/fetch`: rate limits over the Fetch API, for every server that hands you a `Request`
 * and takes a `Response` back: `Bun.serve`, `Deno.serve`, a Cloudflare Worker's `fetch`,
 * Next.js middleware and route handlers.
 *
 * @example
 * import { rateLimit } from 'sluice/fetch';
 * const limit = rateLimit({ limits: perIp, key: (request) => ipKey(clientAddressOf(request)) });
 * Deno.serve(limit.wrap((request) => new Response('hello')));
 *
 * @module sluice/fetch
 */
import type { Decision } from '../../core/decision.js';
import {
  createGuard,
  isPreflight,
  needsFinishing,
  type GuardOutcome,
  type RequestRateLimit,
} from '../../http/guard.js';
import type { HeaderValues } from '../../http/headers.js';
import { EXPOSE_HEADER, mergeExposed } from '../../http/merge-exposed.js';
import { pathOf } from '../../http/path.js';
import {
  errorResponse,
  limitedResponse,
  type HttpResponse,
  type LimitedResponseOptions,
} from '../../http/problem.js';
import { recordPeer, withPeerAddress, type PeerInfo } from './peer.js';
import { keepAdmitted, stateOf, takeAdmitted } from './state.js';
import { finishingBody } from './finishing-body.js';

import type { RateLimitInput } from '../../http/quick-options.js';
export type { RateLimitOptions, KeySpec, KeyResult, ErrorReportDetails } from '../../http/guard.js';
export type { QuickRateLimitOptions, RateLimitInput } from '../../http/quick-options.js';
export type { CountOnly, RequestRateLimit } from '../../http/guard.js';
export { clientAddressOf, type PeerInfo } from './peer.js';

/**
 * A limit over the Fetch API, made by {@link rateLimit}. Call it with a request: it resolves to
 * the `Response` to send instead (429, 403, 400, 401, 500, 503), or `undefined` when the request
 * may go on; then pass your handler's response through {@link FetchLimit.finish}, which adds the
 * rate-limit headers. {@link FetchLimit.wrap} does both around a handler.
 *
 * @example
 * const refused = await limit(request, { address: '203.0.113.7' });
 * if (refused) return refused;
 * return limit.finish(request, await handle(request));
 */
export interface FetchLimit {
  (request: Request, info?: PeerInfo): Promise<Response | undefined>;
  /**
   * The handler's response with this limit's rate-limit headers added (its
   * `Access-Control-Expose-Headers` merged, not replaced). A response whose headers cannot be
   * changed (one from `fetch`) is copied first. With `countOnly`, the request is finished when
   * the response's body has been sent, by its status, or as failed when the client went away
   * first. Returns the response as it is for a request this limit did not admit. Never throws.
   */
  finish(request: Request, response: Response): Response;
  /**
   * A handler limited by this limit, with the same arguments: the second one is read for the
   * peer address when it is a {@link PeerInfo} (Deno's `info`, Bun's `server`). An error the
   * handler throws passes through, and finishes a `countOnly` request as failed.
   */
  wrap<Rest extends unknown[]>(
    handler: (request: Request, ...rest: Rest) => Response | Promise<Response>,
  ): (request: Request, ...rest: WrappedRest<Rest>) => Promise<Response>;
}

/** A wrapped handler's arguments after the request: the handler's own, or a peer if it takes none. */
export type WrappedRest<Rest extends unknown[]> = Rest extends [] ? [info?: PeerInfo] : Rest;

/**
 * A route limit for the Fetch API. The key function receives the `Request`; read the client
 * address with {@link clientAddressOf}. `allow` and `deny` match the client address found from
 * the peer address you pass (`info`) behind your `proxies`, as the node adapters do from the
 * socket; pass an `address` function instead where the platform names the client (a Worker's
 * `CF-Connecting-IP`). The limit never reads the body, and never rejects.
 *
 * @default every method, draft headers; `proxies` trusts loopback only (see {@link RateLimitOptions})
 * @example
 * const limit = rateLimit({ limits: writes, key: (request) => ipKey(clientAddressOf(request)), methods: ['POST'] });
 * export default { fetch: limit.wrap(app) };
 */
export function rateLimit(options: RateLimitInput<Request>): FetchLimit {
  const guard = createGuard(withPeerAddress(options));
  /** The limit's answer: a response, or undefined to go on; without a promise when nothing waited. */
  const admit = (
    request: Request,
    info: PeerInfo | undefined,
  ): Response | undefined | Promise<Response | undefined> => {
    recordPeer(request, info);
    const method = request.method;
    const outcome = guard.decide(request, {
      method,
      path: pathOf(request.url),
      // Only an OPTIONS request can be a preflight: other requests' preflight header is not read.
      preflight:
        method === 'OPTIONS' && isPreflight(method, request.headers.get('access-control-request-method')),
      hasOrigin: request.headers.has('origin'),
      signal: guard.delays ? request.signal : undefined,
    });
    return outcome instanceof Promise
      ? outcome.then((decided) => answer(request, decided))
      : answer(request, outcome);
  };

  const answer = (request: Request, outcome: GuardOutcome): Response | undefined => {
    if (outcome.action === 'respond') return toResponse(outcome.response);
    // Per limit: a request that passes two limits carries each one's headers and receipts.
    keepAdmitted(request, limit, outcome);
    return undefined;
  };

  const limit = async (request: Request, info?: PeerInfo): Promise<Response | undefined> =>
    admit(request, info);

  const finish = (request: Request, response: Response): Response => {
    const outcome = takeAdmitted(request, limit);
    if (outcome === undefined) return response;
    try {
      let out = withHeaders(response, outcome.headers);
      if (needsFinishing(outcome)) out = finishingBody(out, (status) => guard.finish(outcome, status));
      return out;
    } catch (error) {
      guard.report(error);
      guard.finish(outcome, undefined);
      return response;
    }
  };

  const wrap = <Rest extends unknown[]>(
    handler: (request: Request, ...rest: Rest) => Response | Promise<Response>,
  ) => {
    return async (request: Request, ...rest: WrappedRest<Rest>): Promise<Response> => {
      let refused = admit(request, rest[0] as PeerInfo | undefined);
      if (refused instanceof Promise) refused = await refused;
      if (refused !== undefined) return refused;
      let response: Response;
      try {
        response = await handler(request, ...(rest as Rest));
      } catch (error) {
        const outcome = takeAdmitted(request, limit);
        if (outcome !== undefined) guard.finish(outcome, undefined);
        throw error;
      }
      return finish(request, response);
    };
  };

  return Object.assign(limit, { finish, wrap });
}

/**
 * What the last sluice limit this request passed decided for it: its decisions, and with
 * `countOnly` its receipts. Undefined before any limit admitted it.
 *
 * @example
 * const remaining = rateLimitOf(request)?.decisions[0]?.remaining;
 */
export function rateLimitOf(request: Request): RequestRateLimit | undefined {
  return stateOf(request)?.last;
}

/**
 * The 429 `Response` for refused decision(s), e.g. after `await login.take(key)` in a handler.
 *
 * @default draft headers
 * @example
 * const d = await login.take(loginKey);
 * if (!d.allowed) return sendRateLimited(d);
 */
export function sendRateLimited(
  decisions: Decision | readonly Decision[],
  options?: LimitedResponseOptions,
): Response {
  return toResponse(limitedResponse(decisions, options));
}

/**
 * The problem `Response` for an error a limit threw (400, 401, 500, 503); a 500 never carries
 * the error's message.
 *
 * @default 500 for anything that is not a SluiceError
 * @example
 * try { d = await login.take(key); } catch (error) { return sendError(error); }
 */
export function sendError(error: unknown): Response {
  return toResponse(errorResponse(error));
}

function toResponse(http: HttpResponse): Response {
  return new Response(http.body, { status: http.status, headers: http.headers });
}

/** The response with `headers` set on it, or on a copy when its own headers are immutable. */
function withHeaders(response: Response, headers: HeaderValues): Response {
  let out = response;
  // Read once: a runtime may build the Headers object on each read of `headers` (Bun does).
  let target = out.headers;
  for (const name in headers) {
    const value = headers[name] as string;
    const merged = name === EXPOSE_HEADER ? mergeExposed(target.get(name), value) : value;
    try {
      target.set(name, merged);
    } catch {
      // A response from fetch() or Response.redirect() has immutable headers: set them on a copy.
      out = new Response(out.body, out);
      target = out.headers;
      target.set(name, merged);
    }
  }
  return out;
}
