/**
 * `sluice/express`: rate limits as Express 5 middleware.
 *
 * @example
 * import express from 'express';
 * import { rateLimit } from 'sluice/express';
 * const app = express();
 * app.use(rateLimit({ limits: writes, key: (req) => ipKey(clientAddress(req).address), methods: ['POST'] }));
 * app.post('/api/things', (req, res) => res.json({ ok: true }));
 *
 * @module sluice/express
 */
import type { NextFunction, Request, Response } from 'express';
import type { Decision } from '../../core/decision.js';
import { withSocketAddress } from '../shared/socket-address.js';
import { createGuard, type GuardOutcome, type RequestRateLimit } from '../../http/guard.js';
import { errorResponse, limitedResponse, type LimitedResponseOptions } from '../../http/problem.js';
import { applyNodeOutcome, nodeGuardFacts, sendNodeResponse } from '../node/response.js';
import type { RateLimitInput } from '../../http/quick-options.js';

export type { RateLimitOptions, KeySpec, KeyResult, ErrorReportDetails } from '../../http/guard.js';
export type { CountOnly, RequestRateLimit } from '../../http/guard.js';
export type { QuickRateLimitOptions, RateLimitInput } from '../../http/quick-options.js';

declare global {
  // Express's own way to type what middleware adds to its requests: declaration merging.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /**
       * What the last sluice limit this request passed decided for it: its decisions, and with
       * `countOnly` its receipts. Set on admitted requests only.
       */
      rateLimit?: RequestRateLimit;
    }
  }
}

/**
 * Express middleware for a limit: an admitted request gets its rate-limit headers and goes on
 * (`next()`); anything else is answered here (429, 400, 401, 500, 503) and `next` is not called.
 * It never reads the body: mount it before body parsers for limits that need only the
 * connection or the session. The key function receives Express's `Request`; `exclude` routes are
 * matched against the full path (`req.originalUrl`), also when the middleware is mounted on a
 * path (`app.use('/api', rateLimit(…))`). A request that passes the same limit twice (app level
 * and route level) is charged once. It leaves no rejected promise behind. An admitted request
 * carries what the limit decided as `req.rateLimit`; with `countOnly` it is finished when its
 * response closes.
 *
 * @default every method, draft headers (see {@link RateLimitOptions})
 * @example
 * app.post('/api/messages', rateLimit({ limits: messages, key: (req) => userKey(req) }), postMessage);
 */
export function rateLimit(
  options: RateLimitInput<Request>,
): (request: Request, response: Response, next: NextFunction) => void {
  const guard = createGuard(withSocketAddress(options, (request) => request));
  return (request, response, next) => {
    const outcome = guard.decide(
      request,
      nodeGuardFacts(request, response, guard, request.originalUrl ?? request.url),
    );
    const go = (decided: GuardOutcome) => {
      // The guard never rejects and applying never throws: only a throwing `next` is caught here.
      try {
        if (applyNodeOutcome(request, response, decided, guard)) next();
      } catch (error) {
        guard.report(error);
      }
    };
    // Decided without waiting (a memory store): the next handler runs without a promise between.
    if (outcome instanceof Promise) void outcome.then(go);
    else go(outcome);
  };
}

/**
 * Sends the 429 for refused decision(s), e.g. after `await login.take(key)` in a handler.
 *
 * @default draft headers
 * @example
 * const d = await login.take(loginKey);
 * if (!d.allowed) return sendRateLimited(res, d);
 */
export function sendRateLimited(
  response: Response,
  decisions: Decision | readonly Decision[],
  options?: LimitedResponseOptions,
): void {
  sendNodeResponse(response, limitedResponse(decisions, options));
}

/**
 * Sends the problem response for an error a limit threw (400, 401, 500, 503); a 500 never
 * carries the error's message.
 *
 * @default 500 for anything that is not a SluiceError
 * @example
 * try { d = await login.take(key); } catch (error) { return sendError(res, error); }
 */
export function sendError(response: Response, error: unknown): void {
  sendNodeResponse(response, errorResponse(error));
}
