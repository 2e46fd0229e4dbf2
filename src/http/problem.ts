import type { Decision } from '../core/decision.js';
import { SluiceError } from '../core/errors.js';
import {
  exposedHeaders,
  headerInteger,
  rateLimitHeaders,
  type HeaderStyle,
  type HeaderValues,
} from './headers.js';

/**
 * A response as plain values; each adapter copies it onto its framework's response.
 *
 * @example
 * const r: HttpResponse = errorResponse(error);
 * res.writeHead(r.status, r.headers).end(r.body);
 */
export interface HttpResponse {
  status: number;
  headers: HeaderValues;
  body: string;
}

/**
 * How the problem body (RFC 9457) of a 429 reads. Its text must not name the user or the key.
 *
 * @default `about:blank`, "Too Many Requests", "Too many requests. Retry after N seconds."
 * @example
 * const problem: ProblemOptions = { type: 'https://catalog.example/problems/write-rate-limit', title: 'Slow down' };
 */
export interface ProblemOptions {
  /**
   * The problem type URI of a 429. With `about:blank` the title is the status phrase.
   * @default "about:blank"
   */
  type?: string;
  /** @default "Too Many Requests" */
  title?: string;
  /** A sentence for people; it must not name the user or the key. @default "Too many requests. Retry after N seconds." */
  detail?: string;
}

/**
 * What shapes a 429 written by {@link limitedResponse} (and each adapter's `sendRateLimited`).
 *
 * @default draft headers, no extra headers, `Cache-Control: no-store`
 * @example
 * limitedResponse(decision, { headers: 'legacy', cacheControl: 'private, no-store' })
 */
export interface LimitedResponseOptions {
  /** Rate-limit header style. @default "draft" */
  headers?: HeaderStyle;
  /** Problem body wording. */
  problem?: ProblemOptions;
  /** Extra headers every rate-limit response carries (e.g. `X-Auth-Mode`). */
  extraHeaders?: HeaderValues;
  /**
   * `Cache-Control` of the 429: it must forbid storing, since a cached refusal would refuse a
   * client who is allowed again. An API that also forbids shared caches answers `private, no-store`.
   * @default "no-store"
   */
  cacheControl?: string;
}

const PROBLEM_TYPE = 'application/problem+json';

/**
 * Machine codes of the problem bodies sluice writes, by status. Clients switch on `code` (a 429
 * is always `rate_limited`) rather than on wording, which a route may change.
 *
 * @example
 * if (body.code === problemCodes[429]) scheduleRetry();
 */
export const problemCodes = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'denied',
  429: 'rate_limited',
  500: 'internal_error',
  503: 'rate_limit_unavailable',
} as const;

const titles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/**
 * The 429 for refused decision(s): `Retry-After` in whole seconds (rounded up, at least 1),
 * `Cache-Control: no-store`, an `application/problem+json` body with `code: "rate_limited"` and
 * the names of the limits that refused, the rate-limit headers of the bucket(s) that decided, and
 * `Access-Control-Expose-Headers` so cross-origin pages can read them. A cost that can never
 * be admitted (larger than the capacity) gets no Retry-After: waiting would not help. Throws
 * `SLUICE_ARGUMENT` when no decision was refused: there is nothing to answer with a 429.
 *
 * @default options: draft headers, `Cache-Control: no-store`
 * @example
 * const d = await login.take(key);
 * if (!d.allowed) { const r = limitedResponse(d); res.writeHead(r.status, r.headers).end(r.body); }
 */
export function limitedResponse(
  decisions: Decision | readonly Decision[],
  options: LimitedResponseOptions = {},
): HttpResponse {
  const list: readonly Decision[] = Array.isArray(decisions) ? decisions : [decisions as Decision];
  const style = options.headers ?? 'draft';
  const refusedBy: string[] = [];
  let retryAfterSeconds = 0;
  for (const decision of list) {
    if (decision.allowed) continue;
    refusedBy.push(decision.name);
    if (decision.retryAfterSeconds > retryAfterSeconds) retryAfterSeconds = decision.retryAfterSeconds;
  }
  if (refusedBy.length === 0)
    throw new SluiceError('SLUICE_ARGUMENT', 'limitedResponse needs at least one refused decision');
  const headers: HeaderValues = {
    'Content-Type': PROBLEM_TYPE,
    'Cache-Control': options.cacheControl ?? 'no-store',
    ...rateLimitHeaders(list, style),
    ...options.extraHeaders,
  };
  const finite = Number.isFinite(retryAfterSeconds);
  if (finite) retryAfterSeconds = Math.max(1, headerInteger(retryAfterSeconds));
  if (finite) headers['Retry-After'] = String(retryAfterSeconds);
  headers['Access-Control-Expose-Headers'] = exposedHeaders(style, extraNames(options.extraHeaders));
  const problem = options.problem ?? {};
  const body = {
    type: problem.type ?? 'about:blank',
    title: problem.title ?? titles[429],
    status: 429,
    detail:
      problem.detail ??
      (finite
        ? `Too many requests. Retry after ${retryAfterSeconds} seconds.`
        : 'This request costs more than the limit allows at once.'),
    code: problemCodes[429],
    limits: refusedBy,
  };
  return { status: 429, headers, body: JSON.stringify(body) };
}

