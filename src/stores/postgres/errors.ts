import { SluiceError } from '../../core/errors.js';
import { deadlineError } from '../shared/deadline.js';
import {
  connectionFailure,
  driverError,
  type DriverErrorClass,
  type DriverErrorRules,
  type DriverFailure,
} from '../shared/driver-error.js';

/** A SluiceError from the PostgreSQL store; `sqlState` (and `driverCode`) is the SQLSTATE, if any. */
export type PostgresStoreError = DriverFailure & { readonly sqlState?: string };

// SQLSTATEs of a schema that is missing or older than this code: undefined table, schema,
// function or column.
const schemaStates = new Set(['42P01', '3F000', '42883', '42703']);
// query_canceled (statement_timeout, or the store's own deadline), lock_not_available (lock_timeout).
const timeoutStates = new Set(['57014', '55P03']);
// Connecting worked, but the settings name a database, user or privilege the server refuses: said
// in words, since a bare SQLSTATE sends the reader to the manual for what is a setup mistake.
const setupStates: Readonly<Record<string, DriverErrorClass>> = {
  '3D000': {
    code: 'SLUICE_STORE_UNAVAILABLE',
    says: 'unavailable: the database does not exist',
    hint: 'create it, or correct the database name of the connection settings',
  },
  '28P01': {
    code: 'SLUICE_STORE_UNAVAILABLE',
    says: 'unavailable: password authentication failed',
    hint: 'check the user and password of the connection settings',
  },
  '28000': {
    code: 'SLUICE_STORE_UNAVAILABLE',
    says: 'unavailable: the server refused this user (invalid authorization)',
    hint: "check the user of the connection settings and the server's pg_hba.conf",
  },
  '42501': {
    code: 'SLUICE_STORE_UNAVAILABLE',
    says: 'unavailable: permission denied',
    hint: "the user lacks a privilege on sluice's schema or tables (to create them in migrate(), or to use them)",
  },
};

/**
 * How the PostgreSQL store reads driver errors (pg and postgres.js both carry the SQLSTATE, or
 * a Node network code, as `code`): a missing schema is `SLUICE_STORE_SCHEMA` (run `migrate()`),
 * a server-side timeout `SLUICE_STORE_TIMEOUT`, a data exception (SQLSTATE class 22: a value out
 * of range or of the wrong form) `SLUICE_ARGUMENT`, since the input caused it and a failure
 * policy must not admit it; anything else (lost or refused connection, server shutdown)
 * `SLUICE_STORE_UNAVAILABLE`, in words for a missing database, refused credentials, a missing
 * privilege and a connection that could not be made.
 */
export const postgresErrors: DriverErrorRules = {
  store: 'PostgreSQL store',
  codeName: 'SQLSTATE',
  codeProperty: 'sqlState',
  classify(code) {
    const setup = Object.hasOwn(setupStates, code) ? setupStates[code] : undefined;
    if (setup !== undefined) return setup;
    if (schemaStates.has(code)) {
      return {
        code: 'SLUICE_STORE_SCHEMA',
        says: 'is not prepared',
        hint: 'a table, function or schema is missing; run store.migrate() or apply postgresMigrations()',
      };
    }
    if (timeoutStates.has(code)) return { code: 'SLUICE_STORE_TIMEOUT', says: 'timed out' };
    if (code.startsWith('22')) {
      return {
        code: 'SLUICE_ARGUMENT',
        says: 'refused a value of this call',
        hint: 'out of range or of the wrong form',
      };
    }
    return connectionFailure(code);
  },
};

/** The SQLSTATE of a column that does not exist. */
const UNDEFINED_COLUMN = '42703';

/**
 * {@link postgresErrors} for the statements of a rule with a lockout: a missing column there is
 * the lockout's, added by the migration `007_lockouts` (or, for a token bucket, a tier column of
 * `009_token_bucket_tiers`), so the error says so.
 */
const lockoutErrors: DriverErrorRules = {
  ...postgresErrors,
  classify(code) {
    if (code !== UNDEFINED_COLUMN) return postgresErrors.classify(code);
    return {
      code: 'SLUICE_STORE_SCHEMA',
      says: 'is not prepared for lockouts',
      hint: "the columns of a rule with a block option (blocked_until, block_ms) are missing, or a token bucket's tier columns (tier_rate, tier_tolerance); run store.migrate() or apply postgresMigrations() to add them (migrations 007_lockouts, 009_token_bucket_tiers)",
    };
  },
};

/** A driver error of a statement deciding a rule with a lockout (see {@link lockoutErrors}). */
export function lockoutStoreError(error: unknown): PostgresStoreError {
  return driverError(error, lockoutErrors);
}

/** Rethrows a driver error as {@link lockoutStoreError}. */
export function rethrowLockoutMapped(error: unknown): never {
  throw lockoutStoreError(error);
}

/** A driver error as a coded error of the PostgreSQL store (see {@link postgresErrors}). */
export function storeError(error: unknown): PostgresStoreError {
  return driverError(error, postgresErrors);
}

/** Rethrows a driver error as {@link storeError}: for `promise.catch(rethrowMapped)`. */
export function rethrowMapped(error: unknown): never {
  throw storeError(error);
}

/** What the store's timeouts name: the store and the option that bounds it. */
export const TIMEOUT_SUBJECT = 'the PostgreSQL store (PostgresStore timeout)';

/** The client-side bound: the store did not answer within `timeoutMs`. */
export function timeoutError(timeoutMs: number): SluiceError {
  return deadlineError(TIMEOUT_SUBJECT, timeoutMs);
}

/** More statements are outstanding at the driver than `maxOutstanding` allows: load, not failure. */
export function overloadedError(maxOutstanding: number): SluiceError {
  return new SluiceError(
    'SLUICE_STORE_OVERLOADED',
    `PostgreSQL store has ${maxOutstanding} statements outstanding at the driver (PostgresStore maxOutstanding); not sending more until some settle`,
  );
}
