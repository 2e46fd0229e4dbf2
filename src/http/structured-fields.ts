/**
 * A small serializer for RFC 9651 structured fields: Lists of Items with Parameters, which is all
 * the IETF RateLimit fields need. It writes; it does not parse.
 */

/** A bare item: an integer, a string, a token or a boolean. */
export type BareItem = number | string | boolean | { token: string };

/** A List member: a bare item with ordered parameters. */
export interface ListMember {
  value: BareItem;
  params?: readonly (readonly [key: string, value: BareItem])[];
}

const MAX_INTEGER = 999_999_999_999_999;
const keyPattern = /^[a-z*][a-z0-9_\-.*]*$/;
const tokenPattern = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*$/;

/** Serializes a List (RFC 9651 §4.1.1), e.g. `"burst";q=100;w=60, "daily";q=1000;w=86400`. */
export function serializeList(members: readonly ListMember[]): string {
  let out = '';
  for (let i = 0; i < members.length; i++) {
    if (i > 0) out += ', ';
    const member = members[i] as ListMember;
    out += serializeBareItem(member.value);
    if (member.params !== undefined) {
      for (const [key, value] of member.params) {
        if (!keyPattern.test(key)) throw new TypeError(`invalid structured-field key ${JSON.stringify(key)}`);
        out += value === true ? `;${key}` : `;${key}=${serializeBareItem(value)}`;
      }
    }
  }
  return out;
}

/** Serializes one bare item (RFC 9651 §4.1.3). */
export function serializeBareItem(value: BareItem): string {
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || Math.abs(value) > MAX_INTEGER) {
      throw new TypeError(`structured-field integers are whole numbers up to 15 digits; received ${value}`);
    }
    return String(value);
  }
  if (typeof value === 'boolean') return value ? '?1' : '?0';
  if (typeof value === 'string') {
    let out = '"';
    for (let i = 0; i < value.length; i++) {
      const code = value.charCodeAt(i);
      if (code < 0x20 || code > 0x7e)
        throw new TypeError('structured-field strings hold printable ASCII only');
      if (code === 0x22 || code === 0x5c) out += '\\';
      out += value[i];
    }
    return `${out}"`;
  }
  if (!tokenPattern.test(value.token))
    throw new TypeError(`invalid structured-field token ${JSON.stringify(value.token)}`);
  return value.token;
}