/**
 * The headers an admitted response carries: the rate-limit headers of the bucket(s) that
 * decided, and `Access-Control-Expose-Headers` for them unless `exposed` is false (a request
 * without an `Origin` header: no page on another origin made it). Nothing at all when nothing is
 * sent (style `none` without extra headers, or only fail-open decisions).
 *
 * @default style "draft"; exposed true
 * @example
 * admittedHeaders([decision], 'draft')
 * // { 'RateLimit-Policy': '"api";q=10;w=60', RateLimit: '"api";r=9;t=6',
 * //   'Access-Control-Expose-Headers': 'Retry-After, RateLimit, RateLimit-Policy' }
 */
export function admittedHeaders(
  decisions: Decision | readonly Decision[],
  style: HeaderStyle = 'draft',
  extraHeaders?: HeaderValues,
  exposed = true,
): HeaderValues {
  const headers = rateLimitHeaders(decisions, style);
  if (extraHeaders !== undefined) Object.assign(headers, extraHeaders);
  // Nothing to expose when nothing is sent: style "none", or no bucket decided (fail-open).
  else if (isEmpty(headers)) return headers;
  if (exposed) headers['Access-Control-Expose-Headers'] = exposedHeaders(style, extraNames(extraHeaders));
  return headers;
}

/**
 * The response for an error that escaped a limit: 400 for a bad key from client input, 401 for
 * a refused credential, 503 for a failing store (500 if the rule asks), 500 for a developer error
 * such as a missing key — never a 429 and never a pass. The body never carries the error message
 * of a 500 (it may describe internals); log the error itself. A store that is overloaded (its
 * queue is full: load, not a failure) answers 503 with `Retry-After: 1`, exposed to other origins.
 *
 * @default 500 for anything that is not a `SluiceError`; `Cache-Control: no-store`
 * @example
 * try { d = await login.take(key); } catch (error) { const r = errorResponse(error); res.writeHead(r.status, r.headers).end(r.body); }
 */
export function errorResponse(
  error: unknown,
  extraHeaders?: HeaderValues,
  cacheControl = 'no-store',
): HttpResponse {
  const status = error instanceof SluiceError ? error.status : 500;
  const code = problemCodes[status as keyof typeof problemCodes] ?? problemCodes[500];
  const detail =
    status === 400
      ? 'The request carries a value that cannot identify a client.'
      : status === 401
        ? 'The offered credential was refused.'
        : status === 503
          ? 'Rate limiting is unavailable; try again later.'
          : 'An internal error occurred.';
  const body = { type: 'about:blank', title: titles[status] ?? titles[500], status, detail, code };
  const headers: HeaderValues = {
    'Content-Type': PROBLEM_TYPE,
    'Cache-Control': cacheControl,
    ...extraHeaders,
  };
  if (status === 503 && error instanceof SluiceError && isLoad(error.code)) {
    // Load (a full store queue, or too many calls waiting for a slot) passes within moments; a
    // second is the shortest wait Retry-After can say.
    headers['Retry-After'] = '1';
    headers['Access-Control-Expose-Headers'] = exposedHeaders('none', extraNames(extraHeaders));
  }
  return { status, headers, body: JSON.stringify(body) };
}

/** Codes that mean too much work at once, not a store that fails: worth a retry in a second. */
function isLoad(code: string): boolean {
  return code === 'SLUICE_STORE_OVERLOADED' || code === 'SLUICE_WAIT_QUEUE_FULL';
}

/**
 * The 403 for a client on a route limit's `deny` list: an `application/problem+json` body with
 * `code: "denied"` and the route's `Cache-Control`. It names neither the client nor the list
 * entry that matched, and carries no rate-limit headers: no limit was asked.
 *
 * @default `Cache-Control: no-store`
 * @example
 * const r = deniedResponse();
 * res.writeHead(r.status, r.headers).end(r.body); // 403 {"code":"denied",…}
 */
export function deniedResponse(cacheControl = 'no-store'): HttpResponse {
  return {
    status: 403,
    headers: { 'Content-Type': PROBLEM_TYPE, 'Cache-Control': cacheControl },
    body: deniedBody,
  };
}

const deniedBody = JSON.stringify({
  type: 'about:blank',
  title: titles[403],
  status: 403,
  detail: 'Requests from this client are not accepted.',
  code: problemCodes[403],
});

function isEmpty(headers: HeaderValues): boolean {
  for (const _ in headers) return false;
  return true;
}

function extraNames(extra: HeaderValues | undefined): string[] | undefined {
  return extra === undefined ? undefined : Object.keys(extra);
}
