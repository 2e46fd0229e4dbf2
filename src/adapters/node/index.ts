/**
 * `sluice/node`: rate limits for plain `node:http` servers.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { rateLimit } from 'sluice/node';
 * const limit = rateLimit({ limits: perIp, key: (req) => ipKey(clientAddress(req).address) });
 * createServer(async (req, res) => {
 *   if (!(await limit(req, res))) return; // a 429, 400, 401, 500 or 503 was sent
 *   res.end('hello');
 * });
 *
 * @module sluice/node
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Decision } from '../../core/decision.js';
import { withSocketAddress } from '../shared/socket-address.js';
import { createGuard, type GuardOutcome, type RequestRateLimit } from '../../http/guard.js';
import { errorResponse, limitedResponse, type LimitedResponseOptions } from '../../http/problem.js';
import {
  applyNodeOutcome,
  nodeGuardFacts,
  sendNodeResponse as send,
  type RateLimitedRequest,
} from './response.js';

import type { RateLimitInput } from '../../http/quick-options.js';
export type { RateLimitOptions, KeySpec, KeyResult, ErrorReportDetails } from '../../http/guard.js';
export type { QuickRateLimitOptions, RateLimitInput } from '../../http/quick-options.js';
export type { CountOnly, RequestRateLimit } from '../../http/guard.js';

/**
 * A route limit for `node:http`: resolves `true` when the request may go on (its rate-limit
 * headers are set, and {@link rateLimitOf} reads what the limit decided), `false` when a
 * response was sent. It never reads the body and never rejects, so an `async` request listener
 * that awaits it leaves no rejected promise behind. With `countOnly`, the request is finished
 * when its response closes.
 */
export function rateLimit(
  options: RateLimitInput<IncomingMessage>,
): (request: IncomingMessage, response: ServerResponse) => Promise<boolean> {
  const guard = createGuard(withSocketAddress(options, (request) => request));
  const apply = (request: IncomingMessage, response: ServerResponse, outcome: GuardOutcome) =>
    applyNodeOutcome(request as RateLimitedRequest, response, outcome, guard);
  return (request, response) => {
    const outcome = guard.decide(request, nodeGuardFacts(request, response, guard));
    if (outcome instanceof Promise) return outcome.then((decided) => apply(request, response, decided));
    // Decided without waiting (a memory store): one of two promises made once, none per request.
    return apply(request, response, outcome) ? goOn : answered;
  };
}

const goOn = Promise.resolve(true);
const answered = Promise.resolve(false);

/**
 * What the last limit a request passed decided for it (its decisions, and with `countOnly` its
 * receipts), or undefined before any limit admitted it. The same object Express has as
 * `req.rateLimit`.
 *
 * @example
 * if (!(await limit(req, res))) return;
 * res.setHeader('X-Remaining', String(rateLimitOf(req)?.decisions[0]?.remaining ?? ''));
 */
export function rateLimitOf(request: IncomingMessage): RequestRateLimit | undefined {
  return (request as RateLimitedRequest).rateLimit;
}

/** Sends the 429 for refused decision(s), e.g. after `await limits.login.take(key)` in a handler. */
export function sendRateLimited(
  response: ServerResponse,
  decisions: Decision | readonly Decision[],
  options?: LimitedResponseOptions,
): void {
  send(response, limitedResponse(decisions, options));
}

/** Sends the problem response for an error a limit threw (400, 401, 500, 503). */
export function sendError(response: ServerResponse, error: unknown): void {
  send(response, errorResponse(error));
}
