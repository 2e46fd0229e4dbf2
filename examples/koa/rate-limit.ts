/**
 * Rate limits as Koa 3 middleware, written the way an adapter for any framework is: over
 * `sluice/http` alone, which decides and computes every response. All this file does is read a
 * request's facts and copy header values and responses onto Koa's context. It passes the same
 * HTTP conformance suite as sluice's own adapters (koa.test.ts).
 */
import type { Context, Middleware } from 'koa';
import type { Decision } from '../../src/index.js';
import {
  EXPOSE_HEADER,
  createGuard,
  errorResponse,
  isPreflight,
  limitedResponse,
  mergeExposed,
  pathOf,
  type HeaderValues,
  type HttpResponse,
  type LimitedResponseOptions,
  type RateLimitOptions,
  type RequestFacts,
} from '../../src/http/index.js';

/**
 * Koa middleware for a limit: an admitted request gets its rate-limit headers and goes on
 * (`await next()`); anything else is answered here (429, 400, 401, 500, 503) and `next` is not
 * called. It never reads the body, so put it before a body parser. The key function receives
 * Koa's `Context`. A request that passes the same limit twice (app level and route level) is
 * charged once: the guard remembers its decisions per context object.
 *
 * @default every method, draft headers (see `RateLimitOptions`)
 * @example
 * app.use(rateLimit({ limits: writes, key: (ctx) => ipKey(ctx.ip), methods: ['POST'] }));
 */
export function rateLimit(options: RateLimitOptions<Context>): Middleware {
  // Built once: options are checked here, at setup, not on the first request.
  const guard = createGuard(options);
  return async (ctx, next) => {
    const outcome = await guard.check(ctx, factsOf(ctx));
    try {
      if (outcome.action === 'respond') return send(ctx, outcome.response);
      setHeaders(ctx, outcome.headers);
    } catch (error) {
      // Answered here rather than thrown: Koa's own error response would carry the message.
      guard.report(error);
      if (!ctx.headerSent) send(ctx, errorResponse(error));
      return;
    }
    // Outside the try: errors of later middleware are theirs, and Koa handles them as usual.
    await next();
  };
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
  };
}

function setHeaders(ctx: Context, headers: HeaderValues): void {
  for (const name in headers) {
    const value = headers[name]!;
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
