/**
 * `sluice/http`: rate limits for HTTP without a framework. A guard decides for a request and
 * says what to send; problem responses (429, 400, 401, 500, 503) and rate-limit headers are
 * plain values. The adapters (`sluice/node`, `sluice/express`, `sluice/fastify`, `sluice/hono`)
 * are thin copies of these onto their framework's response; use this entry for any other
 * framework, or to answer from a handler that takes from a limiter itself.
 *
 * @example
 * import { createGuard, pathOf } from 'sluice/http';
 * const guard = createGuard({ limits: api, key: () => 'client-1' });
 * const outcome = await guard.check(req, { method: req.method, path: pathOf(req.url) });
 *
 * @module sluice/http
 */
export {
  createGuard,
  isPreflight,
  needsFinishing,
  needsSettling,
  type ErrorReportDetails,
  type Guard,
  type GuardOutcome,
  type KeyResult,
  type KeySpec,
  type RateLimitOptions,
  type RequestFacts,
  type RequestRateLimit,
  type CountOnly,
} from './guard.js';
export {
  admittedHeaders,
  errorResponse,
  limitedResponse,
  problemCodes,
  type HttpResponse,
  type LimitedResponseOptions,
  type ProblemOptions,
} from './problem.js';
export { HEADER_STYLES, rateLimitHeaders, type HeaderStyle, type HeaderValues } from './headers.js';
export { EXPOSE_HEADER, mergeExposed } from './merge-exposed.js';
export { pathOf } from './path.js';
