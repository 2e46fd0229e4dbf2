/**
 * What the schema cannot say of the gateway's upstreams: that `upstream` and `upstreams` are not
 * both given, that each URL can be reached, that each host names one, and that no two routes
 * share a name or take the same requests (one of them would never be chosen).
 */
import { normalizePath } from '../../http/path.js';
import type { PolicyFile } from './file-types.js';
import { normalizeHost } from './host.js';
import type { PolicyIssue } from './errors.js';

type Path = readonly (string | number)[];

const UNREACHABLE = 'must be a URL whose host and port can be reached (a port is at most 65535)';

/** The problems of the file's `upstream` and `upstreams`, each at its place. */
export function upstreamProblems(
  file: PolicyFile,
  issue: (path: Path, what: string) => PolicyIssue,
): PolicyIssue[] {
  const found: PolicyIssue[] = [];
  if (file.upstream !== undefined && !URL.canParse(file.upstream))
    found.push(issue(['upstream'], UNREACHABLE));
  if (file.upstream !== undefined && file.upstreams !== undefined)
    found.push(issue(['upstreams'], 'cannot be given with upstream: write that upstream as one more route'));
  const names = new Map<string, number>();
  const taken = new Map<string, number>();
  (file.upstreams ?? []).forEach((route, i) => {
    if (!URL.canParse(route.url)) found.push(issue(['upstreams', i, 'url'], UNREACHABLE));
    const host = route.host === undefined ? '' : normalizeHost(route.host);
    if (host === undefined) found.push(issue(['upstreams', i, 'host'], 'names no host'));
    const named = names.get(route.name);
    if (named !== undefined)
      found.push(
        issue(['upstreams', i, 'name'], `repeats the name of upstreams[${named}]: route names are unique`),
      );
    else names.set(route.name, i);
    const requests = `${host ?? ''} ${normalizePath(route.pathPrefix ?? '/')}`;
    const same = taken.get(requests);
    if (same !== undefined)
      found.push(
        issue(
          ['upstreams', i],
          `takes the same host and path prefix as upstreams[${same}]: it would never be chosen`,
        ),
      );
    else taken.set(requests, i);
  });
  return found;
}
