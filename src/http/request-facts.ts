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
