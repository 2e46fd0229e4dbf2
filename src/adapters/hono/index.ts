/**
 * `sluice/hono`: rate limits as Hono 4 middleware.
 *
 * @example
 * import { Hono } from 'hono';
 * import { rateLimit } from 'sluice/hono';
 * const app = new Hono();
 * app.use('/api/*', rateLimit({ limits: writes, key: (c) => userKey(c), methods: ['POST'] }));
 *
 * @module sluice/hono
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Decision } from '../../core/decision.js';
import { createGuard, isPreflight, needsFinishing, type RequestRateLimit } from '../../http/guard.js';
import type { HeaderValues } from '../../http/headers.js';
import {
  errorResponse,
  limitedResponse,
  type HttpResponse,
  type LimitedResponseOptions,
} from '../../http/problem.js';
import { pathOf } from '../../http/path.js';
import { EXPOSE_HEADER, mergeExposed } from '../../http/merge-exposed.js';
import { finishOnClose, type ClosingResponse } from '../node/response.js';
import { isQuick, type RateLimitInput } from '../../http/quick-options.js';
import type { ClientAddressInput } from '../../keys/client-address.js';
import { withSocketAddress } from '../shared/socket-address.js';

export type { RateLimitOptions, KeySpec, KeyResult, ErrorReportDetails } from '../../http/guard.js';
export type { QuickRateLimitOptions, RateLimitInput } from '../../http/quick-options.js';
export type { CountOnly, RequestRateLimit } from '../../http/guard.js';

/**
 * The context variables the middleware sets, for an app that lists its variables:
 * `new Hono<{ Variables: RateLimitVariables }>()`. Every `c.get('rateLimit')` is typed anyway.
 */
export interface RateLimitVariables {
  /**
   * What the last sluice limit this request passed decided for it: its decisions, and with
   * `countOnly` its receipts. Set on admitted requests only.
   */
  rateLimit: RequestRateLimit | undefined;
}

declare module 'hono' {
  interface ContextVariableMap {
    /** See {@link RateLimitVariables}. */
    rateLimit: RequestRateLimit | undefined;
  }
}

/**
 * Hono middleware for a limit: an admitted request gets its rate-limit headers and goes on
 * (`await next()`); anything else is answered here (429, 400, 401, 500, 503). It never reads the
 * body. The key function receives Hono's `Context`; `exclude` routes are matched against
 * the request URL's path as the client wrote it. A request that passes the same limit twice is
 * charged once. Errors of later middleware and handlers pass through untouched. An admitted
 * request carries what the limit decided as `c.get('rateLimit')`. With `countOnly`, under
 * `@hono/node-server` the request is finished when its response closes (a client that went away
 * mid-body counts as failed); elsewhere when the handlers have returned their response, by its
 * status (as failed if the request's signal aborted).
 *
 * @default every method, draft headers (see {@link RateLimitOptions})
 * @example
 * app.post('/api/messages', rateLimit({ limits: messages, key: (c) => userKey(c) }), (c) => c.json({ ok: true }));
 */
export function rateLimit(options: RateLimitInput<Context>): MiddlewareHandler {
  // The one-line form keys by the client address: read from the peer the runtime hands Hono.
  const guard = createGuard(isQuick(options) ? withSocketAddress(options, addressInput) : options);
  return async (c, next) => {
    const method = c.req.method;
    const outcome = await guard.check(c, {
      method,
      path: pathOf(c.req.url),
      preflight: isPreflight(method, c.req.header('access-control-request-method')),
      hasOrigin: c.req.header('origin') !== undefined,
      // Aborted by the runtime when the client goes away (@hono/node-server, Bun, Deno).
      signal: guard.delays ? c.req.raw.signal : undefined,
    });
    try {
      if (outcome.action === 'respond') return send(c, outcome.response);
      setHeaders(c, outcome.headers);
    } catch (error) {
      guard.report(error);
      const failure = errorResponse(error);
      return c.body(failure.body, 500, failure.headers);
    }
    c.set('rateLimit', outcome);
    if (!needsFinishing(outcome)) return next();
    const outgoing = nodeResponseOf(c);
    if (outgoing !== undefined) {
      finishOnClose(outgoing, outcome, guard);
      return next();
    }
    try {
      await next();
    } catch (error) {
      guard.finish(outcome, undefined);
      throw error;
    }
    guard.finish(outcome, c.req.raw.signal?.aborted === true ? undefined : c.res.status);
  };
}

/** The `node:http` response under `@hono/node-server` (its `c.env.outgoing`), when there is one. */
function nodeResponseOf(c: Context): ClosingResponse | undefined {
  const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing as ClosingResponse | undefined;
  return typeof outgoing === 'object' &&
    outgoing !== null &&
    typeof outgoing.once === 'function' &&
    'writableEnded' in outgoing
    ? outgoing
    : undefined;
}

/**
 * The 429 response for refused decision(s), e.g. after `await login.take(key)` in a handler.
 *
 * @default draft headers
 * @example
 * const d = await login.take(loginKey);
 * if (!d.allowed) return sendRateLimited(c, d);
 */
export function sendRateLimited(
  c: Context,
  decisions: Decision | readonly Decision[],
  options?: LimitedResponseOptions,
): Response {
  return send(c, limitedResponse(decisions, options));
}

/**
 * The problem response for an error a limit threw (400, 401, 500, 503); a 500 never carries the
 * error's message.
 *
 * @default 500 for anything that is not a SluiceError
 * @example
 * try { d = await login.take(key); } catch (error) { return sendError(c, error); }
 */
export function sendError(c: Context, error: unknown): Response {
  return send(c, errorResponse(error));
}

function send(c: Context, http: HttpResponse): Response {
  // Through c.header, not c.body's headers argument: when a middleware returns the response,
  // Hono copies the headers already on `c.res` over it, which would undo our merged expose list.
  setHeaders(c, http.headers);
  // Hono types statuses as a literal union; ours (400, 401, 429, 500, 503) all carry a body.
  return c.body(http.body, http.status as 429);
}

function setHeaders(c: Context, headers: HeaderValues): void {
  for (const name in headers) {
    const value = headers[name] as string;
    c.header(name, name === EXPOSE_HEADER ? mergeExposed(c.res.headers.get(EXPOSE_HEADER), value) : value);
  }
}

/**
 * The client address input of a Hono request, from what its runtime puts in `c.env`: the node
 * request under @hono/node-server (`incoming`), Deno's handler info (`remoteAddr`), Bun's server
 * (`requestIP`); no peer elsewhere (Workers: pass `key`, e.g. from `CF-Connecting-IP`).
 */
function addressInput(c: Context): ClientAddressInput {
  const env = c.env as
    | {
        incoming?: { socket?: { remoteAddress?: string } };
        remoteAddr?: { hostname?: unknown };
        requestIP?: (request: Request) => { address?: unknown } | null | undefined;
      }
    | undefined;
  const request = c.req.raw;
  try {
    if (env?.incoming?.socket !== undefined) return { socket: env.incoming.socket, headers: request.headers };
    const hostname = env?.remoteAddr?.hostname;
    if (typeof hostname === 'string') return { request, peer: hostname };
    const address = typeof env?.requestIP === 'function' ? env.requestIP(request)?.address : undefined;
    if (typeof address === 'string') return { request, peer: address };
  } catch {
    // A runtime object that throws when asked knows no peer.
  }
  return { request, peer: undefined };
}
