import { SluiceError } from '../../core/errors.js';

// SQLSTATEs of a schema that is missing or older than this code: undefined table, schema,
// function or column.
const schemaStates = new Set(['42P01', '3F000', '42883', '42703']);
// query_canceled (statement_timeout), lock_not_available (lock_timeout).
const timeoutStates = new Set(['57014', '55P03']);

/**
 * Maps a driver error onto sluice's codes: a missing schema is `SLUICE_STORE_SCHEMA` (run
 * `migrate()`), a server-side timeout `SLUICE_STORE_TIMEOUT`, anything else (lost connection,
 * refused connection, server shutdown) `SLUICE_STORE_UNAVAILABLE`. The driver's error is the
 * `cause`. A limiter maps these onto the rule's failure policy; never onto a 429 (D2).
 *
 * @example throw storeError(error)
 */
export function storeError(error: unknown): SluiceError {
  if (error instanceof SluiceError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof code === 'string' && schemaStates.has(code)) {
    return new SluiceError(
      'SLUICE_STORE_SCHEMA',
      `PostgreSQL store is not prepared (${message}): run store.migrate() or apply postgresMigrations()`,
      { cause: error },
    );
  }
  if (typeof code === 'string' && timeoutStates.has(code)) {
    return new SluiceError('SLUICE_STORE_TIMEOUT', `PostgreSQL store timed out (${message})`, {
      cause: error,
    });
  }
  return new SluiceError('SLUICE_STORE_UNAVAILABLE', `PostgreSQL store unavailable (${message})`, {
    cause: error,
  });
}

/** The client-side bound: the store did not answer within `timeoutMs`. */
export function timeoutError(timeoutMs: number): SluiceError {
  return new SluiceError(
    'SLUICE_STORE_TIMEOUT',
    `PostgreSQL store did not answer within ${timeoutMs} ms (PostgresStore timeout)`,
  );
}
