/**
 * The one spelling of a request target that the gateway both matches and forwards. http-proxy-3
 * builds the upstream's path with the WHATWG URL parser, which turns `\` into `/`, resolves `.`
 * and `..` segments (`%2e` included) and percent-encodes a few characters; rules that read the
 * target as the client wrote it saw `/api\login` while the upstream got `/api/login`. So the
 * gateway parses the target once, as the proxy would, forwards exactly that, and lets the rules
 * read the same text.
 */

/** The base the proxy resolves an origin-form target against (only its path is kept). */
const BASE = 'http://base.invalid';
/** An encoded `/` or `\` in a path: one application decodes it to a separator, another not. */
const encodedSeparator = /%(?:2f|5c)/i;
/**
 * A target the URL parser gives back unchanged: a path of characters it never rewrites, with no
 * `//` at its start and no segment starting with a dot (so no dot segment), and a query of
 * characters it never encodes. Most targets are such, and cost no parse.
 */
const plainTarget = /^\/(?![/.])(?:[\w\-~!$&'()*+,;=:@]|\/(?!\.)|\.)*(?:\?[\w\-.~!$&()*+,;=:@/?%]+)?$/;

/**
 * The path and query forwarded for a request target, as http-proxy-3 would write them: parsed
 * by the WHATWG URL parser (an absolute-form target gives its path and query). Parsing this text
 * again gives it back unchanged, so what the upstream receives is what the rules read.
 *
 * @returns undefined for a target with no single reading, which the gateway refuses (400):
 *   one that does not parse, has no path starting with `/`, or writes `/` or `\` encoded
 *   (`%2F`, `%5C`) in its path, which some applications decode into a separator before routing
 *   and others do not.
 * @example
 * forwardedTarget('/x/..\\API\\login?next=/') // '/API/login?next=/'
 * forwardedTarget('/api%2Flogin') // undefined
 */
export function forwardedTarget(target: string | undefined): string | undefined {
  if (target === undefined || target === '') return '/';
  if (plainTarget.test(target)) return target;
  let url: URL;
  try {
    // `//host/x` is a path here, as the proxy reads it, never another host.
    url = new URL(target.startsWith('//') ? `${BASE}${target}` : target, BASE);
  } catch {
    return undefined;
  }
  const path = url.pathname;
  if (path.charCodeAt(0) !== 0x2f /* / */ || encodedSeparator.test(path)) return undefined;
  return url.search === '' ? path : `${path}${url.search}`;
}
