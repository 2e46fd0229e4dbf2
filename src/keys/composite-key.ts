import { SluiceError } from '../core/errors.js';

/**
 * Joins the parts of a tuple, e.g. (IP, nick), into one bucket key that no other tuple
 * produces. Each part is written as `<length>:<part>` and the parts are joined with `|`: because the
 * length says where a part ends, no choice of characters inside a part (`|`, `:`, digits) can
 * shift a boundary, and tuples of different lengths differ too. A plain separator would not do:
 * ("a|b", "c") and ("a", "b|c") would share "a|b|c".
 *
 * Every part must be a non-empty string, checked before anything is consumed: undefined, null
 * or "" is a developer error (SLUICE_KEY_MISSING, 500: the key step produced nothing, never a
 * 429 and never a pass); any other type is bad input (SLUICE_KEY_INVALID, 400). Messages name
 * the position, never the value (a key part may be personal data). Normalize user input first ({@link normalizeLogin}), and
 * hash the result with a pseudonym ring when the store must not hold raw IPs or nicks.
 *
 * @default no options
 * @example
 * compositeKey([ipKey(address), normalizeLogin(body.login)]); // '11:203.0.113.7|3:ann'
 * ring.current(compositeKey([ipKey(address), normalizeLogin(body.login)])); // 'login:v1:…'
 */
export function compositeKey(parts: readonly string[]): string {
  if (!Array.isArray(parts))
    throw new SluiceError('SLUICE_KEY_INVALID', 'compositeKey needs an array of parts');
  if (parts.length === 0) throw new SluiceError('SLUICE_KEY_MISSING', 'compositeKey received no parts');
  let key = '';
  for (let i = 0; i < parts.length; i++) {
    const part: unknown = parts[i];
    if (typeof part !== 'string') {
      if (part === undefined || part === null)
        throw new SluiceError('SLUICE_KEY_MISSING', `compositeKey part ${i} is ${String(part)}`);
      throw new SluiceError('SLUICE_KEY_INVALID', `compositeKey part ${i} must be a string`);
    }
    if (part.length === 0)
      throw new SluiceError('SLUICE_KEY_MISSING', `compositeKey part ${i} is an empty string`);
    key += i === 0 ? `${part.length}:${part}` : `|${part.length}:${part}`;
  }
  return key;
}
