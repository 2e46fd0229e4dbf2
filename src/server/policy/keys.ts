import { optionError } from '../../core/errors.js';
import { compositeKey } from '../../keys/composite-key.js';
import { createIpKey } from '../../keys/ip-prefix.js';
import { createPseudonymRing } from '../../keys/pseudonym.js';
import { claimText, type JwtClaims } from './jwt.js';
import type { DecisionRequest } from './request.js';

/** Turns the text a key is made of into the bucket key: an HMAC when the policy has a secret. */
export interface BucketKeys {
  /** The bucket to charge for this text. */
  current(text: string): string;
  /** The buckets this text owns under every secret (current first), to erase them all. */
  all(text: string): string[];
}

/**
 * Keys stored as they are without a secret; with one, as `key:v1:<HMAC>` of the text, so that
 * no address, header value or caller's key reaches the store.
 */
export function bucketKeys(secrets: readonly string[]): BucketKeys {
  if (secrets.length === 0) return { current: (text) => text, all: (text) => [text] };
  const ring = createPseudonymRing({ secrets, purpose: 'sluice:key', prefix: 'key' });
  return { current: (text) => ring.current(text), all: (text) => ring.all(text) };
}

/** What a rule's key parts read besides the request. */
export interface KeyPartOptions {
  ipv6Prefix: number;
  /** The claims of the request's token, for `jwt:<claim>` parts; undefined when the policy has no `clients.jwt`. */
  claims?: ((request: DecisionRequest) => JwtClaims) | undefined;
}

/**
 * A rule's key parts compiled once, as the text of the request's key: the parts joined by
 * `compositeKey`, so that no two tuples share a key. A header, host, cookie, query parameter or
 * claim the request lacks (a token that is invalid or expired has no claims) is a part of its
 * own (`!`), never a skipped rule: leaving a header out must not escape a limit. Every value is
 * only text of the key, which the policy's secret turns into an HMAC like any other part.
 */
export function compileKey(
  parts: readonly string[],
  rule: string,
  options: KeyPartOptions,
): (request: DecisionRequest) => string {
  const ipKeyOf = createIpKey({ ipv6Prefix: options.ipv6Prefix });
  const readers = parts.map((part): ((request: DecisionRequest) => string) => {
    if (part === 'address') return (r) => ipKeyOf(r.address);
    if (part === 'method') return (r) => r.method;
    if (part === 'path') return (r) => r.path;
    if (part === 'route') return () => rule;
    if (part === 'host') return (r) => present(r.host);
    const colon = part.indexOf(':');
    const kind = part.slice(0, colon);
    const name = part.slice(colon + 1);
    if (kind === 'header') {
      const lower = name.toLowerCase();
      return (r) => present(r.headers[lower]);
    }
    if (kind === 'cookie') return (r) => present(cookieOf(r.headers.cookie, name));
    if (kind === 'query') return (r) => present(queryParameter(r.query, name));
    if (kind === 'jwt') {
      const claims = options.claims;
      if (claims === undefined) throw optionError(`${rule} key ${part}`, 'in a policy with clients.jwt');
      return (r) => present(claimText(claims(r), name));
    }
    return () => name;
  });
  return (request) => compositeKey(readers.map((read) => read(request)));
}

/** A value that is there (`=value`, even empty) apart from one that is not (`!`). */
function present(value: string | undefined): string {
  return value === undefined ? '!' : `=${value}`;
}

/**
 * The value of the first cookie of that name in a Cookie header (`a=1; b=2`), as sent: neither
 * unquoted nor decoded, so that what the store holds is what the client wrote.
 */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  let start = 0;
  while (start < header.length) {
    let end = header.indexOf(';', start);
    if (end < 0) end = header.length;
    const equals = header.indexOf('=', start);
    if (equals >= 0 && equals < end && header.slice(start, equals).trim() === name)
      return header.slice(equals + 1, end).trim();
    start = end + 1;
  }
  return undefined;
}

/** The first value of a query parameter, decoded as forms are (`+` is a space). */
function queryParameter(query: string | undefined, name: string): string | undefined {
  if (query === undefined || query === '') return undefined;
  return new URLSearchParams(query).get(name) ?? undefined;
}
