/**
 * `sluice/koa`: rate limits as Koa 3 middleware.
 *
 * @example
 * import Koa from 'koa';
 * import { rateLimit } from 'sluice/koa';
 * const app = new Koa();
 * app.use(rateLimit({ limits: writes, key: (ctx) => ipKey(clientAddress(ctx.req).address), methods: ['POST'] }));
 *
 * @module sluice/koa
 */
import type { Context, Middleware } from 'koa';
import type { Decision } from '../../core/decision.js';
import { withSocketAddress } from '../shared/socket-address.js';
import { createGuard, isPreflight, type RequestFacts, type RequestRateLimit } from '../../http/guard.js';
import type { HeaderValues } from '../../http/headers.js';
import {
  errorResponse,
  limitedResponse,
  type HttpResponse,
  type LimitedResponseOptions,
} from '../../http/problem.js';
import { pathOf } from '../../http/path.js';
import { EXPOSE_HEADER, mergeExposed } from '../../http/merge-exposed.js';
import { finishOnClose } from '../node/response.js';

import type { RateLimitInput } from '../../http/quick-options.js';
export type { RateLimitOptions, KeySpec, KeyResult, ErrorReportDetails } from '../../http/guard.js';
export type { QuickRateLimitOptions, RateLimitInput } from '../../http/quick-options.js';
export type { CountOnly, RequestRateLimit } from '../../http/guard.js';

declare module 'koa' {
  interface DefaultState {
    /**
     * What the last sluice limit this request passed decided for it: its decisions, and with
     * `countOnly` its receipts. Set on admitted requests only.
     */
    rateLimit?: RequestRateLimit;
  }
}

/**
 * Koa middleware for a limit: an admitted request gets its rate-limit headers and goes on
 * (`await next()`); anything else is answered here (429, 400, 401, 500, 503) and `next` is not
 * called. It never reads the body, so put it before a body parser. The key function receives
 * Koa's `Context`; `exclude` routes are matched against the full path (`ctx.originalUrl`), also
 * in a mounted sub-app. A request that passes the same limit twice (app level and route level)
 * is charged once. Errors of later middleware pass through to Koa untouched. An admitted request
 * carries what the limit decided as `ctx.state.rateLimit` (and {@link rateLimitOf}); with
 * `countOnly` it is finished when its response closes (a client that went away first counts as
 * failed).
 *
 * @default every method, draft headers (see {@link RateLimitOptions})
 * @example
 * router.post('/api/messages', rateLimit({ limits: messages, key: (ctx) => userKey(ctx) }), postMessage);
 */
export function rateLimit(options: RateLimitInput<Context>): Middleware {
  // Built once: options are checked here, at setup, not on the first request.
  const guard = createGuard(withSocketAddress(options, (ctx) => ctx.req));
  return async (ctx, next) => {
    const outcome = await guard.check(ctx, factsOf(ctx));
    try {
      if (outcome.action === 'respond') return send(ctx, outcome.response);
      setHeaders(ctx, outcome.headers);
      ctx.state.rateLimit = outcome;
      finishOnClose(ctx.res, outcome, guard);
    } catch (error) {
      // Answered here rather than thrown: Koa's own error response would carry the message.
      guard.report(error);
      try {
        if (!ctx.headerSent) send(ctx, errorResponse(error));
      } catch {
        // Nothing more can be written to this response.
      }
      return;
    }
    // Outside the try: errors of later middleware are theirs, and Koa handles them as usual.
    await next();
  };
}

/**
 * What the last limit a request passed decided for it (its decisions, and with `countOnly` its
 * receipts), or undefined before any limit admitted it; the same object as
 * `ctx.state.rateLimit`.
 *
 * @example
 * ctx.set('X-Remaining', String(rateLimitOf(ctx)?.decisions[0]?.remaining ?? ''));
 */
export function rateLimitOf(ctx: Context): RequestRateLimit | undefined {
  return ctx.state.rateLimit;
}

/**
 * Answers with the 429 for refused decision(s), e.g. after `await login.take(key)` in a route.
 *
 * @default draft headers
 * @example
 * const decision = await login.take(loginKey);
 * if (!decision.allowed) return sendRateLimited(ctx, decision);
 */
export function sendRateLimited(
  ctx: Context,
  decisions: Decision | readonly Decision[],
  options?: LimitedResponseOptions,
): void {
  send(ctx, limitedResponse(decisions, options));
}

/**
 * Answers with the problem response for an error a limit threw (400, 401, 500, 503); a 500
 * never carries the error's message.
 *
 * @default 500 for anything that is not a SluiceError
 * @example
 * try { decision = await login.take(key); } catch (error) { return sendError(ctx, error); }
 */
export function sendError(ctx: Context, error: unknown): void {
  send(ctx, errorResponse(error));
}

/**
 * The facts a guard reads. `originalUrl`, not `path`: a mounted sub-app sees its `path` without
 * the mount prefix, and `exclude` routes are written as full paths.
 */
function factsOf(ctx: Context): RequestFacts {
  return {
    method: ctx.method,
    path: pathOf(ctx.originalUrl),
    // From the raw headers: ctx.get() answers '' for a missing header, which is not "absent".
    preflight: isPreflight(ctx.method, ctx.req.headers['access-control-request-method']),
    hasOrigin: ctx.req.headers.origin !== undefined,
  };
}

function setHeaders(ctx: Context, headers: HeaderValues): void {
  for (const name in headers) {
    const value = headers[name] as string;
    // A CORS layer may have exposed its own headers already: add ours to its list.
    ctx.set(name, name === EXPOSE_HEADER ? mergeExposed(ctx.response.get(name), value) : value);
  }
}

function send(ctx: Context, response: HttpResponse): void {
  // Headers first: Koa only picks a Content-Type for a string body when none is set yet.
  setHeaders(ctx, response.headers);
  ctx.status = response.status;
  ctx.body = response.body;
}
