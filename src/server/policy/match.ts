import { configError } from '../../core/errors.js';
import { AddressList } from '../../http/address-list.js';
import type { MatchFile } from './file-types.js';
import { normalizeHost } from './host.js';
import { pathPattern } from './path-pattern.js';
import type { DecisionRequest } from './request.js';

/**
 * A rule's `match` compiled once: every condition given must hold. Methods as the guard reads
 * them (GET brings HEAD); paths (and exceptPaths, left out) in the one spelling of `normalizePath`, `*` for a segment or part
 * of one, a final `/**` for everything below; header values exact, `*` for any, `{ absent: true }`
 * for a header the request must not carry.
 */
export function compileMatch(match: MatchFile, option: string): (request: DecisionRequest) => boolean {
  const methods = match.methods === undefined ? undefined : new Set(match.methods);
  if (methods?.has('GET')) methods.add('HEAD');
  const paths = match.paths?.map(pathPattern);
  const except = match.exceptPaths?.map(pathPattern);
  // The rule's host in the spelling requests are read in (`API.example.com.` is `api.example.com`).
  const host = match.host === undefined ? undefined : normalizeHost(match.host);
  if (match.host !== undefined && host === undefined)
    throw configError(
      `${option}.host`,
      'a host name such as api.example.com (a port is ignored)',
      match.host,
    );
  // A header asked to be absent is written `undefined` here: one comparison covers all three forms.
  const headers = Object.entries(match.headers ?? {}).map(
    ([name, value]) => [name.toLowerCase(), typeof value === 'string' ? value : undefined] as const,
  );
  const sources =
    match.sourceCidrs === undefined
      ? undefined
      : new AddressList([...match.sourceCidrs], `${option}.sourceCidrs`);
  return (request) => {
    if (methods !== undefined && !methods.has(request.method)) return false;
    if (paths !== undefined && !paths.some((p) => p.test(request.path))) return false;
    if (except !== undefined && except.some((p) => p.test(request.path))) return false;
    if (host !== undefined && request.host !== host) return false;
    for (const [name, value] of headers) {
      const given = request.headers[name];
      if (value === undefined) {
        if (given !== undefined) return false;
      } else if (given === undefined || (value !== '*' && given !== value)) return false;
    }
    return sources === undefined || sources.has(request.address);
  };
}
