import { createHmac, randomBytes } from 'node:crypto';

/** A key as the policy stores it under a pseudonym secret: `key:v1:` and a base64url HMAC-SHA-256. */
const HMAC_KEY = /^key:v1:[A-Za-z0-9_-]{43}$/;
/** Characters of the HMAC an id keeps: 132 bits, ample to tell the offenders of a server apart. */
const KEPT = 22;

/**
 * The dashboard's id of a bucket key. With a pseudonym secret the key is already an HMAC, and
 * its id is that HMAC shortened (`key:v1:3fa9…`, the start of what `sluice explain` prints and
 * the store holds). Without one the key is the client's address or header values themselves, so
 * its id is an HMAC of it under a key drawn when the server starts (`fp:…`): stable while the
 * server runs, and not to be reversed by hashing every IPv4 address, as a plain hash could be.
 * `hmac` says whether the policy served has a secret: a key is shown as it is only when both it
 * and the key's shape say so (a caller's own key could have any shape).
 */
export function bucketIds(hmac: () => boolean): (key: string) => string {
  const secret = randomBytes(32);
  return (key) =>
    hmac() && HMAC_KEY.test(key)
      ? key.slice(0, 'key:v1:'.length + KEPT)
      : `fp:${createHmac('sha256', secret).update(key).digest('base64url').slice(0, KEPT)}`;
}
