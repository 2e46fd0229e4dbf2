/**
 * The request filters of a guard: which methods it limits and which routes it leaves to their own
 * rule. Both are read once at setup; per request they cost a set lookup (and, for `exclude`, one
 * path normalization).
 */
import { configError } from '../core/errors.js';
import { normalizePath } from './path.js';

const methodName = /^[A-Za-z]+$/;
/** `METHOD /path` or `METHOD /path/*`, printable ASCII without spaces. */
const routeText = /^([A-Za-z]+) (\/[\x21-\x7e]*)$/;

/**
 * The methods a guard limits, upper case. `GET` brings `HEAD`: frameworks answer a HEAD with the
 * GET handler, so a read budget that left HEAD out would let the same work through uncharged.
 *
 * @default undefined (every method) when `methods` is undefined
 * @example
 * parseMethods(['get', 'POST']) // Set { 'GET', 'POST', 'HEAD' }
 */
export function parseMethods(methods: unknown): ReadonlySet<string> | undefined {
  if (methods === undefined) return undefined;
  if (!Array.isArray(methods) || methods.length === 0) {
    throw configError('rateLimit methods', 'a non-empty array of HTTP method names', methods);
  }
  const set = new Set<string>();
  for (const method of methods) {
    if (typeof method !== 'string' || !methodName.test(method))
      throw configError('rateLimit methods', 'HTTP method names such as "POST"', method);
    set.add(method.toUpperCase());
  }
  if (set.has('GET')) set.add('HEAD');
  return set;
}

/**
 * Routes left out of a limit, as `"METHOD /path"` (that path exactly, in any spelling that
 * {@link normalizePath} makes equal) or `"METHOD /path/*"` (that path and everything below it).
 * A `GET` route covers `HEAD` too.
 *
 * @example
 * new RouteSet(['GET /health/*']).matches('HEAD', '/Health/live/') // true
 */
export class RouteSet {
  private readonly exact = new Set<string>();
  /** Method to path prefixes, each without its trailing slash ("" for the root). */
  private readonly prefixes = new Map<string, string[]>();

  constructor(routes: unknown) {
    if (!Array.isArray(routes)) {
      throw configError('rateLimit exclude', 'an array of routes written as "METHOD /path"', routes);
    }
    for (const route of routes) this.add(route);
  }

  get size(): number {
    return this.exact.size + this.prefixes.size;
  }

  /** True when the request (method upper case, path as received) is one of these routes. */
  matches(method: string, path: string): boolean {
    const normal = normalizePath(path);
    if (this.exact.has(`${method} ${normal}`)) return true;
    const prefixes = this.prefixes.get(method);
    if (prefixes === undefined) return false;
    for (const prefix of prefixes) {
      if (normal === prefix || normal.startsWith(`${prefix}/`) || prefix === '') return true;
    }
    return false;
  }

  private add(route: unknown): void {
    const parts = typeof route === 'string' ? routeText.exec(route) : null;
    const written = parts?.[2];
    const star = written?.indexOf('*') ?? -1;
    const badStar = star !== -1 && (star !== written!.length - 1 || !written!.endsWith('/*'));
    if (parts === null || written === undefined || badStar) {
      throw configError(
        'rateLimit exclude',
        'routes written as "METHOD /path" or "METHOD /path/*" (ASCII; percent-encode other characters)',
        route,
      );
    }
    const method = parts[1]!.toUpperCase();
    const methods = method === 'GET' ? ['GET', 'HEAD'] : [method];
    if (star === -1) {
      const path = normalizePath(written);
      for (const m of methods) this.exact.add(`${m} ${path}`);
      return;
    }
    const base = normalizePath(written.slice(0, -2) || '/');
    const prefix = base === '/' ? '' : base;
    for (const m of methods) {
      const list = this.prefixes.get(m) ?? [];
      list.push(prefix);
      this.prefixes.set(m, list);
    }
  }
}
