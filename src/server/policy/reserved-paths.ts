/**
 * The paths the server answers itself (its API, health, metrics, OpenAPI document, dashboard),
 * and the rules of a gateway that would never see their requests: with the server's own paths
 * on the main listener (`server.admin: main`), a request for one of them is the server's and is
 * never forwarded, so a gateway rule written for it (`/v1/*` of the application) limits nothing.
 * `sluice check` and `sluice serve` warn of each such pattern; it is not an error, since the
 * operator may mean it.
 */
import { normalizePath } from '../../http/path.js';
import type { Policy } from './model.js';

/** The server's own paths without anything below them, in the one spelling of normalizePath. */
const ownPaths = new Set(['/healthz', '/readyz', '/metrics', '/openapi.json', '/v1', '/dashboard']);

/**
 * True when a path (already in the one spelling of normalizePath) is one the server answers
 * itself: `/v1` and `/dashboard` and below, the health endpoints, `/metrics`, `/openapi.json`.
 */
export function isOwnPath(path: string): boolean {
  return ownPaths.has(path) || path.startsWith('/v1/') || path.startsWith('/dashboard/');
}

/** A rule's path pattern that names only paths the server answers itself on the same listener. */
export interface ReservedPathOverlap {
  /** Where the pattern is: `['rules', 2, 'match', 'paths', 0]`. */
  readonly path: readonly (string | number)[];
  /** What is wrong, said after the place. */
  readonly what: string;
}

/**
 * The gateway rules' path patterns whose paths the server keeps for itself on the main listener.
 * A pattern is read by one path it names, its stars and a final `/**` filled in (`/v1/*` names
 * `/v1/x`): a pattern that reaches beyond the server's own paths (`/**`, `/*`) is not reported.
 */
export function reservedPathOverlaps(policy: Policy): ReservedPathOverlap[] {
  if (policy.upstreams.length === 0 || policy.server.admin !== 'main') return [];
  const found: ReservedPathOverlap[] = [];
  policy.rules.forEach((rule, i) =>
    (rule.match.paths ?? []).forEach((pattern, j) => {
      if (!isOwnPath(namedPath(pattern))) return;
      found.push({
        path: ['rules', i, 'match', 'paths', j],
        what: `(rule ${JSON.stringify(rule.name)}) names paths the server answers itself on the same listener (server.admin: main): no such request reaches the upstream, nor this rule; leave server.admin out to give the server's own paths a listener of their own`,
      });
    }),
  );
  return found;
}

/** One path a pattern names, in the one spelling the rules read paths in. */
function namedPath(pattern: string): string {
  const base = pattern.endsWith('/**') ? pattern.slice(0, -3) || '/' : pattern;
  return normalizePath(base.replaceAll('*', 'x'));
}
