/**
 * `sluice/fastify`: rate limits as Fastify 5 `onRequest` hooks, per route or as a plugin.
 *
 * @example
 * import Fastify from 'fastify';
 * import { rateLimit, rateLimitPlugin } from 'sluice/fastify';
 * const app = Fastify();
 * app.post('/login', { onRequest: rateLimit({ limits: perIp, key: (req) => ipKey(req.ip) }) }, login);
 * await app.register(rateLimitPlugin, { limits: general, key: (req) => ipKey(req.ip) });
 *
 * @module sluice/fastify
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Decision } from '../../core/decision.js';
import { withSocketAddress } from '../shared/socket-address.js';
import {
  createGuard,
  isPreflight,
  type Guard,
  type GuardOutcome,
  type RequestRateLimit,
} from '../../http/guard.js';
import type { HeaderValues } from '../../http/headers.js';
import {
  errorResponse,
  limitedResponse,
  type HttpResponse,
  type LimitedResponseOptions,
} from '../../http/problem.js';
import { pathOf } from '../../http/path.js';
import { EXPOSE_HEADER, mergeExposed } from '../../http/merge-exposed.js';
import { closeSignal, finishOnClose } from '../node/response.js';

import type { RateLimitInput } from '../../http/quick-options.js';
export type { RateLimitOptions, KeySpec, KeyResult, ErrorReportDetails } from '../../http/guard.js';
export type { QuickRateLimitOptions, RateLimitInput } from '../../http/quick-options.js';
export type { CountOnly, RequestRateLimit } from '../../http/guard.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * What the last sluice limit this request passed decided for it: its decisions, and with
     * `countOnly` its receipts. Set on admitted requests; `null` before (the plugin declares it).
     */
    rateLimit: RequestRateLimit | null;
  }
}

/** The request property the plugin declares (Fastify keeps requests of one shape when declared). */
const REQUEST_PROPERTY = 'rateLimit';

/**
 * An `onRequest` hook for a limit. Use it per route (`{ onRequest: rateLimit(...) }`) or for a
 * whole context (`app.addHook('onRequest', rateLimit(...))`). `onRequest` runs before the body
 * is read. An admitted request gets its rate-limit headers; anything else is answered here
 * (429, 400, 401, 500, 503) and the route handler does not run. The key function receives the
 * `FastifyRequest`; `exclude` routes are matched against the URL path without its query (a
 * `GET` route covers the `HEAD` Fastify answers with it). A request that passes the same limit
 * twice is charged once. An admitted request carries what the limit decided as
 * `request.rateLimit`; with `countOnly` it is finished when its response closes. Used without
 * {@link rateLimitPlugin}, declare the property once for Fastify's fast path:
 * `app.decorateRequest('rateLimit', null)`.
 *
 * @default every method, draft headers (see {@link RateLimitOptions})
 * @example
 * app.post('/api/messages', { onRequest: rateLimit({ limits: messages, key: (req) => userKey(req) }) }, handler);
 */
export function rateLimit(options: RateLimitInput<FastifyRequest>): RateLimitHook {
  const guard = createGuard(withSocketAddress(options, (request) => request.raw));
  return function rateLimitHook(request, reply, done) {
    const method = request.method;
    const headers = request.headers;
    const outcome = guard.decide(request, {
      method,
      path: pathOf(request.url),
      preflight: isPreflight(method, headers['access-control-request-method']),
      hasOrigin: headers.origin !== undefined,
      signal: guard.delays ? closeSignal(reply.raw) : undefined,
    });
    if (outcome instanceof Promise) {
      return outcome.then((decided) => {
        apply(guard, request, reply, decided);
      });
    }
    // Decided without waiting (a memory store): Fastify goes on when `done` is called, without a
    // promise; a reply sent here stops it, so `done` is called only for an admitted request.
    if (apply(guard, request, reply, outcome) && done !== undefined) done();
    return done === undefined ? resolved : undefined;
  };
}

/**
 * The `onRequest` hook {@link rateLimit} makes. Fastify calls it with `done`: it calls `done` when
 * it decided at once, and returns a promise (and leaves `done` alone) when it had to wait. Called
 * without `done`, it always returns a promise, resolved once the outcome is on the reply.
 */
