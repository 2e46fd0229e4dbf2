import { createHash } from 'node:crypto';

/** Keys up to this many characters are stored as they are (same bound as the memory store). */
export const MAX_RAW_BUCKET_LENGTH = 128;
// A hashed key is padded to 129+ characters: no raw key is that long, so the two never collide.
const hashedPadding = '#'.repeat(MAX_RAW_BUCKET_LENGTH + 1 - 43);
// PostgreSQL text holds neither NUL nor lone surrogates (UTF-8 cannot encode them); any
// surrogate at all sends the key to the hash, which keeps "C" order equal to JS string order.
const unstorable = /[\uD800-\uDFFF]/;

/**
 * The bucket column's value for a key: the key itself when short and storable as PostgreSQL
 * text, otherwise a padded SHA-256, so that a 1 MB key costs a 129-byte row and any JS string is
 * a safe key.
 *
 * @example bucketId('account:v1:3f…') // 'account:v1:3f…'
 */
export function bucketId(key: string): string {
  if (key.length <= MAX_RAW_BUCKET_LENGTH && !key.includes('\0') && !unstorable.test(key)) return key;
  return hashedPadding + createHash('sha256').update(key).digest('base64url');
}
