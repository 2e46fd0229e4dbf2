/**
 * Every error sluice throws is a {@link SluiceError} with a stable `code` from this registry.
 * `docs/errors.md` documents each code; `test/core/errors.test.ts` keeps the two in step.
 *
 * `status` is the HTTP status an adapter answers with when the error escapes a request:
 * configuration and developer errors are 500 (never a 429, never a pass), bad client input 400,
 * a refused credential 401, an unavailable store 503.
 */
export const errorCodes = {
  /** An option is missing, of the wrong type or out of range. Thrown at construction. */
  SLUICE_CONFIG: { status: 500, title: 'Invalid configuration' },
  /** A duration string or number could not be read (`"10x"`, `-1`, `NaN`). */
  SLUICE_DURATION: { status: 500, title: 'Invalid duration' },
  /** The key step produced no key (undefined, null or empty): a developer error, never a pass. */
  SLUICE_KEY_MISSING: { status: 500, title: 'Rate-limit key missing' },
  /** A key built from client input is not a usable string (an object, an array, a number). */
  SLUICE_KEY_INVALID: { status: 400, title: 'Invalid request' },
  /** A per-call argument is out of range: a negative or fractional cost, a bad per-key limit. */
  SLUICE_ARGUMENT: { status: 500, title: 'Invalid argument' },
  /** The injected clock returned something that is not a finite number of milliseconds. */
  SLUICE_CLOCK: { status: 500, title: 'Invalid clock reading' },
  /** The store could not be reached or answered with an error. */
  SLUICE_STORE_UNAVAILABLE: { status: 503, title: 'Rate-limit store unavailable' },
  /** The store did not answer within the rule's timeout. */
  SLUICE_STORE_TIMEOUT: { status: 503, title: 'Rate-limit store timed out' },
  /**
   * More decisions are waiting for the store than it may have outstanding: load, not a failure.
   * Never admitted under `failure: 'open'`; the insurance limiter decides when there is one,
   * otherwise the request gets a 503 with a Retry-After.
   */
  SLUICE_STORE_OVERLOADED: { status: 503, title: 'Rate-limit store overloaded' },
  /**
   * A `takeOrWait` call found as many calls waiting as its limiter allows (`maxWaiters`, or
   * `maxWaitersPerKey` for its key): refused at once, nothing reserved.
   */
  SLUICE_WAIT_QUEUE_FULL: { status: 503, title: 'Too many calls waiting' },
  /** The store's schema or scripts are missing (for PostgreSQL: run `migrate()`). */
  SLUICE_STORE_SCHEMA: { status: 503, title: 'Rate-limit store not prepared' },
  /** An offered API key or credential was refused; there is no fallback to a weaker identity. */
  SLUICE_UNAUTHORIZED: { status: 401, title: 'Unauthorized' },
} as const;

/** A stable error code; see `docs/errors.md`. */
export type SluiceErrorCode = keyof typeof errorCodes;

/**
 * The one error class sluice throws. Match on `code`, not on the message.
 *
 * @example
 * try { tokenBucket({ limit: 0, period: '1m' }) }
 * catch (e) { if (e instanceof SluiceError && e.code === 'SLUICE_CONFIG') console.error(e.message) }
 */
// A brand registered in the global symbol registry: the ESM and the CommonJS builds of sluice
// (both loaded in one mixed application) define two SluiceError classes, so `instanceof` alone
// would fail across them; the brand is the same symbol in both.
const sluiceErrorBrand = Symbol.for('sluice.error');

export class SluiceError extends Error {
  /** Stable machine-readable code. */
  readonly code: SluiceErrorCode;
  /** HTTP status an adapter answers with when this error escapes a request. */
  readonly status: number;

  /**
   * @param options.status overrides the registry's status (a rule may fail closed with 500
   * instead of 503).
   */
  constructor(code: SluiceErrorCode, message: string, options?: { cause?: unknown; status?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SluiceError';
    this.code = code;
    this.status = options?.status ?? errorCodes[code].status;
    Object.defineProperty(this, sluiceErrorBrand, { value: true });
  }

  /** True for a SluiceError from any copy of sluice (ESM or CommonJS build, another version). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[sluiceErrorBrand] === true
    );
  }
}

/** True when `error` is a {@link SluiceError}, optionally with the given code. */
export function isSluiceError(error: unknown, code?: SluiceErrorCode): error is SluiceError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as Record<symbol, unknown>)[sluiceErrorBrand] === true &&
    (code === undefined || (error as SluiceError).code === code)
  );
}

/**
 * Describes a received value for an error message by its type only ("a string", "a number",
 * "null"): never the value itself, since options and arguments are often built from data, and an
 * error message or a log line must not carry such a value.
 */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'undefined':
      return 'undefined';
    case 'object':
      return 'an object';
    default:
      return `a ${typeof value}`;
  }
}

/** SLUICE_CONFIG naming the option, what it must be, and the type received (never the value). */
export function configError(option: string, expected: string, received: unknown): SluiceError {
  return new SluiceError(
    'SLUICE_CONFIG',
    `${option} must be ${expected}; received ${describeValue(received)}`,
  );
}

/**
 * SLUICE_CONFIG naming the option and what it must be. The value received is left out on purpose:
 * options are often built from data (a per-tenant window, a zone from a profile), and an error
 * message or log line must never carry such a value.
 */
export function optionError(option: string, expected: string): SluiceError {
  return new SluiceError('SLUICE_CONFIG', `${option} must be ${expected}`);
}
