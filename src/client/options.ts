import { parseTimerDuration, type Duration } from '../core/duration.js';
import { SluiceError, configError, describeValue } from '../core/errors.js';
import { checkOptionKeys } from '../core/options.js';
import { abortableSleep, type Sleep } from './sleep.js';

/** Why the client is waiting: the server refused the rate (429), was unavailable (503), or the network failed. */
export type WaitReason = 'rate-limited' | 'unavailable' | 'network';

/**
 * Why the client stopped retrying:
 * - `max-attempts`: `maxAttempts` requests were made;
 * - `deadline`: the next wait would end after the overall `deadline`;
 * - `retry-after-too-long`: the server asked for a wait longer than `maxDelay` (never shortened);
 * - `not-idempotent`: a POST or PATCH (or another non-idempotent method) without an Idempotency-Key;
 * - `body-too-large`: the body was a stream longer than `maxBodyBytes`, so it cannot be sent again;
 * - `aborted`: the caller's AbortSignal fired.
 */
export type GiveUpReason =
  'max-attempts' | 'deadline' | 'retry-after-too-long' | 'not-idempotent' | 'body-too-large' | 'aborted';

/**
 * Whether a failed request may have reached the server: `not-sent` when the connection was never
 * established (refused, unresolvable host), `unknown` for every other network error, because
 * the server may have received and even applied the request.
 */
export type NetworkOutcome = 'not-sent' | 'unknown';

/** Passed to `onWait` before each wait, e.g. to show "too many requests, retrying in 3 s". */
export interface WaitEvent {
  /** How many attempts were made so far (1 before the first retry). */
  attempt: number;
  /** How long the client will wait before the next attempt, in ms (jitter included). */
  delayMs: number;
  /** Why it waits. */
  reason: WaitReason;
  /** The status that caused the wait (429 or 503); undefined after a network error. */
  status: number | undefined;
  /** The server's Retry-After in ms, when it sent a usable one in the future. */
  retryAfterMs: number | undefined;
  /** After a network error: whether the request may have reached the server. */
  outcome: NetworkOutcome | undefined;
}

/** Passed to `onGiveUp` once, when the client stops although the last answer called for a retry. */
export interface GiveUpEvent {
  /** Why it stopped. */
  reason: GiveUpReason;
  /** How many attempts were made. */
  attempt: number;
  /** The last status (429 or 503); undefined after a network error or an abort. */
  status: number | undefined;
  /** The server's last Retry-After in ms, when usable: a page can say "try again in N s". */
  retryAfterMs: number | undefined;
  /** After a network error: whether the request may have reached the server. */
  outcome: NetworkOutcome | undefined;
}

/** Options of {@link withRetries} and {@link retryingFetch}. Validated once, when the wrapper is made. */
export interface RetryOptions {
  /** Requests made at most, the first one included: a whole number >= 1. @default 4 */
  maxAttempts?: number;
  /**
   * Overall time budget from the call: a wait that would end after it is not started. An
   * attempt in flight is not cut short; pass `signal: AbortSignal.timeout(ms)` for that.
   * @default '60s'
   */
  deadline?: Duration;
  /**
   * Cap on a single wait. A Retry-After above it is not shortened (that would retry sooner
   * than the server asked): the client gives up with `retry-after-too-long`. At most 2^31-1 ms,
   * the longest delay `setTimeout` honours.
   * @default '30s'
   */
  maxDelay?: Duration;
  /** First step of the exponential backoff used when there is no Retry-After. @default '500ms' */
  baseDelay?: Duration;
  /** Random extra wait on top of a Retry-After, uniform in [0, jitter), so clients do not wake together. @default '1s' */
  jitter?: Duration;
  /** Retry a 503 (its own reason, `unavailable`; never treated as a 429). @default true */
  retryUnavailable?: boolean;
  /** A stream body is buffered up to this many bytes so it can be sent again; beyond, no retry. @default 1048576 */
  maxBodyBytes?: number;
  /** The header that carries the idempotency key. @default 'Idempotency-Key' */
  idempotencyKeyHeader?: string;
  /** Called before each wait. An exception from it rejects the call. */
  onWait?: (event: WaitEvent) => void;
  /** Called once when the client stops retrying. An exception from it rejects the call. */
  onGiveUp?: (event: GiveUpEvent) => void;
  /** Source of randomness in [0, 1) for jitter and backoff; inject one in tests. @default Math.random */
  random?: () => number;
  /** Clock in ms since the Unix epoch, for the deadline and HTTP-date Retry-After. @default Date.now */
  now?: () => number;
  /** Waits `ms` or rejects when `signal` aborts; inject one in tests so nothing sleeps. @default abortableSleep */
  sleep?: Sleep;
}

