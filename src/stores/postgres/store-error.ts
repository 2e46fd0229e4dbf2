import { SluiceError, type SluiceErrorCode } from '../../core/errors.js';

// SQLSTATEs of a schema that is missing or older than this code: undefined table, schema,
// function or column.
const schemaStates = new Set(['42P01', '3F000', '42883', '42703']);
// query_canceled (statement_timeout, or the store's own deadline), lock_not_available (lock_timeout).
const timeoutStates = new Set(['57014', '55P03']);

/**
 * A driver error reduced to what may be logged: its SQLSTATE (or the Node error code of a
 * network failure) and its class name. PostgreSQL's message quotes the offending parameter
 * (`invalid input syntax for type bigint: "ann@example.com"`), so the text is never kept.
 */
export class PostgresDriverError extends Error {
  /** The SQLSTATE (e.g. `22P02`) or the Node network error code (e.g. `ECONNREFUSED`), if any. */
  readonly code: string | undefined;

  constructor(code: string | undefined, kind: string) {
    super(code === undefined ? `PostgreSQL driver error (${kind})` : `PostgreSQL error ${code}`);
    this.name = 'PostgresDriverError';
    this.code = code;
  }
}

/** A SluiceError from the PostgreSQL store; `sqlState` is the driver's code, if any. */
export type PostgresStoreError = SluiceError & { readonly sqlState?: string };

/**
 * Maps a driver error onto sluice's codes: a missing schema is `SLUICE_STORE_SCHEMA` (run
 * `migrate()`), a server-side timeout `SLUICE_STORE_TIMEOUT`, a data exception (SQLSTATE class
 * 22: a value out of range or of the wrong form) `SLUICE_ARGUMENT`, since the input caused it
 * and a failure policy must not admit it; anything else (lost connection, refused connection,
 * server shutdown) `SLUICE_STORE_UNAVAILABLE`. The SQLSTATE is kept as `sqlState` and in the
 * message; the driver's own text is dropped, and the `cause` is a {@link PostgresDriverError}
 * that carries the code only, because PostgreSQL's messages quote request values.
 *
 * @example throw storeError(error)
 */
export function storeError(error: unknown): SluiceError {
  if (error instanceof SluiceError) return error;
  const raw = (error as { code?: unknown } | null)?.code;
  const code = typeof raw === 'string' && /^[A-Z0-9_]{1,40}$/.test(raw) ? raw : undefined;
  const kind = error instanceof Error ? error.constructor.name : typeof error;
  const cause = new PostgresDriverError(code, kind);
  const said = code === undefined ? '' : ` (SQLSTATE ${code})`;
  if (code !== undefined && schemaStates.has(code)) {
    return withState(
      'SLUICE_STORE_SCHEMA',
      `PostgreSQL store is not prepared${said}: a table, function or schema is missing; run store.migrate() or apply postgresMigrations()`,
      cause,
    );
  }
  if (code !== undefined && timeoutStates.has(code))
    return withState('SLUICE_STORE_TIMEOUT', `PostgreSQL store timed out${said}`, cause);
  if (code !== undefined && code.startsWith('22')) {
    return withState(
      'SLUICE_ARGUMENT',
      `PostgreSQL refused a value of this call${said}: out of range or of the wrong form`,
      cause,
    );
  }
  return withState('SLUICE_STORE_UNAVAILABLE', `PostgreSQL store unavailable${said}`, cause);
}

function withState(code: SluiceErrorCode, message: string, cause: PostgresDriverError): SluiceError {
  const error = new SluiceError(code, message, { cause });
  if (cause.code !== undefined)
    Object.defineProperty(error, 'sqlState', { value: cause.code, enumerable: true });
  return error;
}

/** The client-side bound: the store did not answer within `timeoutMs`. */
export function timeoutError(timeoutMs: number): SluiceError {
  return new SluiceError(
    'SLUICE_STORE_TIMEOUT',
    `PostgreSQL store did not answer within ${timeoutMs} ms (PostgresStore timeout)`,
  );
}

/** More statements are outstanding at the driver than `maxOutstanding` allows: load, not failure. */
export function overloadedError(maxOutstanding: number): SluiceError {
  return new SluiceError(
    'SLUICE_STORE_OVERLOADED',
    `PostgreSQL store has ${maxOutstanding} statements outstanding at the driver (PostgresStore maxOutstanding); not sending more until some settle`,
  );
}
