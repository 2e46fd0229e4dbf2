import { createClientAddress } from '../../keys/client-address.js';
import { normalizePath, pathOf } from '../../http/path.js';
import { normalizeHost } from './host.js';
import type { ClientsModel } from './model.js';

/** A request as a caller describes it to the decision API. */
export interface RequestInput {
  method: string;
  /** The request target's path; its query is read only by `query:<name>` key parts. */
  path: string;
  /** The Host header's value; taken from `headers.host` when left out. */
  host?: string;
  headers?: Record<string, string>;
  /** The TCP peer's address as the caller saw it; proxy headers are read only from trusted peers. */
  address: string;
}

/**
 * A request as the rules see it: method in capitals, path and host in their one spelling
 * (`normalizePath`, `normalizeHost`; a host that is none is undefined), header names in lower case, the client address found behind the trusted proxies. A caller that built the
 * key itself sets `key` (already the bucket key) and leaves the rest empty.
 */
export interface DecisionRequest {
  readonly method: string;
  readonly path: string;
  readonly host: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
  /** The client's address, or undefined when there is none (a caller-built key). */
  readonly address: string | undefined;
  /** The request target's query, without its `?` (`query:<name>` key parts read it); may be left out. */
  readonly query?: string;
  readonly key?: string;
  readonly cost?: number;
}

/** Reads requests the way the policy's `clients` section says. */
export function requestReader(clients: ClientsModel): (input: RequestInput) => DecisionRequest {
  const addressOf = createClientAddress({
    trustedProxies: [...clients.trustedProxies],
    header: clients.proxyHeader,
  });
  return (input) => {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(input.headers ?? {})) headers[name.toLowerCase()] = value;
    const written = input.host ?? headers.host;
    const host = written === undefined ? undefined : normalizeHost(written);
    return {
      method: input.method.toUpperCase(),
      path: normalizePath(pathOf(input.path)),
      query: queryOf(input.path),
      host,
      headers,
      address: addressOf({ peer: input.address, headers }).address,
    };
  };
}

/** The query of a request target: after its first `?`, up to a `#`; empty when it has none. */
function queryOf(target: string): string {
  const mark = target.indexOf('?');
  if (mark < 0) return '';
  const hash = target.indexOf('#', mark);
  return target.slice(mark + 1, hash < 0 ? undefined : hash);
}

/** A caller-built key: no request facts at all. */
export function keyedRequest(key: string, cost: number | undefined): DecisionRequest {
  return { method: '', path: '/', host: undefined, headers: {}, address: undefined, key, cost };
}
