import { SluiceError } from '../core/errors.js';

/**
 * Longest login accepted, in UTF-16 code units, counted before normalization so that the work is
 * bounded (NFKC can expand a character up to 18 times). E-mail addresses stop at 254 characters.
 */
export const MAX_LOGIN_LENGTH = 320;

/**
 * Normalizes a login, nick or e-mail taken from a request body into a bucket key.
 *
 * A key by login holds only if it is built exactly as the application looks the user up:
 * otherwise `Ann`, `ann` and ` ann ` are one account for the login form but three buckets with
 * three counters, and the limit falls to one keystroke. The steps, and why:
 * - Unicode NFKC: fullwidth `Ａｎｎ`, the ligature `ﬁ` and a decomposed `é` (e + U+0301) each
 *   fold to the plain text a user means and a database compares. (Applied again after lower
 *   casing, which can un-normalize a few characters, so the result is stable: f(f(x)) = f(x).)
 * - lower case (`toLowerCase`, locale-independent): logins are case-insensitive in practice.
 * - trim: pasted logins carry spaces, and NFKC turns a no-break or ideographic space into one.
 * Nothing else is removed: a zero-width space gives a different key, but also a login the
 * application does not find, so it opens no new attempts at a real account. Use the same
 * function in your user lookup; if your application folds differently (e.g. `ß` → `ss`), key by
 * your own function instead.
 *
 * Throws SLUICE_KEY_INVALID (400) before anything is consumed when the value is not a string
 * (an object, an array, a number, null, undefined: `[object Object]` would make every such
 * request share one bucket), is longer than {@link MAX_LOGIN_LENGTH}, or is empty after
 * normalization. The message never repeats the value.
 *
 * @default no options: the steps above are fixed
 * @example
 * normalizeLogin('  Ａnn@Example.COM '); // 'ann@example.com'
 * normalizeLogin({ $ne: '' }); // throws SluiceError SLUICE_KEY_INVALID (status 400)
 */
export function normalizeLogin(value: unknown): string {
  if (typeof value !== 'string') {
    const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    throw new SluiceError('SLUICE_KEY_INVALID', `login must be a string; received ${kind}`);
  }
  if (value.length > MAX_LOGIN_LENGTH)
    throw new SluiceError(
      'SLUICE_KEY_INVALID',
      `login must be at most ${MAX_LOGIN_LENGTH} characters; received ${value.length}`,
    );
  const normalized = value.normalize('NFKC').toLowerCase().normalize('NFKC').trim();
  if (normalized.length === 0) throw new SluiceError('SLUICE_KEY_INVALID', 'login is empty after trimming');
  return normalized;
}
