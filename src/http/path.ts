/**
 * One spelling per request path, so that `exclude` routes match however a client writes the path
 * (and every adapter matches alike). Frameworks route several spellings to one handler: Fastify
 * and Hono decode percent-encoding, Express ignores case and a trailing slash. A spelling that
 * reached an excluded route without matching its pattern would be charged twice, by the route's
 * own limit and by the catch-all; so the matcher treats every such spelling as one.
 */

/** A percent-encoded octet. */
const encodedOctet = /%([0-9A-Fa-f]{2})/g;
/** Unreserved characters (RFC 3986 §2.3): encoded or not, they mean the same. */
const unreserved = /^[A-Za-z0-9\-._~]$/;
/** Something segment resolution would change: `//`, a `.` or `..` segment, a trailing slash. */
const irregularSegments = /\/\/|\/\.\.?(?:\/|$)|.\/$|^[^/]/;

/**
 * The path of a request target without its query or fragment. An absolute-form target
 * (`http://host/path`, sent to proxies) gives its path.
 *
 * @default "/" for a missing or empty target
 * @example
 * pathOf('/api/things?page=2') // '/api/things'
 * pathOf('http://127.0.0.1:8080/api?x=1') // '/api'
 */
export function pathOf(target: string | undefined): string {
  if (typeof target !== 'string' || target === '') return '/';
  let start = 0;
  if (target.charCodeAt(0) !== 0x2f /* / */) {
    const scheme = target.indexOf('://');
    if (scheme !== -1) {
      const slash = target.indexOf('/', scheme + 3);
      if (slash === -1) return '/';
      start = slash;
    }
  }
  let end = target.length;
  const query = target.indexOf('?', start);
  if (query !== -1) end = query;
  const fragment = target.indexOf('#', start);
  if (fragment !== -1 && fragment < end) end = fragment;
  return start === 0 && end === target.length ? target : target.slice(start, end);
}

/**
 * The one spelling of a path that `exclude` patterns are compared in:
 * - percent-encoded unreserved characters decoded (`/%68ealth` is `/health`), other escapes kept
 *   (`%2F` is still not a slash);
 * - repeated slashes collapsed, `.` and `..` segments resolved (never above the root), a trailing
 *   slash dropped;
 * - lower case, as Express routes by default; where a framework tells case apart, another case
 *   reaches no handler and costs nothing.
 *
 * @example
 * normalizePath('//API/./v1/../health/') // '/api/health'
 */
export function normalizePath(path: string): string {
  let out = path.includes('%') ? path.replace(encodedOctet, decodeIfUnreserved) : path;
  if (irregularSegments.test(out)) out = resolveSegments(out);
  return out.toLowerCase();
}

function decodeIfUnreserved(escape: string, hex: string): string {
  const char = String.fromCharCode(parseInt(hex, 16));
  return unreserved.test(char) ? char : escape.toUpperCase();
}

/** Removes empty and dot segments (RFC 3986 §5.2.4, plus empty ones) from an absolute path. */
function resolveSegments(path: string): string {
  const kept: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') kept.pop();
    else kept.push(segment);
  }
  return `/${kept.join('/')}`;
}
