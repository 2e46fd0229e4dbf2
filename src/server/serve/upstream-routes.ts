/**
 * The gateway's routes: which upstream takes a request, by its host and path. A route with a
 * host is chosen before one without; among those, the longest path prefix that holds the path.
 * Both are compared in the rules' one spelling (a host without port or case, a path as
 * normalizePath writes it), so a route and a rule always agree on what a request is.
 */
import { normalizePath } from '../../http/path.js';
import type { UpstreamModel } from '../policy/model.js';

/** A route, ready to forward to. */
export interface UpstreamRoute {
  readonly name: string;
  readonly target: URL;
}

interface Entry extends UpstreamRoute {
  readonly host: string | undefined;
  /** The prefix in the one spelling, without a final `/` (`` for the root: every path). */
  readonly prefix: string;
}

/** The routes of one policy, in the order they are tried. */
export class UpstreamRoutes {
  private readonly entries: readonly Entry[];

  constructor(models: readonly UpstreamModel[]) {
    const entries = models.map((model) => {
      const prefix = normalizePath(model.pathPrefix);
      return {
        name: model.name,
        target: new URL(model.url),
        host: model.host,
        prefix: prefix === '/' ? '' : prefix,
      };
    });
    // Hosts first, then the longest prefix: the first entry that takes a request is its route.
    this.entries = entries.sort(
      (a, b) =>
        Number(b.host !== undefined) - Number(a.host !== undefined) || b.prefix.length - a.prefix.length,
    );
  }

  /** Every route, to ask each upstream whether it answers. */
  get all(): readonly UpstreamRoute[] {
    return this.entries;
  }

  /**
   * The route of a request: `host` in the rules' spelling (undefined without one), `path`
   * normalized. undefined when no route takes it.
   */
  choose(host: string | undefined, path: string): UpstreamRoute | undefined {
    for (const entry of this.entries) {
      if (entry.host !== undefined && entry.host !== host) continue;
      const { prefix } = entry;
      if (
        prefix === '' ||
        path === prefix ||
        (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 0x2f)
      )
        return entry;
    }
    return undefined;
  }
}