/** {@link RetryOptions} with every default applied and every value checked. */
export interface ResolvedRetryOptions {
  maxAttempts: number;
  deadlineMs: number;
  maxDelayMs: number;
  baseDelayMs: number;
  jitterMs: number;
  retryUnavailable: boolean;
  maxBodyBytes: number;
  idempotencyKeyHeader: string;
  onWait: ((event: WaitEvent) => void) | undefined;
  onGiveUp: ((event: GiveUpEvent) => void) | undefined;
  random: () => number;
  now: () => number;
  sleep: Sleep;
}

/** The longest delay setTimeout honours; a longer one fires at once, which would loop. @default 2147483647 */
export const maxTimerDelayMs = 2 ** 31 - 1;

/**
 * Every default of {@link RetryOptions} in one place (ARCHITECTURE convention 3).
 *
 * @example withRetries(fetch, { ...retryDefaults, maxAttempts: 2 })
 */
export const retryDefaults = {
  maxAttempts: 4,
  deadline: '60s',
  maxDelay: '30s',
  baseDelay: '500ms',
  jitter: '1s',
  retryUnavailable: true,
  maxBodyBytes: 1_048_576,
  idempotencyKeyHeader: 'Idempotency-Key',
} as const satisfies RetryOptions;

const optionKeys = [
  'maxAttempts',
  'deadline',
  'maxDelay',
  'baseDelay',
  'jitter',
  'retryUnavailable',
  'maxBodyBytes',
  'idempotencyKeyHeader',
  'onWait',
  'onGiveUp',
  'random',
  'now',
  'sleep',
] as const;

// A header name is an HTTP token; anything else would make every request throw later.
const tokenPattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Checks retry options once and fills in the defaults.
 *
 * @throws SluiceError `SLUICE_CONFIG` naming the option and the value received
 * @example resolveRetryOptions({ maxAttempts: 3 }).maxDelayMs // 30000
 */
export function resolveRetryOptions(options: RetryOptions = {}): ResolvedRetryOptions {
  checkOptionKeys('retryingFetch', options, optionKeys);
  const o = { ...retryDefaults, ...definedOnly(options) };
  const maxDelayMs = duration('maxDelay', o.maxDelay);
  if (maxDelayMs > maxTimerDelayMs)
    throw configError('maxDelay', `at most ${maxTimerDelayMs} ms`, o.maxDelay);
  return {
    maxAttempts: wholeNumber('maxAttempts', o.maxAttempts, 1),
    deadlineMs: duration('deadline', o.deadline),
    maxDelayMs,
    baseDelayMs: duration('baseDelay', o.baseDelay),
    jitterMs: duration('jitter', o.jitter),
    retryUnavailable: boolean('retryUnavailable', o.retryUnavailable),
    maxBodyBytes: wholeNumber('maxBodyBytes', o.maxBodyBytes, 0),
    idempotencyKeyHeader: headerName('idempotencyKeyHeader', o.idempotencyKeyHeader),
    onWait: optionalFunction('onWait', o.onWait),
    onGiveUp: optionalFunction('onGiveUp', o.onGiveUp),
    random: optionalFunction('random', o.random) ?? Math.random,
    now: optionalFunction('now', o.now) ?? Date.now,
    sleep: optionalFunction('sleep', o.sleep) ?? abortableSleep,
  };
}

// `{ maxAttempts: undefined }` means "the default", as it does for every other sluice option.
function definedOnly(options: RetryOptions): RetryOptions {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
}

function duration(option: string, value: unknown): number {
  try {
    return parseTimerDuration(value, option);
  } catch (error) {
    // The brief of this module: every bad option is SLUICE_CONFIG, durations included.
    throw new SluiceError('SLUICE_CONFIG', (error as Error).message, { cause: error });
  }
}

function wholeNumber(option: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)
    throw configError(option, `a whole number >= ${min}`, value);
  return value;
}

function boolean(option: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw configError(option, 'true or false', value);
  return value;
}

function headerName(option: string, value: unknown): string {
  if (typeof value !== 'string' || !tokenPattern.test(value))
    throw configError(option, 'a header name', value);
  return value;
}

function optionalFunction<F>(option: string, value: F | undefined): F | undefined {
  if (value !== undefined && typeof value !== 'function') throw configError(option, 'a function', value);
  return value;
}

/** Reads the injected random source, refusing a value outside [0, 1) rather than waiting NaN ms. */
export function readRandom(random: () => number): number {
  const value = random();
  if (typeof value !== 'number' || !(value >= 0 && value < 1))
    throw new SluiceError(
      'SLUICE_CONFIG',
      `random() must return a number in [0, 1); returned ${describeValue(value)}`,
    );
  return value;
}

/** Reads the injected clock, refusing a reading that is not a finite number. */
export function readClock(now: () => number): number {
  const value = now();
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new SluiceError(
      'SLUICE_CLOCK',
      `now() must return a finite number of ms; returned ${describeValue(value)}`,
    );
  return value;
}
