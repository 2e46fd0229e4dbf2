import type { HeaderValues } from '../http/headers.js';
import type { HttpResponse } from '../http/problem.js';

/** The one header a rate limit adds to rather than replaces: CORS layers set it too (D3). */
export const EXPOSE = 'Access-Control-Expose-Headers';

/**
 * The `Access-Control-Expose-Headers` value after adding ours to what a CORS layer already
 * exposed, so that neither list is lost. Every adapter merges the same way, so that they answer
 * byte for byte alike.
 *
 * @default `ours` when nothing was exposed before
 * @example
 * mergeExposed('X-Request-Id', 'Retry-After') // 'X-Request-Id, Retry-After'
 */
export function mergeExposed(existing: unknown, ours: string): string {
  if (existing === undefined || existing === null || existing === '') return ours;
  return `${Array.isArray(existing) ? existing.join(', ') : String(existing)}, ${ours}`;
}

/** The part of a `node:http` response (and so of an Express one) the adapters write to. */
export interface NodeResponseLike {
  statusCode: number;
  getHeader(name: string): unknown;
  setHeader(name: string, value: string): unknown;
  end(body: string): unknown;
}

/**
 * Copies header values onto a `node:http`-style response, merging the expose list.
 *
 * @example
 * setNodeHeaders(res, { RateLimit: '"api";r=9;t=60' })
 */
export function setNodeHeaders(response: NodeResponseLike, headers: HeaderValues): void {
  for (const name in headers) {
    const value = headers[name] as string;
    response.setHeader(name, name === EXPOSE ? mergeExposed(response.getHeader(name), value) : value);
  }
}

/**
 * Sends a computed response on a `node:http`-style response.
 *
 * @example
 * sendNodeResponse(res, limitedResponse(decision))
 */
export function sendNodeResponse(response: NodeResponseLike, http: HttpResponse): void {
  setNodeHeaders(response, http.headers);
  response.statusCode = http.status;
  response.end(http.body);
}

/**
 * The path of a request target without its query: what `exclude` routes are matched against.
 *
 * @default "/" for a missing target
 * @example
 * pathOf('/api/things?page=2') // '/api/things'
 */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '/';
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}