export type RateLimitHook = (
  request: FastifyRequest,
  reply: FastifyReply,
  done?: (error?: Error) => void,
) => Promise<void> | undefined;

const resolved = Promise.resolve();

/** Copies an outcome onto the reply; true when the request goes on. Never throws. */
function apply(
  guard: Pick<Guard<never>, 'report' | 'finish'>,
  request: FastifyRequest,
  reply: FastifyReply,
  outcome: GuardOutcome,
): boolean {
  try {
    if (outcome.action === 'continue') {
      setHeaders(reply, outcome.headers);
      request.rateLimit = outcome;
      finishOnClose(reply.raw, outcome, guard);
      return true;
    }
    // A sent reply stops Fastify before the body is parsed and before the handler.
    send(reply, outcome.response);
  } catch (error) {
    // Answered here rather than thrown: Fastify's own 500 would carry the error's message.
    guard.report(error);
    try {
      if (!reply.sent) send(reply, errorResponse(error));
    } catch {
      // Nothing more can be written to this reply.
    }
  }
  return false;
}

/**
 * A Fastify plugin applying a limit to every route of the context it is registered in and of its
 * children (it is not encapsulated, like `fastify-plugin` would make it). It declares the request
 * decorator `request.rateLimit`. Register it in an
 * encapsulated child (`app.register(async (api) => { await api.register(rateLimitPlugin, …) })`)
 * to limit only that child's routes.
 *
 * @default every method, draft headers (see {@link RateLimitOptions})
 * @example
 * await app.register(rateLimitPlugin, { limits: writes, key: (req) => ipKey(req.ip), methods: ['POST'] });
 */
export async function rateLimitPlugin(
  instance: FastifyInstance,
  options: RateLimitInput<FastifyRequest>,
): Promise<void> {
  // Fastify hands a plugin its register options too (prefix, logLevel, …): keep only ours.
  const {
    prefix: _prefix,
    logLevel: _logLevel,
    logSerializers: _logSerializers,
    ...own
  } = options as RateLimitInput<FastifyRequest> & Record<'prefix' | 'logLevel' | 'logSerializers', unknown>;
  const hook = rateLimit(own);
  // Declared once per context: a second plugin (another limit) finds it there already.
  if (!instance.hasRequestDecorator(REQUEST_PROPERTY)) instance.decorateRequest(REQUEST_PROPERTY, null);
  instance.addHook('onRequest', hook);
}
// Without encapsulation the hook reaches the registering context, what fastify-plugin would do
// (set here so that the adapter needs no runtime dependency).
Object.assign(rateLimitPlugin, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'sluice',
});

/**
 * Sends the 429 for refused decision(s), e.g. after `await login.take(key)` in a handler; returns
 * the reply so that an async handler can `return` it.
 *
 * @default draft headers
 * @example
 * const d = await login.take(loginKey);
 * if (!d.allowed) return sendRateLimited(reply, d);
 */
export function sendRateLimited(
  reply: FastifyReply,
  decisions: Decision | readonly Decision[],
  options?: LimitedResponseOptions,
): FastifyReply {
  return send(reply, limitedResponse(decisions, options));
}

/**
 * Sends the problem response for an error a limit threw (400, 401, 500, 503); a 500 never
 * carries the error's message. Returns the reply.
 *
 * @default 500 for anything that is not a SluiceError
 * @example
 * try { d = await login.take(key); } catch (error) { return sendError(reply, error); }
 */
export function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  return send(reply, errorResponse(error));
}

function setHeaders(reply: FastifyReply, headers: HeaderValues): void {
  for (const name in headers) {
    const value = headers[name] as string;
    reply.header(name, name === EXPOSE_HEADER ? mergeExposed(reply.getHeader(name), value) : value);
  }
}

function send(reply: FastifyReply, http: HttpResponse): FastifyReply {
  setHeaders(reply, http.headers);
  // A Buffer, because Fastify appends "; charset=utf-8" to the Content-Type of a string payload,
  // and every adapter sends the same `application/problem+json`.
  return reply.code(http.status).send(Buffer.from(http.body));
}
