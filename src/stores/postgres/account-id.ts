import { SluiceError } from '../../core/errors.js';

const INT8_MIN = -(2n ** 63n);
const INT8_MAX = 2n ** 63n - 1n;
const INT4_MIN = -(2n ** 31n);
const INT4_MAX = 2n ** 31n - 1n;
const wholeNumber = /^-?[0-9]{1,19}$/;
const uuid = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/**
 * Checks a user id against the users table's id type before any statement is sent, and returns
 * its text for the statement. PostgreSQL would refuse a mistyped id too, but its message quotes
 * the value, and a user id is personal data: the error here names the option and the expected
 * type, never the value received.
 *
 * @param type one of the types `userIdType` accepts (lower case)
 * @param where the method and option, e.g. `takeForAccount userId`
 * @throws SluiceError `SLUICE_ARGUMENT`
 * @example userIdText(42, 'bigint', 'forgetAccount userId') // '42'
 */
export function userIdText(value: unknown, type: string, where: string): string {
  if (type === 'uuid') {
    if (typeof value === 'string' && uuid.test(value)) return value;
    throw wrongId(where, 'a UUID string', value);
  }
  if (type === 'text') {
    if (typeof value === 'string' && value.length > 0 && !value.includes('\0')) return value;
    if ((typeof value === 'number' && Number.isSafeInteger(value)) || typeof value === 'bigint')
      return String(value);
    throw wrongId(where, 'a non-empty string without NUL characters', value);
  }
  const small = type === 'integer' || type === 'int4';
  let id: bigint | undefined;
  if (typeof value === 'bigint') id = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) id = BigInt(value);
  else if (typeof value === 'string' && wholeNumber.test(value)) id = BigInt(value);
  if (id !== undefined && id >= (small ? INT4_MIN : INT8_MIN) && id <= (small ? INT4_MAX : INT8_MAX))
    return id.toString();
  throw wrongId(where, `a whole number within PostgreSQL ${small ? 'integer' : 'bigint'}`, value);
}

function wrongId(where: string, expected: string, value: unknown): SluiceError {
  return new SluiceError(
    'SLUICE_ARGUMENT',
    `${where} must be ${expected} (the users.type option); received ${typeName(value)}`,
  );
}

/** The type of a value, never the value: ids, keys and costs may come from a request. */
export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
