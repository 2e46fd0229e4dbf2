import { SluiceError, type SluiceErrorCode } from '../../core/errors.js';

/**
 * A driver error reduced to what may be logged: the driver's code (a SQLSTATE, a Redis error
 * prefix, a Node system code such as `ECONNREFUSED`) and the error's class name. Drivers quote
 * request values in their messages (PostgreSQL: `invalid input syntax for type bigint:
 * "ann@example.com"`; Redis clients echo the command and its keys), so the text is never kept.
 * It is the `cause` of the coded error `driverError` returns.
 */
export class DriverError extends Error {
  /** The driver's code, e.g. `22P02`, `NOSCRIPT` or `ECONNRESET`; undefined when it gave none. */
  readonly code: string | undefined;

  /**
   * @param store the store as messages name it, e.g. `PostgreSQL store`
   * @param kind the class name of the driver's error (or the type of a thrown non-error)
   */
  constructor(store: string, code: string | undefined, kind: string) {
    super(code === undefined ? `${store} driver error (${kind})` : `${store} driver error ${code}`);
    this.name = 'DriverError';
    this.code = code;
  }
}

/** A coded error made from a driver's error; `driverCode` is the driver's code, if any. */
export type DriverFailure = SluiceError & { readonly driverCode?: string };

/** What a driver code means, as a store classifies it for `driverError`. */
export interface DriverErrorClass {
  /** The coded error: `SLUICE_ARGUMENT` for errors the call's input caused, never a store failure. */
  readonly code: SluiceErrorCode;
  /** What to say after the store's name, e.g. `timed out`; no request value. */
  readonly says: string;
  /** What to do about it, said after the code, e.g. `run store.migrate()`. */
  readonly hint?: string;
}

/** How one store reads its driver's errors: its name, its driver's codes and what they mean. */
export interface DriverErrorRules {
  /** The store as messages name it, e.g. `PostgreSQL store`. */
  readonly store: string;
  /** What messages call the driver's code, e.g. `SQLSTATE`. */
  readonly codeName: string;
  /**
   * A second property that carries the code too, under the name the store documents (the
   * PostgreSQL store's `sqlState`).
   * @default undefined — `driverCode` only
   */
  readonly codeProperty?: string;
  /**
   * The driver's code of an error, when the driver's own `code` property is not all of it (a
   * Redis reply error carries its code as the first word of its message).
   * @default the error's `code` property, when it reads as a code
   */
  codeOf?(error: unknown): string | undefined;
  /** What a code means; undefined: the store is unavailable (`SLUICE_STORE_UNAVAILABLE`). */
  classify(code: string): DriverErrorClass | undefined;
}

// A code is short and made of capitals, digits and underscores: anything else is not a code
// the driver set (and might be text quoting a request).
const codePattern = /^[A-Z0-9_]{1,40}$/;

/**
 * The one mapping of a driver's error onto sluice's coded errors, shared by the stores. A
 * SluiceError passes through unchanged. Otherwise the driver's code decides (by the store's
 * `rules`): input errors are `SLUICE_ARGUMENT`, so that a failure policy never admits what the
 * input broke; a missing schema `SLUICE_STORE_SCHEMA`; a timeout `SLUICE_STORE_TIMEOUT`;
 * anything else, or no code at all, `SLUICE_STORE_UNAVAILABLE`. The code is kept (in the
 * message, as `driverCode` and as the store's `codeProperty`); the driver's text is dropped and
 * the `cause` is a {@link DriverError} holding the code and class name only.
 *
 * @example
 * client.query(text, values, name).catch((error: unknown) => { throw driverError(error, postgresErrors) })
 */
export function driverError(error: unknown, rules: DriverErrorRules): DriverFailure {
  if (error instanceof SluiceError) return error;
  const raw = rules.codeOf === undefined ? (error as { code?: unknown } | null)?.code : rules.codeOf(error);
  const code = typeof raw === 'string' && codePattern.test(raw) ? raw : undefined;
  const kind = error instanceof Error ? error.constructor.name : typeof error;
  const cause = new DriverError(rules.store, code, kind);
  const meaning = code === undefined ? undefined : rules.classify(code);
  const said = code === undefined ? '' : ` (${rules.codeName} ${code})`;
  const failure =
    meaning === undefined
      ? new SluiceError('SLUICE_STORE_UNAVAILABLE', `${rules.store} unavailable${said}`, { cause })
      : new SluiceError(
          meaning.code,
          `${rules.store} ${meaning.says}${said}${meaning.hint === undefined ? '' : `: ${meaning.hint}`}`,
          { cause },
        );
  if (code !== undefined) {
    Object.defineProperty(failure, 'driverCode', { value: code, enumerable: true });
    if (rules.codeProperty !== undefined)
      Object.defineProperty(failure, rules.codeProperty, { value: code, enumerable: true });
  }
  return failure;
}

/** Words for the Node system codes of a connection that could not be made or was lost. */
const connectionWords: Readonly<Record<string, { says: string; hint: string }>> = {
  ECONNREFUSED: {
    says: 'unavailable: connection refused',
    hint: 'nothing listens at the host and port of the connection settings; is the server running there?',
  },
  ENOTFOUND: {
    says: 'unavailable: host name not found',
    hint: 'check the host of the connection settings',
  },
  EAI_AGAIN: {
    says: 'unavailable: host name not resolved',
    hint: 'the name server did not answer; check the host of the connection settings',
  },
  ETIMEDOUT: {
    says: 'unavailable: connection timed out',
    hint: 'the host did not answer; check the host, the port and the firewall between',
  },
  EHOSTUNREACH: {
    says: 'unavailable: host unreachable',
    hint: 'no route to the host of the connection settings',
  },
  ECONNRESET: { says: 'unavailable: connection reset', hint: 'the server or a proxy between closed it' },
};

/**
 * What a Node system code of a failed or lost connection means, in words, for a store's
 * `classify` (`SLUICE_STORE_UNAVAILABLE` with a reason and what to check); undefined for any
 * other code. Never names the address: it may come from a URL that holds a password.
 */
export function connectionFailure(code: string): DriverErrorClass | undefined {
  const words = Object.hasOwn(connectionWords, code) ? connectionWords[code] : undefined;
  return words === undefined ? undefined : { code: 'SLUICE_STORE_UNAVAILABLE', ...words };
}
