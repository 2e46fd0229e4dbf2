import { compositeKey } from '../../keys/composite-key.js';
import { createIpKey } from '../../keys/ip-prefix.js';
import { createPseudonymRing } from '../../keys/pseudonym.js';
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

/**
 * A rule's key parts compiled once, as the text of the request's key: the parts joined by
 * `compositeKey`, so that no two tuples share a key. A header or host the request lacks is a
 * part of its own (`!`), never a skipped rule: leaving a header out must not escape a limit.
 */
export function compileKey(
  parts: readonly string[],
  rule: string,
  ipv6Prefix: number,
): (request: DecisionRequest) => string {
  const ipKeyOf = createIpKey({ ipv6Prefix });
  const readers = parts.map((part): ((request: DecisionRequest) => string) => {
    if (part === 'address') return (r) => ipKeyOf(r.address);
    if (part === 'method') return (r) => r.method;
    if (part === 'path') return (r) => r.path;
    if (part === 'route') return () => rule;
    if (part === 'host') return (r) => present(r.host);
    if (part.startsWith('header:')) {
      const name = part.slice('header:'.length).toLowerCase();
      return (r) => present(r.headers[name]);
    }
    const text = part.slice('literal:'.length);
    return () => text;
  });
  return (request) => compositeKey(readers.map((read) => read(request)));
}

/** A value that is there (`=value`, even empty) apart from one that is not (`!`). */
function present(value: string | undefined): string {
  return value === undefined ? '!' : `=${value}`;
}
