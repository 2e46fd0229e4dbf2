import { sha256Base64url } from '../../core/hash.js';

/**
 * Keys up to this many UTF-16 code units are stored as they are by every store; longer ones are
 * stored as a fixed-size hash, so that a 1 MB key costs the same as a short one.
 *
 * @default 128
 * @example if (key.length > MAX_RAW_KEY_LENGTH) console.log('stored as a hash')
 */
export const MAX_RAW_KEY_LENGTH = 128;

// A hashed id is padded to MAX_RAW_KEY_LENGTH + 1 characters (43 are the base64url SHA-256): no
// key stored raw is that long, so a hashed id never equals a raw one.
const hashedPadding = '#'.repeat(MAX_RAW_KEY_LENGTH + 1 - 43);

// Keys PostgreSQL cannot hold as they are: its text holds no NUL and no lone surrogate (UTF-8
// cannot encode one). Any surrogate at all sends the key to the hash, which also keeps the "C"
// collation's order equal to JS string order. One expression: one scan of the key per take.
const unstorable = /[\0\uD800-\uDFFF]/;

/**
 * The id under which every store (memory, Redis, PostgreSQL) keeps `key`'s bucket: the key
 * itself when it has at most {@link MAX_RAW_KEY_LENGTH} characters, no NUL and no surrogate;
 * otherwise a padding no raw key can have, then the SHA-256 (base64url) of the key's UTF-8. The
 * limiter refuses keys with a lone surrogate (UTF-8 would turn it into U+FFFD), so distinct keys
 * that reach a store through a limiter get distinct ids.
 *
 * @example bucketId('ip:203.0.113.7') // 'ip:203.0.113.7'
 * @example bucketId('k'.repeat(200)).length // 129
 */
export function bucketId(key: string): string {
  if (key.length <= MAX_RAW_KEY_LENGTH && !unstorable.test(key)) return key;
  return hashedPadding + sha256Base64url(key);
}
