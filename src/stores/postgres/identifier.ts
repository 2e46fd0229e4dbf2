import { configError } from '../../core/errors.js';

/**
 * SQL identifiers sluice accepts for schema, table and column names: a letter or underscore, then
 * letters, digits, underscores or `$`, at most 63 bytes (PostgreSQL's limit). Anything else is a
 * configuration error, so an option can never inject SQL.
 */
const identifierPattern = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/**
 * Checks `value` as a SQL identifier and returns it double-quoted (case preserved).
 *
 * @param option the option's name, for the error message
 * @throws SluiceError `SLUICE_CONFIG` naming the option and the value received
 * @example quoteIdentifier('sluice', 'schema') // '"sluice"'
 */
export function quoteIdentifier(value: unknown, option: string): string {
  if (typeof value !== 'string' || !identifierPattern.test(value)) {
    throw configError(
      option,
      'a SQL identifier (a letter or "_", then letters, digits, "_" or "$", at most 63 characters)',
      value,
    );
  }
  return `"${value}"`;
}

/** Column types accepted for the users' id: a closed list, so the type is never free text. */
const userIdTypes = new Set(['bigint', 'integer', 'int8', 'int4', 'uuid', 'text']);

/**
 * Checks the SQL type of the application's user id.
 *
 * @throws SluiceError `SLUICE_CONFIG` unless it is one of bigint, integer, int8, int4, uuid, text
 * @example userIdType('uuid') // 'uuid'
 */
export function userIdType(value: unknown, option: string): string {
  if (typeof value !== 'string' || !userIdTypes.has(value.toLowerCase())) {
    throw configError(option, `one of ${[...userIdTypes].join(', ')}`, value);
  }
  return value.toLowerCase();
}
